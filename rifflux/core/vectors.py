"""The in-memory vector matrix, stored compactly, and the candidates of a search in it.

A row is a vector quantised to int8 with a float32 scale of its own (its largest
component maps to ±127): 388 bytes a row at 384 dimensions where float32 took 1,536,
0.4 GB at a million chunks. A search scans every row with an int8 dot product and keeps
the best candidates, a quarter more than it was asked for (``candidates``); the caller
reads those rows' float32 vectors back from the database and ``ranking.rank`` orders them
exactly, so the cosines and the order are an exact search's whenever the exact best rows
are among the candidates (on the model's vectors they always were: see ``_MARGIN``).

The scan is numkong's (the SIMD kernels of simsimd under their new name): NumPy has no
fast int8 product. Measured at 1,000,000 x 384 on this project's 2-core machine (AVX-512
VNNI), one query, top 200: NumPy float32 matrix-vector 36-68 ms (int8: ~800 ms);
numkong int8 ``cdist`` 13.7 ms, 16 ms with the scales applied and the top 200 selected;
simsimd the same kernel, 12-16 ms; faiss ``IndexScalarQuantizer`` QT_8bit 17-25 ms
(but its removal compacts the whole matrix, 26 ms for 100 ids at every commit, and its
per-dimension ranges are trained once on what exists then); usearch's exact int8 search
34 ms. float16 halves the memory saving, and no library here scanned it faster than
int8. numkong is a kernel library: the rows, their ids and the swap-on-remove stay ours,
so an upsert or a removal costs what it changes. Rows of a filter (``mask``) are scanned
alone when they are few (a file or a folder: 0.3 ms for 5,000 rows).

The rows, their ids and their changes are ``core.rows``'; this module scans them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from .codes import F32 as F32  # (the types the modules around the matrix import here)
from .codes import quantise
from .int8_scan import dots
from .ranking import I64 as I64
from .ranking import needed, rank
from .rows import Rows
from .selection import GroupRanks as GroupRanks
from .selection import first_by_group, top
from .shared import changes
from .steps import OFF_CLOCK, Clock

#: (ids, their float32 vectors): the exact vectors of the rows of these ids that still
#: exist, in any order (``VectorIndex.top_k``'s source of exact vectors).
Exact = Callable[[I64], tuple[I64, F32]]
#: A filter's rows are gathered and scanned alone when they are at most this share.
_GATHER = 1 / 8
#: Candidates beyond the best ones asked for (a quarter more, at least this many), so
#: that quantisation, which moves a cosine by about 1e-3, does not push an exact top row
#: out. Measured on the model's vectors (Cranfield's 225 queries, 200 of the corpus),
#: with no margin at all 1 to 25 top-10 or top-100 lists in 200 changed (agreement
#: 0.9987 at worst); with 32 more, none did.
_MARGIN = 32
#: At most this many rows tied with the last candidate are kept beyond it (the smallest
#: ids): a query that shares no word with most of a million hash vectors ties them all
#: at 0.0, and their exact vectors are read back.
_TIED = 1024
#: Row masks of filtered searches kept (per matrix version: ``candidates``' ``groups``).
_MASKS = 16
#: A filter's groups and the key its mask is kept under (``candidates``), and the ids of
#: rows of those groups it leaves out (a language filter's other chunks).
Groups = tuple[str, I64] | tuple[str, I64, Sequence[int]]

def _pool(k: int, feedback: int, pool: int) -> int:
    """How many rows of the compact scan are ranked exactly."""
    wanted = max(pool, k) if feedback > 0 else k
    return wanted + max(wanted // 4, _MARGIN)


class VectorIndex(Rows):
    """The compact rows (``core.rows``) and the candidates of a search among them."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        super().__init__(dim, capacity)
        self._masks: dict[tuple[int, str], npt.NDArray[np.bool_]] = {}
        self._masks_lock = threading.Lock()
        #: Score buffers of finished scans, for the next (a fresh one costs page faults).
        self._buffers: list[F32] = []

    @changes
    def remove_groups(self, groups: Sequence[int]) -> None:
        """Remove every row of these groups (files)."""
        hit = self.mask(np.asarray(groups, dtype=np.int64))
        if hit.any():
            self.remove(self._ids[: self._n][hit])

    def mask(self, groups: npt.NDArray[np.int64],
             without: Sequence[int] = ()) -> npt.NDArray[np.bool_]:
        """Which rows belong to ``groups``, but for the ids ``without`` (valid until
        ``version`` changes)."""
        mask: npt.NDArray[np.bool_] = np.isin(self._groups[: self._n], groups)
        if len(without):
            mask &= ~np.isin(self._ids[: self._n], np.asarray(without, dtype=np.int64))
        return mask

    def _mask_of(self, groups: Groups) -> npt.NDArray[np.bool_]:
        """``mask`` of a filter's groups, kept while the matrix does not change."""
        key = (self.version, groups[0])
        with self._masks_lock:  # (searches side by side make them)
            mask = self._masks.get(key)
            if mask is None:
                mask = self.mask(groups[1], groups[2] if len(groups) > 2 else ())
                while len(self._masks) >= _MASKS:
                    self._masks.pop(next(iter(self._masks)))
                self._masks[key] = mask
        return mask

    def candidates(self, query: F32, k: int, *, feedback: int = 0, pool: int = 200,
                   mask: npt.NDArray[np.bool_] | None = None, groups: Groups | None = None,
                   ranks: GroupRanks | None = None, clock: Clock = OFF_CLOCK) -> I64:
        """The ids whose exact vectors ``rank`` needs to answer ``top_k`` with these
        arguments: the best rows of the compact scan, more than ``k`` (and than
        ``pool`` with feedback), every row tied with the last of them too (up to
        ``_TIED`` more). Best first, equal scores by smaller id. A zero query (every
        cosine 0.0) gives ``k`` rows, of the groups first in ``ranks`` (a group's rows by
        id). Where only some of the rows tied at the cut are
        taken, they are those whose groups come first in ``ranks`` (every row of the
        last group taken: so two indexes of the same files, whose row ids differ, take
        the same rows), else those of the smallest ids.

        With ``mask`` (from :meth:`mask`), only those rows are candidates; with
        ``groups`` (a key, the groups), those of these groups (their mask kept under
        the key while the matrix does not change). ``clock`` times the scan and the
        selection (``core.steps``).

        Safe in a worker thread while the event loop goes on: a change of the matrix
        waits for the searches reading it."""
        with self.shared.reading():
            if groups is not None:
                mask = self._mask_of(groups)
            return self._candidates(query, k, feedback, pool, mask, ranks, clock)

    def _candidates(self, query: F32, k: int, feedback: int, pool: int,
                    mask: npt.NDArray[np.bool_] | None, ranks: GroupRanks | None,
                    clock: Clock) -> I64:
        n = self._n
        if mask is not None and len(mask) != n:
            raise ValueError(f"the mask has {len(mask)} rows, the matrix {n}: make it again")
        rows = None if mask is None else np.flatnonzero(mask)
        live = n if rows is None else len(rows)
        if live == 0 or k < 1:
            return np.zeros(0, dtype=np.int64)
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        ids = self._ids[:n] if rows is None else self._ids[rows]
        groups = self._groups[:n] if rows is None else self._groups[rows]
        if norm == 0.0 or not np.isfinite(norm):  # every row ties: the first ``k``
            first = first_by_group(ids, groups, min(k, live), ranks)
            by = (ids[first],) if ranks is None else (ids[first], ranks(groups[first]))
            # (a file's rows by id: its chunks were written in their order)
            return np.sort(ids[first[np.lexsort(by)[:k]]])
        buffer = self._buffers.pop() if self._buffers else None
        scores, buffer = self._scan(quantise((q / norm)[None, :])[0][0], rows, buffer)
        try:
            clock.lap("scan")
            take = min(_pool(k, feedback, pool), live)
            if take < live:
                part, among = top(scores, take)
                cut = scores[part].min()
                # (every score at or above the cut is among ``among``: no more passes
                # over a million scores)
                at = among if among is not None else np.arange(live)
                near = scores[at]
                if np.count_nonzero(near >= cut) > take:  # rows tied with the last one left
                    above = at[near > cut]
                    tied = at[near == cut]
                    keep = take - len(above) + _TIED
                    if len(tied) > keep:  # those that come first (by their files' paths)
                        tied = tied[first_by_group(ids[tied], groups[tied], keep, ranks)]
                    part = np.concatenate([above, tied])
            else:
                part = np.arange(live)
            order = np.lexsort((ids[part], -scores[part]))
            best: I64 = ids[part[order]]
        finally:
            self._buffers.append(buffer)
        clock.lap("select")
        return best

    def _scan(self, q8: npt.NDArray[np.int8], rows: npt.NDArray[np.intp] | None,
              buffer: F32 | None) -> tuple[F32, F32]:
        """The approximate cosine (up to the query's own scale) of every live row, or of
        ``rows`` only; and the buffer written (``buffer`` when it is large enough)."""
        gathered = rows is not None and len(rows) <= self._n * _GATHER
        if gathered:
            codes, scales = self._codes[rows], self._scales[rows]
        else:
            codes, scales = self._codes[: self._n], self._scales[: self._n]
        if buffer is None or len(buffer) < len(codes):
            buffer = np.empty(len(self._scales), dtype=np.float32)  # (the capacity)
        out = buffer[: len(codes)]
        dots(q8, codes, out)  # (int32 dots: exact in float32; split across the cores)
        out *= scales
        scores: F32 = out[rows] if rows is not None and not gathered else out
        return scores, buffer

    def to_read(self, query: F32, k: int, *, feedback: int = 0, weight: float = 1.0,
                pool: int = 200, mask: npt.NDArray[np.bool_] | None = None,
                groups: Groups | None = None, ranks: GroupRanks | None = None,
                clock: Clock = OFF_CLOCK) -> I64:
        """The ids whose exact vectors ``rank`` needs (ascending): the ``candidates``
        ranked first on their rows as held here, those that can reach the answer kept
        (``core.ranking.needed``). Arguments as ``candidates``'."""
        with self.shared.reading():  # (the rows ranked are those scanned)
            if groups is not None:
                mask = self._mask_of(groups)
            found = self._candidates(query, k, feedback, pool, mask, ranks, clock)
            out = needed(query, found, self.approximate(found), k, feedback=feedback,
                         weight=weight, pool=pool)
        clock.lap("pre-rank")
        return out

    def top_k(
        self, query: F32, k: int, *, exact: Exact, feedback: int = 0, weight: float = 1.0,
        pool: int = 200, mask: npt.NDArray[np.bool_] | None = None, ties: bool = False,
    ) -> list[tuple[int, float]]:
        """``rank`` over ``to_read``, their exact vectors from ``exact`` (the query actor
        does the same with the database in between: see ``query/ranking.py``)."""
        found, vectors = exact(self.to_read(query, k, feedback=feedback, weight=weight,
                                            pool=pool, mask=mask))
        return rank(query, found, vectors, k, feedback=feedback, weight=weight, pool=pool,
                    ties=ties)
