"""The exact float32 vectors of a search's candidates, read back from the store: each by
its vector's own row where the matrix knows it (``VectorIndex.sources``, from the load:
a look-up by row id, 250 rows in about 2 ms at a million chunks), else through the
chunk's text (``MatrixStore.exact_vectors``: 8-11 ms for the same rows).

A row read by its id is taken only when it is still the chunk's vector: its compact row
must be the one the matrix holds (``VectorIndex.holds``). A vector deleted since the load
is not there, and its row id may have been taken by another text's vector meanwhile;
either way the chunk is read through its text instead, which finds its vector as the
store holds it now, or leaves the chunk out when it has none (deleted, not re-embedded
yet): the answer is the same as a read through the texts alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..core.vectors import F32, I64, VectorIndex
    from ..store.protocols import MatrixStore


async def exact_vectors(matrix: VectorIndex, store: MatrixStore, model: str, dim: int,
                        candidates: I64) -> tuple[I64, F32]:
    """The float32 vectors of ``model`` of these chunks (those that still have one), in
    no particular order: as ``store.exact_vectors`` reads them, most by their rows."""
    sources = matrix.sources(candidates)
    known = sources >= 0
    ids: list[I64] = []
    vectors: list[F32] = []
    rest = candidates[~known]
    if known.any():
        chunks, wanted = candidates[known], sources[known]
        rows, stored = await store.vectors_at(dim, np.unique(wanted))
        at = np.minimum(np.searchsorted(rows, wanted), max(len(rows) - 1, 0))
        there = rows[at] == wanted if len(rows) else np.zeros(len(wanted), dtype=np.bool_)
        chunks, read = chunks[there], stored[at[there]]
        same = matrix.holds(chunks, read)
        ids.append(chunks[same])
        vectors.append(read[same])
        rest = np.concatenate([rest, candidates[known][~there], chunks[~same]])
    if len(rest):
        found, exact = await store.exact_vectors(model, dim, rest)
        ids.append(found)
        vectors.append(exact)
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    return np.concatenate(ids), np.concatenate(vectors)
