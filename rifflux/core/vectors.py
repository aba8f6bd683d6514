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

Rows are chunk row ids (found through ``RowIds``, 12 bytes an id where a dict takes
110); removal moves the last rows into the holes, so the live rows stay contiguous and a
scan never loops in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .codes import F32 as F32  # (the types the modules around the matrix import here)
from .codes import normalise, quantise
from .ranking import I64 as I64
from .ranking import rank
from .rowids import RowIds

#: (ids, their float32 vectors): the exact vectors of the rows of these ids that still
#: exist, in any order (``VectorIndex.top_k``'s source of exact vectors).
Exact = Callable[[I64], tuple[I64, F32]]
#: Each group's (file's) place in the order equal scores are taken in, for an array of
#: groups: by the file's path, as ``store.common.stable_order`` orders equal scores, never
#: by row id (``group_ranks``).
GroupRanks = Callable[[I64], I64]

#: Every this many scores are a sample to estimate a search's cut on (``_top``).
_STRIDE = 64
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


def _pool(k: int, feedback: int, pool: int) -> int:
    """How many rows of the compact scan are ranked exactly."""
    wanted = max(pool, k) if feedback > 0 else k
    return wanted + max(wanted // 4, _MARGIN)


class VectorIndex:
    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        cap = max(capacity, 16)
        self._codes: npt.NDArray[np.int8] = np.zeros((cap, dim), dtype=np.int8)
        self._scales: F32 = np.zeros(cap, dtype=np.float32)
        self._ids: I64 = np.zeros(cap, dtype=np.int64)
        #: Each row's group (the chunk's file), so that a search can be limited to files.
        self._groups: I64 = np.zeros(cap, dtype=np.int64)
        self._where = RowIds(cap)
        self._n = 0
        #: Bumped by every change, so that a cached row mask knows when it is stale.
        self.version = 0

    def __len__(self) -> int:
        return self._n

    def __contains__(self, key: int) -> bool:
        return bool(self._where.get(np.asarray([key], dtype=np.int64))[0] >= 0)

    @property
    def nbytes(self) -> int:
        """What the matrix holds in memory (its spare capacity is not touched)."""
        per_row = self.dim + self._scales.itemsize + self._ids.itemsize + self._groups.itemsize
        return int(self._n * per_row + self._where.nbytes)

    def ids(self) -> I64:
        """The ids held, in row order."""
        out: I64 = self._ids[: self._n].copy()
        return out

    def _grow(self, needed: int) -> None:
        cap = len(self._ids)
        if needed <= cap:
            return
        new_cap = max(needed, cap + cap // 4)  # (a doubling would hold 3x the rows)
        codes = np.zeros((new_cap, self.dim), dtype=np.int8)
        codes[: self._n] = self._codes[: self._n]
        self._codes = codes
        self._scales = _grown(self._scales, new_cap, self._n)
        self._ids = _grown(self._ids, new_cap, self._n)
        self._groups = _grown(self._groups, new_cap, self._n)

    def upsert(self, ids: Sequence[int] | I64, vectors: F32,
               groups: Sequence[int] | I64 | None = None) -> None:
        """Set these rows (a repeated id: the last one wins; no groups: group 0)."""
        if len(ids) == 0:
            return
        keys = np.asarray(ids, dtype=np.int64).reshape(-1)
        if vectors.shape != (len(keys), self.dim):
            raise ValueError(f"expected {(len(keys), self.dim)} vectors, got {vectors.shape}")
        if groups is not None and len(groups) != len(keys):
            raise ValueError(f"expected {len(keys)} groups, got {len(groups)}")
        group = (np.zeros(len(keys), dtype=np.int64) if groups is None
                 else np.asarray(groups, dtype=np.int64).reshape(-1))
        codes, scales = quantise(normalise(np.asarray(vectors, dtype=np.float32)))
        last = _last_of_each(keys)
        if last is not None:
            keys, codes, scales, group = keys[last], codes[last], scales[last], group[last]
        rows = self._where.get(keys)
        new = rows < 0
        added = int(np.count_nonzero(new))
        self._grow(self._n + added)
        rows[new] = np.arange(self._n, self._n + added)
        self._where.set(keys[new], rows[new])
        first = self._n
        self._n += added
        # all new (a load, a new file): the next rows in order, written as one slice
        at: slice | npt.NDArray[np.int64] = slice(first, self._n) if added == len(keys) else rows
        self._ids[at] = keys
        self._codes[at] = codes
        self._scales[at] = scales
        self._groups[at] = group
        self.version += 1

    def append(self, ids: I64, vectors: F32, groups: I64) -> None:
        """A block of a load: rows appended, their ids not looked up (a block's ids
        inserted among those held cost a copy of them all: 2 s of a million-row load).
        ``seal`` finds them all at once after the last block; searches wait for it."""
        self.append_codes(ids, *quantise(normalise(vectors)), groups)

    def append_codes(self, ids: I64, codes: npt.NDArray[np.int8], scales: F32,
                     groups: I64) -> None:
        """``append`` of rows already compact (``packed`` rows read back, as ``unpack``
        gives them): nothing to convert."""
        self._grow(self._n + len(ids))
        at = slice(self._n, self._n + len(ids))
        self._codes[at], self._scales[at] = codes, scales
        self._ids[at], self._groups[at] = ids, groups
        self._n += len(ids)

    def seal(self) -> None:
        """After ``append``: every row's id found (an id appended twice: the last wins).
        One sort of the ids finds both the repeats and every row's place."""
        n = self._n
        order = np.argsort(self._ids[:n], kind="stable")
        keys = self._ids[:n][order]
        repeated = keys[1:] == keys[:-1]
        if repeated.any():  # the last of each run of equal ids, in row order
            last = np.sort(order[np.append(~repeated, True)])
            for array in (self._codes, self._scales, self._ids, self._groups):
                array[: len(last)] = array[last]
            n = self._n = len(last)
            order = np.argsort(self._ids[:n], kind="stable")
            keys = self._ids[:n][order]
        self._where.clear()
        self._where.set(keys, order.astype(np.int64))
        self.version += 1

    def remove(self, ids: Iterable[int] | I64) -> None:
        """Drop these rows (absent ids are ignored): the last rows move into the holes."""
        self.version += 1
        given = ids if isinstance(ids, np.ndarray | list | tuple) else list(ids)
        _, rows = self._where.drop(np.unique(np.asarray(given, dtype=np.int64).reshape(-1)))
        if len(rows) == 0:
            return
        n = self._n - len(rows)
        holes = np.sort(rows[rows < n])
        tail = np.arange(n, self._n)
        movers = tail[~np.isin(tail, rows)]  # as many as there are holes
        for array in (self._codes, self._scales, self._ids, self._groups):
            array[holes] = array[movers]
        self._where.set(self._ids[holes], holes)
        self._n = n

    def remove_groups(self, groups: Sequence[int]) -> None:
        """Remove every row of these groups (files)."""
        hit = self.mask(np.asarray(groups, dtype=np.int64))
        if hit.any():
            self.remove(self._ids[: self._n][hit])

    def clear(self) -> None:
        self._where.clear()
        self._n = 0
        self.version += 1

    def mask(self, groups: npt.NDArray[np.int64],
             without: Sequence[int] = ()) -> npt.NDArray[np.bool_]:
        """Which rows belong to ``groups``, but for the ids ``without`` (valid until
        ``version`` changes)."""
        mask: npt.NDArray[np.bool_] = np.isin(self._groups[: self._n], groups)
        if len(without):
            mask &= ~np.isin(self._ids[: self._n], np.asarray(without, dtype=np.int64))
        return mask

    def candidates(self, query: F32, k: int, *, feedback: int = 0, pool: int = 200,
                   mask: npt.NDArray[np.bool_] | None = None,
                   ranks: GroupRanks | None = None) -> I64:
        """The ids whose exact vectors ``rank`` needs to answer ``top_k`` with these
        arguments: the best rows of the compact scan, more than ``k`` (and than
        ``pool`` with feedback), every row tied with the last of them too (up to
        ``_TIED`` more). Best first, equal scores by smaller id. A zero query (every
        cosine 0.0) gives ``k`` rows, of the groups first in ``ranks`` (a group's rows by
        id). Where only some of the rows tied at the cut are
        taken, they are those whose groups come first in ``ranks`` (every row of the
        last group taken: so two indexes of the same files, whose row ids differ, take
        the same rows), else those of the smallest ids.

        With ``mask`` (from :meth:`mask`), only those rows are candidates."""
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
            first = _first(ids, groups, min(k, live), ranks)
            by = (ids[first],) if ranks is None else (ids[first], ranks(groups[first]))
            # (a file's rows by id: its chunks were written in their order)
            return np.sort(ids[first[np.lexsort(by)[:k]]])
        scores = self._scan(quantise((q / norm)[None, :])[0][0], rows)
        take = min(_pool(k, feedback, pool), live)
        if take < live:
            part = _top(scores, take)
            cut = scores[part].min()
            if np.count_nonzero(scores >= cut) > take:  # rows tied with the last one left
                above = np.flatnonzero(scores > cut)
                tied = np.flatnonzero(scores == cut)
                keep = take - len(above) + _TIED
                if len(tied) > keep:  # those that come first (by their files' paths)
                    tied = tied[_first(ids[tied], groups[tied], keep, ranks)]
                part = np.concatenate([above, tied])
        else:
            part = np.arange(live)
        order = np.lexsort((ids[part], -scores[part]))
        best: I64 = ids[part[order]]
        return best

    def _scan(self, q8: npt.NDArray[np.int8], rows: npt.NDArray[np.intp] | None) -> F32:
        """The approximate cosine (up to the query's own scale) of every live row, or of
        ``rows`` only."""
        import numkong  # (here: a lexical search never loads it)

        gathered = rows is not None and len(rows) <= self._n * _GATHER
        if gathered:
            codes, scales = self._codes[rows], self._scales[rows]
        else:
            codes, scales = self._codes[: self._n], self._scales[: self._n]
        out = np.empty((1, len(codes)), dtype=np.float32)  # int32 dots: exact in float32
        numkong.cdist(q8[None, :], codes, metric="dot", out=out)
        scores: F32 = out[0]
        scores *= scales
        if rows is not None and not gathered:
            scores = scores[rows]
        return scores

    def top_k(
        self, query: F32, k: int, *, exact: Exact, feedback: int = 0, weight: float = 1.0,
        pool: int = 200, mask: npt.NDArray[np.bool_] | None = None, ties: bool = False,
    ) -> list[tuple[int, float]]:
        """``rank`` over ``candidates``, their exact vectors from ``exact`` (the query
        actor does the same with the database in between: see ``query/ranking.py``)."""
        found, vectors = exact(self.candidates(query, k, feedback=feedback, pool=pool,
                                               mask=mask))
        return rank(query, found, vectors, k, feedback=feedback, weight=weight, pool=pool,
                    ties=ties)


def _top(scores: F32, take: int) -> npt.NDArray[np.intp]:
    """Positions of ``take`` of the largest ``scores`` (of equal ones at the cut: any).

    ``argpartition`` alone degrades on many equal values: a hash-vector query scores half
    of a million rows 0.0 and takes 31 ms instead of 1.2. So the cut is first estimated
    on every 64th score, the scores above it are kept (a thousand or so), and those are
    told apart by their position before they are partitioned: 0.2 ms."""
    sample = scores[::_STRIDE]
    rank = int(take * 4 / _STRIDE) + 1  # about four times ``take`` above it
    if rank < len(sample):
        floor = np.partition(sample, len(sample) - rank)[len(sample) - rank]
        above = np.flatnonzero(scores >= floor)
        if take <= len(above) <= 64 * take:
            return above[_distinct_top(scores[above], take)]
    return _distinct_top(scores, take)


def _distinct_top(scores: F32, take: int) -> npt.NDArray[np.intp]:
    """``argpartition`` of ``take`` largest scores, made distinct by their position (the
    float's bits as a sortable integer, above the position's 31 bits)."""
    keys = scores.view(np.int32).astype(np.int64)
    keys ^= (keys >> 31) & 0x7FFFFFFF  # negative floats order backwards as integers
    keys <<= 31
    keys |= np.arange(len(scores), dtype=np.int64)
    top: npt.NDArray[np.intp] = np.argpartition(keys, len(keys) - take)[len(keys) - take:]
    return top


def _last_of_each(keys: I64) -> npt.NDArray[np.intp] | None:
    """Positions of the last occurrence of each key, in order (None: no repeats)."""
    if len(np.unique(keys)) == len(keys):
        return None
    first_from_end = np.unique(keys[::-1], return_index=True)[1]
    last: npt.NDArray[np.intp] = np.sort(len(keys) - 1 - first_from_end)
    return last


def _first(ids: I64, groups: I64, k: int, ranks: GroupRanks | None) -> npt.NDArray[np.intp]:
    """Positions of (at least) ``k`` of these rows: those whose groups come first in
    ``ranks``, every row of the last group taken included; without ``ranks``, the ``k``
    of the smallest ids."""
    if k >= len(ids):
        return np.arange(len(ids))
    if ranks is None:
        return np.argpartition(ids, k - 1)[:k]
    order = ranks(groups)
    bound = np.partition(order, k - 1)[k - 1]
    return np.flatnonzero(order <= bound)


def group_ranks(places: dict[int, int]) -> GroupRanks:
    """``GroupRanks`` from each group's place (a file id's rank by path): a group it does
    not know comes last."""
    known = np.fromiter(places.keys(), dtype=np.int64, count=len(places))
    place = np.fromiter(places.values(), dtype=np.int64, count=len(places))
    by_id = np.argsort(known)
    known, place = known[by_id], place[by_id]
    last = len(places)

    def ranks(groups: I64) -> I64:
        if not len(known):
            return np.full(len(groups), last, dtype=np.int64)
        at = np.minimum(np.searchsorted(known, groups), len(known) - 1)
        out: I64 = np.where(known[at] == groups, place[at], last)
        return out

    return ranks


def _grown(array: npt.NDArray[Any], size: int, keep: int) -> npt.NDArray[Any]:
    out = np.zeros(size, dtype=array.dtype)
    out[:keep] = array[:keep]
    return out
