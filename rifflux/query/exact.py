"""The exact float32 vectors of a search's candidates, read back from the store: each by
its vector's own row where the matrix knows it (``VectorIndex.sources``, from the load:
a look-up by row id, about 50 rows in 1.5 ms at a million chunks, read in the thread
that scanned the matrix: ``by_rows``), else through the chunk's text
(``MatrixStore.exact_vectors``, on the event loop: ``through_texts``).

A row read by its id is taken only when it is still the chunk's vector: its compact row
must be the one the matrix holds (``VectorIndex.holds``). A vector deleted since the load
is not there, and its row id may have been taken by another text's vector meanwhile;
either way the chunk is read through its text instead, which finds its vector as the
store holds it now, or leaves the chunk out when it has none (deleted, not re-embedded
yet): the answer is the same as a read through the texts alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from ..core.vectors import F32, I64, VectorIndex
    from ..store.protocols import MatrixStore


class ByRows(NamedTuple):
    """Candidates' exact vectors read by their rows, and the candidates left to read
    through their texts."""

    ids: I64
    vectors: F32
    rest: I64


def by_rows(matrix: VectorIndex, store: MatrixStore, dim: int, candidates: I64) -> ByRows:
    """The float32 vectors of these chunks read by their vectors' rows (blocking: in the
    scan's worker thread), those whose row the matrix does not know, or whose row holds
    another vector now, left in ``rest``."""
    sources = matrix.sources(candidates)
    known = sources >= 0
    rest = candidates[~known]
    if not known.any():
        return ByRows(np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32), rest)
    chunks, wanted = candidates[known], sources[known]
    rows, stored = store.vectors_at(dim, np.unique(wanted))
    at = np.minimum(np.searchsorted(rows, wanted), max(len(rows) - 1, 0))
    there = rows[at] == wanted if len(rows) else np.zeros(len(wanted), dtype=np.bool_)
    chunks, read = chunks[there], stored[at[there]]
    same = matrix.holds(chunks, read)
    return ByRows(chunks[same], read[same],
                  np.concatenate([rest, candidates[known][~there], chunks[~same]]))


async def through_texts(store: MatrixStore, model: str, dim: int,
                        read: ByRows) -> tuple[I64, F32]:
    """Every candidate's vector of ``model`` (those that still have one), in no
    particular order: those read by their rows, and the rest through their texts."""
    if not len(read.rest):
        return read.ids, read.vectors
    found, exact = await store.exact_vectors(model, dim, read.rest)
    return np.concatenate([read.ids, found]), np.concatenate([read.vectors, exact])
