"""SQLite FTS5's ``bm25()``, reproduced bit for bit, and the compact lists it is scored from.

The lexical branch ranks with FTS5's built-in ``bm25()`` (``fts5_aux.c``): for each
phrase of the query, ``idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))``,
summed in phrase order and negated (lower is better). ``f`` is the phrase's instances
in the row weighted by column, ``D`` the row's tokens in all columns, ``avgdl`` the
table's tokens per row and ``idf = ln((N - n + 0.5) / (n + 0.5))``, at least 1e-6.
``weigh`` does the same operations in the same order on float64 arrays, so a score
computed here equals the one FTS5 computes for the same row, not merely nearly.

The store keeps, for frequent terms, the chunks that hold each term and its weighted
frequency there (``store.sqlite.lexicon``): ``encode_ids``/``encode_counts`` pack them, and
``decode_*`` unpack them into arrays ready to score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

# (kept in hits, numpy-free, for the searches that need no more of this module)
from .hits import COLUMNS as COLUMNS
from .hits import WEIGHTS as WEIGHTS
from .hits import Hit as Hit
from .hits import merged as merged
from .hits import place as place

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]

K1 = 1.2
B = 0.75
#: The least idf FTS5 gives a phrase (in more than half the rows the formula is <= 0).
IDF_FLOOR = 1e-6


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency of a phrase found in ``hits`` of ``rows`` rows
    (math.log is the C library's log, as SQLite's)."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else IDF_FLOOR


def weigh(freqs: F64, lengths: F64, phrase_idf: float, avgdl: float) -> F64:
    """One phrase's part of each row's score: ``freqs`` its weighted instances in each
    row, ``lengths`` the rows' token counts. Operation for operation as fts5_aux.c."""
    return phrase_idf * ((freqs * (K1 + 1.0)) / (freqs + K1 * (1 - B + B * lengths / avgdl)))


def score(freqs: Sequence[float], length: float, idfs: Sequence[float], avgdl: float) -> float:
    """One row's bm25 (negated: lower is better) from each phrase's weighted instances in
    it, its tokens, each phrase's idf and the table's tokens per row: ``weigh``'s
    operations, summed in phrase order as fts5_aux.c sums them."""
    total = 0.0
    for f, phrase_idf in zip(freqs, idfs, strict=True):
        total += phrase_idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl)))
    return -1.0 * total


def bound(phrase_idf: float) -> float:
    """More than any row can get from one phrase: f / (f + K) < 1 for every row."""
    return phrase_idf * (K1 + 1.0)


def varints(blob: bytes) -> list[int]:
    """The SQLite varints FTS5 writes in its averages and docsize records."""
    out: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


def averages(record: bytes) -> tuple[int, float]:
    """Rows and tokens per row, from FTS5's averages record (rows, then tokens per
    column), as ``xRowCount`` and ``xColumnTotalSize(-1)`` give them to bm25."""
    values = varints(record)
    rows = values[0] if values else 0
    return rows, (float(sum(values[1:])) / float(rows)) if rows else 0.0


class Totals:
    """Sums each chunk's parts, phrase after phrase, as bm25 sums them: ``add`` each
    phrase's (ids, parts) in the query's order, then ``take`` the chunks and their sums.

    Every chunk's sum is built one addition after another in the order given (numpy's
    sum and reduceat add in pairs, which can differ in the last bit). For ids up to
    ``size - 1``; its arrays are kept from search to search (one search at a time), so
    a search over a million chunks does not allocate and scan fresh ones."""

    def __init__(self, size: int) -> None:
        self._sums = np.zeros(size, dtype=np.float64)
        self._seen = np.zeros(size, dtype=np.bool_)
        self._few: list[tuple[I64, F64]] = []
        self._many = False

    def add(self, ids: I64, parts: F64) -> None:
        """One phrase's parts (each id at most once, all parts positive)."""
        if self._many or (sum(len(i) for i, _ in self._few) + len(ids)) * 16 >= len(self._sums):
            for few_ids, few_parts in self._few:
                self._add_many(few_ids, few_parts)
            self._few.clear()
            self._add_many(ids, parts)
        else:
            self._few.append((ids, parts))

    def _add_many(self, ids: I64, parts: F64) -> None:
        self._many = True
        self._sums[ids] += parts  # each id once: one addition per id
        self._seen[ids] = True

    def discard(self) -> None:
        """Forget a search that failed half-way."""
        self._few.clear()
        if self._many:
            self._sums.fill(0.0)
            self._seen.fill(False)
            self._many = False

    def take(self) -> tuple[I64, F64]:
        """The ids added, ascending, with their sums; ready for the next search."""
        if not self._many:
            ids = np.concatenate([i for i, _ in self._few]) if self._few else np.zeros(0, np.int64)
            parts = np.concatenate([p for _, p in self._few]) if self._few else np.zeros(0)
            self._few.clear()
            found, at = np.unique(ids, return_inverse=True)  # bincount: input order
            return found, cast(F64, np.bincount(at, weights=parts, minlength=len(found)))
        found = np.flatnonzero(self._seen)
        sums = self._sums[found]
        self._sums[found] = 0.0
        self._seen[found] = False
        self._many = False
        return found, sums


def order(ids: I64, totals: F64, limit: int, first: Mask | None = None) -> list[Hit]:
    """The rows that can be among the ``limit`` best, as (id, bm25, tier), best first:
    the rows ``first`` marks (tier 1) before the others, each group by highest total.
    That is the ``limit`` best and every row tied with the last of them: equal scores
    are in id order here, and the store orders them by path (``store.sqlite.reader``), which
    it can because the whole tie is kept. ``totals`` are positive sums; bm25 reports
    them negated."""
    if first is None:
        return _order(ids, totals, limit, 0)
    top = _order(ids[first], totals[first], limit, 1)
    if len(top) >= limit:
        return top
    return top + _order(ids[~first], totals[~first], limit - len(top), 0)


def _order(ids: I64, totals: F64, limit: int, tier: int) -> list[Hit]:
    if limit <= 0:
        return []
    if len(ids) > limit:
        kth = np.partition(totals, len(totals) - limit)[len(totals) - limit]
        keep = totals >= kth  # every row tied with the last one kept, for the tie-break
        ids, totals = ids[keep], totals[keep]
    return [(int(ids[i]), -float(totals[i]), tier) for i in np.lexsort((ids, -totals))]


# ------------------------------------------------------------------ packed lists

def _packed(values: I64) -> bytes:
    """Whole numbers >= 0 in the fewest bytes the largest needs, after one byte saying
    how many."""
    top = int(values.max()) if len(values) else 0
    size = next(n for n in (1, 2, 4, 8) if top < 1 << (8 * n))
    return bytes([size]) + values.astype(f"<u{size}").tobytes()


def encode_ids(ids: I64) -> bytes:
    """Ascending ids as the gaps between them (``_packed``)."""
    return _packed(np.diff(ids, prepend=0))


def decode_ids(blob: bytes) -> I64:
    kind = np.dtype(f"<u{blob[0]}")
    return np.cumsum(np.frombuffer(blob, dtype=kind, offset=1), dtype=np.int64)


def encode_counts(values: F64) -> bytes:
    """Weighted frequencies: whole numbers in the fewest bytes (one byte saying how
    many), anything else as float64 (a zero byte first)."""
    whole = values.astype(np.int64)
    if np.array_equal(whole, values) and (len(whole) == 0 or int(whole.min()) >= 0):
        return _packed(whole)
    return b"\x00" + values.astype("<f8").tobytes()


def decode_counts(blob: bytes) -> F64:
    kind = np.dtype("<f8") if blob[0] == 0 else np.dtype(f"<u{blob[0]}")
    return np.frombuffer(blob, dtype=kind, offset=1).astype(np.float64)
