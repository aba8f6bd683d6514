"""Choosing a search's best rows among a score for every row of the matrix, without
sorting them: ``top`` (the largest scores, their cut estimated on a sample first),
and of rows tied at a cut, those whose groups (files) come first by path
(``first_by_group`` with ``group_ranks``), never by row id.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .codes import F32
from .ranking import I64

#: Each group's (file's) place in the order equal scores are taken in, for an array of
#: groups: by the file's path, as ``store.common.stable_order`` orders equal scores, never
#: by row id (``group_ranks``).
GroupRanks = Callable[[I64], I64]

#: Every this many scores are a sample to estimate a search's cut on (``top``).
_STRIDE = 64


def top(scores: F32, take: int) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp] | None]:
    """Positions of ``take`` of the largest ``scores`` (of equal ones at the cut: any),
    and the positions of every score at least the lowest of them (None: look at all).

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
            return above[_distinct_top(scores[above], take)], above
    return _distinct_top(scores, take), None


def _distinct_top(scores: F32, take: int) -> npt.NDArray[np.intp]:
    """``argpartition`` of ``take`` largest scores, made distinct by their position (the
    float's bits as a sortable integer, above the position's 31 bits)."""
    keys = scores.view(np.int32).astype(np.int64)
    keys ^= (keys >> 31) & 0x7FFFFFFF  # negative floats order backwards as integers
    keys <<= 31
    keys |= np.arange(len(scores), dtype=np.int64)
    top: npt.NDArray[np.intp] = np.argpartition(keys, len(keys) - take)[len(keys) - take:]
    return top


def last_of_each(keys: I64) -> npt.NDArray[np.intp] | None:
    """Positions of the last occurrence of each key, in order (None: no repeats)."""
    if len(np.unique(keys)) == len(keys):
        return None
    first_from_end = np.unique(keys[::-1], return_index=True)[1]
    last: npt.NDArray[np.intp] = np.sort(len(keys) - 1 - first_from_end)
    return last


def first_by_group(ids: I64, groups: I64, k: int,
                   ranks: GroupRanks | None) -> npt.NDArray[np.intp]:
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
