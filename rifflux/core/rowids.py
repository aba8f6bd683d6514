"""Which row of the vector matrix holds each id: the ids sorted, their rows beside them.

A dict would take 110 MB at a million ids, and a table indexed by id grows with the
largest id, which every edit of a file raises (its chunks get new row ids). Here an id
costs 12 bytes whatever its value; a lookup is a binary search over all the ids at once;
an id larger than every other (a new chunk's) is appended, others are inserted; a removed
id stays as a hole (row -1) until holes are a third of the entries.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
T = TypeVar("T", bound=np.generic)
#: Rows, -1 for an id not held.
Rows = npt.NDArray[np.int64]


class RowIds:
    def __init__(self, capacity: int = 16) -> None:
        self._keys: I64 = np.zeros(max(capacity, 16), dtype=np.int64)
        self._rows: npt.NDArray[np.int32] = np.zeros(max(capacity, 16), dtype=np.int32)
        self._n = 0  # entries, holes included
        self._holes = 0

    @property
    def nbytes(self) -> int:
        return int(self._n * (self._keys.itemsize + self._rows.itemsize))

    def _find(self, keys: I64) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        held = self._keys[: self._n]
        pos = np.searchsorted(held, keys)
        found = pos < self._n
        found[found] = held[pos[found]] == keys[found]
        return pos, found

    def get(self, keys: I64) -> Rows:
        """The row of each key, -1 for a key not held."""
        pos, found = self._find(keys)
        rows: Rows = np.full(len(keys), -1, dtype=np.int64)
        rows[found] = self._rows[pos[found]]
        return rows

    def set(self, keys: I64, rows: Rows) -> None:
        """Put these (distinct) keys in these rows."""
        pos, found = self._find(keys)
        revived = np.count_nonzero(self._rows[pos[found]] < 0)
        self._rows[pos[found]] = rows[found]
        self._holes -= int(revived)
        new, new_rows = keys[~found], rows[~found]
        if len(new) == 0:
            return
        order = np.argsort(new, kind="stable")
        new, new_rows = new[order], new_rows[order]
        n = self._n
        if n == 0 or new[0] > self._keys[n - 1]:  # larger than all: appended
            self._reserve(n + len(new))
            self._keys[n : n + len(new)] = new
            self._rows[n : n + len(new)] = new_rows
        else:
            at = np.searchsorted(self._keys[:n], new)
            keys_all = np.insert(self._keys[:n], at, new)
            rows_all = np.insert(self._rows[:n], at, new_rows.astype(np.int32))
            self._keys, self._rows = _spare(keys_all), _spare(rows_all)
        self._n = n + len(new)

    def drop(self, keys: I64) -> tuple[I64, Rows]:
        """Forget these keys; returns those that were held and their rows."""
        pos, found = self._find(keys)
        pos = pos[found]
        rows = self._rows[pos].astype(np.int64)
        held = rows >= 0
        self._rows[pos] = -1
        self._holes += int(np.count_nonzero(held))
        dropped: tuple[I64, Rows] = (keys[found][held], rows[held])
        if self._holes * 3 > self._n:
            self._compact()
        return dropped

    def clear(self) -> None:
        self._n = self._holes = 0

    def _compact(self) -> None:
        keep = self._rows[: self._n] >= 0
        keys, rows = self._keys[: self._n][keep], self._rows[: self._n][keep]
        self._keys, self._rows = _spare(keys), _spare(rows)
        self._n, self._holes = len(keys), 0

    def _reserve(self, needed: int) -> None:
        if needed > len(self._keys):
            size = max(needed, len(self._keys) * 5 // 4)
            keys = np.zeros(size, dtype=np.int64)
            keys[: self._n] = self._keys[: self._n]
            rows = np.zeros(size, dtype=np.int32)
            rows[: self._n] = self._rows[: self._n]
            self._keys, self._rows = keys, rows


def _spare(array: npt.NDArray[T]) -> npt.NDArray[T]:
    """``array`` with a quarter more room at its end, for the next appends."""
    out = np.zeros(len(array) + max(16, len(array) // 4), dtype=array.dtype)
    out[: len(array)] = array
    return out
