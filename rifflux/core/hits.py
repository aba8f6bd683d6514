"""Ranked lexical hits, as FTS5 and the lexicon (``bm25``) both give them: numpy-free, so
that a lexical search on an index without a lexicon (under 20,000 chunks) imports no
numpy (``store.reader``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["COLUMNS", "WEIGHTS", "Hit", "merged", "place"]

#: A ranked row: (chunk id, bm25, tier); tier 1 ranks first (chunks that hold every
#: word of a query mixing CJK and other words: ``core.fts_query.build_every``).
Hit = tuple[int, float, int]

#: The FTS5 table's columns, and their bm25 weights: a word in the heading breadcrumb
#: counts double; ``cjk`` holds CJK characters alone (core.cjk).
COLUMNS = ("heading_path", "content", "cjk")
WEIGHTS = (2.0, 1.0, 1.0)


def place(hit: Hit) -> tuple[int, float]:
    """Where a hit ranks before ties are broken (lower is better): its tier, then bm25."""
    return -hit[2], hit[1]


def merged(parts: Sequence[Sequence[Hit]], limit: int) -> list[Hit]:
    """Lists of disjoint rows, each as ``order`` gives them, as one such list: the
    ``limit`` best and every row tied with the last of them."""
    rows = sorted((hit for part in parts for hit in part), key=lambda h: (*place(h), h[0]))
    if limit <= 0:
        return []
    if len(rows) <= limit:
        return rows
    last = place(rows[limit - 1])
    return [hit for hit in rows if place(hit) <= last]
