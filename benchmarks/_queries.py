"""Distinct, realistic queries derived from the corpus itself.

Half are headings (what a user who knows the docs types), half are short word
runs from chunk text (what someone half-remembers). The pool is seeded, so a
run is reproducible, and handed out without replacement: every timed query is
new to the process that answers it, so no cache can flatter a figure.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence

from rifflux.core.fts_query import STOPWORDS

from ._corpus import ChunkText

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*[A-Za-z0-9]|[A-Za-z]")


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(query: str) -> list[str]:
    """The words that a plain-text tool should look for (stopwords dropped)."""
    found = [w for w in re.findall(r"\w+", query) if w.lower() not in STOPWORDS]
    return found or re.findall(r"\w+", query)


def _useful(word: str) -> bool:
    return len(word) >= 3 and word.lower() not in STOPWORDS


def _good(query: str) -> bool:
    ws = words(query)
    return 2 <= len(ws) <= 8 and any(_useful(w) for w in ws) and len(query) <= 80


def _heading_queries(chunks: Sequence[ChunkText]) -> Iterator[str]:
    for chunk in chunks:
        if chunk.heading_path:
            last = chunk.heading_path.split(" > ")[-1]
            yield " ".join(words(last))


def _text_queries(chunks: Sequence[ChunkText], rng: random.Random) -> Iterator[str]:
    while True:
        ws = words(rng.choice(chunks).content)
        if len(ws) < 6:
            continue
        size = rng.randint(2, 5)
        start = rng.randrange(0, len(ws) - size)
        run = ws[start : start + size]
        # a phrase someone would type: starts and ends on a content word, has two or more
        if _useful(run[0]) and _useful(run[-1]) and sum(map(_useful, run)) >= 2:
            yield " ".join(run)


class QueryPool:
    """Hands out never-before-used queries: ``take(n)`` twice gives disjoint lists."""

    def __init__(self, chunks: Sequence[ChunkText], *, seed: int = 1234) -> None:
        if not chunks:
            raise ValueError("no chunks to derive queries from")
        rng = random.Random(seed)
        headings = list(dict.fromkeys(q for q in _heading_queries(chunks) if _good(q)))
        rng.shuffle(headings)
        self._headings = iter(headings)
        self._texts = _text_queries(chunks, rng)
        self._used: set[str] = set()
        self._turn = 0

    def _next(self) -> str:
        for _ in range(10_000):
            self._turn += 1
            source = self._headings if self._turn % 2 else self._texts
            query = next(source, None) or next(self._texts)
            key = query.lower()
            if _good(query) and key not in self._used:
                self._used.add(key)
                return query
        raise RuntimeError("cannot derive more distinct queries from this corpus")

    def take(self, n: int) -> list[str]:
        return [self._next() for _ in range(n)]
