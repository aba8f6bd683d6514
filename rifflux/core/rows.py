"""The compact rows of the in-memory vector matrix and the ids they hold: set, appended
by a load (then found all at once: ``seal``; or given their chunks after the rows were
read by their vectors: ``assign``), removed by moving the last rows into the holes (the
live rows stay contiguous, so a scan never loops in Python), each row's vector's own row
in the store beside it (``sources``, ``holds``: ``query.exact``). ``core.vectors`` scans
them.

Rows are chunk row ids (found through ``RowIds``, 12 bytes an id where a dict takes 110).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .codes import F32, normalise, quantise
from .ranking import I64
from .rowids import RowIds
from .selection import last_of_each
from .shared import Shared, changes


class Rows:
    """The matrix's rows (``VectorIndex`` searches them)."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        cap = max(capacity, 16)
        self._codes: npt.NDArray[np.int8] = np.zeros((cap, dim), dtype=np.int8)
        self._scales: F32 = np.zeros(cap, dtype=np.float32)
        self._ids: I64 = np.zeros(cap, dtype=np.int64)
        #: Each row's group (the chunk's file), so that a search can be limited to files.
        self._groups: I64 = np.zeros(cap, dtype=np.int64)
        #: Each row's vector's own row in the store (its ``embeddings`` id), by which the
        #: exact vectors of a search's candidates are read (``query.exact``); -1: not
        #: known (a row upserted since the load: read through its chunk).
        self._sources: I64 = np.full(cap, -1, dtype=np.int64)
        self._where = RowIds(cap)
        self._n = 0
        #: Bumped by every change, so that a cached row mask knows when it is stale.
        self.version = 0
        self.shared = Shared()  # (searches read side by side: ``core.shared``)

    def __len__(self) -> int:
        return self._n

    def __contains__(self, key: int) -> bool:
        return bool(self._where.get(np.asarray([key], dtype=np.int64))[0] >= 0)

    @property
    def nbytes(self) -> int:
        """What the matrix holds in memory (its spare capacity is not touched)."""
        per_row = (self.dim + self._scales.itemsize + self._ids.itemsize
                   + self._groups.itemsize + self._sources.itemsize)
        return int(self._n * per_row + self._where.nbytes)

    def ids(self) -> I64:
        """The ids held, in row order."""
        out: I64 = self._ids[: self._n].copy()
        return out

    def populate(self, rows: int) -> bool:
        """Fault in the pages of the first ``rows`` rows' codes ahead of a load's writes
        (``core.pages``; in a worker thread beside the load, which may write them
        meanwhile: nothing held changes). False where the system cannot."""
        from .pages import populate

        codes = self._codes  # (kept alive here, should the load grow the matrix meanwhile)
        return populate(codes, rows * self.dim)

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
        self._sources = _grown(self._sources, new_cap, self._n)

    @changes
    def upsert(self, ids: Sequence[int] | I64, vectors: F32,
               groups: Sequence[int] | I64 | None = None) -> None:
        """Set these rows (a repeated id: the last one wins; no groups: group 0; their
        vectors' rows in the store not known: ``sources`` says -1)."""
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
        last = last_of_each(keys)
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
        self._sources[at] = -1
        self.version += 1

    def append(self, ids: I64, vectors: F32, groups: I64, sources: I64 | None = None) -> None:
        """A block of a load: rows appended, their ids not looked up (a block's ids
        inserted among those held cost a copy of them all: 2 s of a million-row load).
        ``seal`` finds them all at once after the last block; searches wait for it.
        ``sources``: each vector's row in the store (None: not known)."""
        self.append_codes(ids, *quantise(normalise(vectors)), groups, sources)

    @changes
    def append_codes(self, ids: I64, codes: npt.NDArray[np.int8], scales: F32,
                     groups: I64, sources: I64 | None = None) -> None:
        """``append`` of rows already compact (``packed`` rows read back, as ``unpack``
        gives them): nothing to convert."""
        self._grow(self._n + len(ids))
        at = slice(self._n, self._n + len(ids))
        self._codes[at], self._scales[at] = codes, scales
        self._ids[at], self._groups[at] = ids, groups
        self._sources[at] = -1 if sources is None else sources
        self._n += len(ids)

    @changes
    def assign(self, vectors: I64, chunks: I64, files: I64) -> npt.NDArray[np.bool_]:
        """After a load's ``append_codes`` of rows by their vector alone (ids not known
        yet; ``sources`` ascending): each row becomes the chunks its vector serves
        (``vectors`` ascending, beside each its chunk and file), copied for a vector
        that serves several, dropped for one that serves none (the last rows move into
        the holes: no copy of the matrix). Returns which of ``vectors`` had a row;
        ``seal`` comes after. So a load reads the rows while another connection finds
        the chunks they serve (``store.sqlite.vectors``)."""
        n = self._n
        source = self._sources[:n]
        at = np.minimum(np.searchsorted(source, vectors), max(n - 1, 0))
        found = source[at] == vectors if n else np.zeros(len(vectors), dtype=np.bool_)
        at, chunks, files = at[found], chunks[found], files[found]
        first = np.ones(len(at), dtype=np.bool_)
        first[1:] = at[1:] != at[:-1]
        self._ids[at[first]], self._groups[at[first]] = chunks[first], files[first]
        copies = at[~first]  # (a text several chunks share: a row for each)
        self._grow(n + len(copies))
        more = slice(n, n + len(copies))
        for array in (self._codes, self._scales, self._sources):
            array[more] = array[copies]
        self._ids[more], self._groups[more] = chunks[~first], files[~first]
        self._n = n + len(copies)
        serving = np.ones(self._n, dtype=np.bool_)
        serving[:n] = False
        serving[at] = True
        holes = np.flatnonzero(~serving)
        if len(holes):
            kept = self._n - len(holes)
            tail = np.arange(kept, self._n)
            movers, holes = tail[serving[kept:]], holes[holes < kept]
            for array in (self._codes, self._scales, self._ids, self._groups, self._sources):
                array[holes] = array[movers]
            self._n = kept
        return found

    @changes
    def seal(self) -> None:
        """After ``append``: every row's id found (an id appended twice: the last wins).
        One sort of the ids finds both the repeats and every row's place."""
        n = self._n
        order = np.argsort(self._ids[:n], kind="stable")
        keys = self._ids[:n][order]
        repeated = keys[1:] == keys[:-1]
        if repeated.any():  # the last of each run of equal ids, in row order
            last = np.sort(order[np.append(~repeated, True)])
            for array in (self._codes, self._scales, self._ids, self._groups, self._sources):
                array[: len(last)] = array[last]
            n = self._n = len(last)
            order = np.argsort(self._ids[:n], kind="stable")
            keys = self._ids[:n][order]
        self._where.clear()
        self._where.set(keys, order.astype(np.int64))
        self.version += 1

    @changes
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
        for array in (self._codes, self._scales, self._ids, self._groups, self._sources):
            array[holes] = array[movers]
        self._where.set(self._ids[holes], holes)
        self._n = n

    @changes
    def clear(self) -> None:
        self._where.clear()
        self._n = 0
        self.version += 1

    def sources(self, ids: I64) -> I64:
        """Each id's vector's row in the store (``append``'s ``sources``), -1 where it is
        not known or the id is not held."""
        with self.shared.reading():
            rows = self._where.get(np.asarray(ids, dtype=np.int64))
            out: I64 = np.full(len(rows), -1, dtype=np.int64)
            held = rows >= 0
            out[held] = self._sources[rows[held]]
            return out

    def approximate(self, ids: I64) -> F32:
        """These ids' rows as the matrix holds them, as float32 (codes times scale; a
        zero row for an id not held): a search's candidates ranked in memory first
        (``core.ranking.needed``)."""
        with self.shared.reading():
            rows = self._where.get(np.asarray(ids, dtype=np.int64))
            out: F32 = np.zeros((len(rows), self.dim), dtype=np.float32)
            held = rows >= 0
            at = rows[held]
            out[held] = self._codes[at] * self._scales[at][:, None]
            return out

    def holds(self, ids: I64, vectors: F32) -> npt.NDArray[np.bool_]:
        """Whether each of these float32 vectors is the one held for its id: its compact
        row is the one the matrix holds (a vector read back by its row in the store is
        that id's only so: the row may have been deleted since, and taken by another
        text's vector)."""
        with self.shared.reading():
            rows = self._where.get(np.asarray(ids, dtype=np.int64))
            same = np.zeros(len(rows), dtype=np.bool_)
            held = rows >= 0
            if held.any():
                codes, scales = quantise(normalise(np.asarray(vectors, dtype=np.float32)[held]))
                at = rows[held]
                same[held] = (self._scales[at] == scales) & (self._codes[at] == codes).all(axis=1)
            return same


def _grown(array: npt.NDArray[Any], size: int, keep: int) -> npt.NDArray[Any]:
    out = np.zeros(size, dtype=array.dtype)
    out[:keep] = array[:keep]
    return out
