"""What both PostgreSQL lexical legs (the chunks', ``lexical``; the commits',
``history_lexical``) share to rank as FTS5 ranks: a statement's parameters (``Params``),
the counts FTS5's ``bm25()`` needs, read in the very statement that finds the
candidates (``counts``: no round trip of their own, and the candidates' snapshot),
each clause's idf from them (``statistics``), and the index's words that complete a
prefix (``completions``: what the BM25 index is asked for in its place).

Each table ranked so keeps its word counts by triggers (``word_counts``): its rows and
their tokens in a one-row ``totals`` table, the rows holding each word in a ``lexicon``;
a ``Counted`` names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.bm25 import idf
from ...core.lexemes import Clause, tsquery
from .connection import Connection, numbered

__all__ = ["CHUNK_COUNTS", "COMMIT_COUNTS", "EXPANSIONS", "Counted", "Params", "completions",
           "counts", "statistics"]

#: The index's words a prefix is completed with, for ranking (shortest first).
EXPANSIONS = 64


@dataclass(frozen=True, slots=True)
class Counted:
    """A table whose words are counted for FTS5's bm25: ``table``'s row ``c`` matches a
    ``tsquery`` through ``vector``; ``totals`` holds its rows (``count``) and their
    ``tokens``; ``lexicon`` each ``term`` and the rows holding it (``count``)."""

    table: str
    vector: str
    lexicon: str
    totals: str
    count: str


CHUNK_COUNTS = Counted("chunks", "to_tsvector('simple'::regconfig, c.lexemes)", "lexicon",
                       "lexical_totals", "chunks")
COMMIT_COUNTS = Counted("commits", "c.words", "commit_lexicon", "commit_totals", "commits")


class Params:
    """A statement's parameters: ``p(value)`` adds one and says its placeholder."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"

    def shared(self, sql: str, args: Sequence[Any]) -> str:
        """A shared statement's part (``?`` placeholders: ``history.rows``' filters) with
        its parameters added, numbered after those already there."""
        text = numbered(sql, start=len(self.values))
        self.values.extend(args)
        return text


def counts(p: Params, counted: Counted, clauses: Sequence[Clause],
           more: Sequence[str] = ()) -> str:
    """What FTS5's bm25 of ``clauses`` needs beside the candidates, as one array read in
    the statement that finds them: the rows, their tokens, then the rows holding each
    clause in order (a word's from the lexicon, a phrase's or a prefix's counted through
    the ``tsquery`` index), then each of ``more`` (counts of the caller's own)."""
    words = [len(toks) == 1 and not prefix for toks, prefix in clauses]
    held = (f"COALESCE((SELECT l.{counted.count} FROM {counted.lexicon} l WHERE l.term = "
            f"q.term), 0) ELSE (SELECT count(*) FROM {counted.table} c WHERE "
            f"{counted.vector} @@ to_tsquery('simple', q.q))")
    extra = "".join(f" || ARRAY[({m})::bigint]" for m in more)
    return (f"(SELECT ARRAY[t.{counted.count}, t.tokens]::bigint[] || ARRAY(SELECT CASE WHEN "
            f"q.word THEN {held} END::bigint FROM unnest({p([tsquery(c) for c in clauses])}"
            f"::text[], {p([toks[0] for toks, _ in clauses])}::text[], {p(words)}::boolean[]) "
            f"WITH ORDINALITY AS q(q, term, word, i) ORDER BY q.i){extra} "
            f"FROM {counted.totals} t)")


def statistics(held: Sequence[int]) -> tuple[list[float], float]:
    """Each counted clause's idf (then each of ``more``'s), and the rows' tokens per row,
    as FTS5 has them, from ``counts``' array."""
    rows, tokens = max(int(held[0]), 1), int(held[1])
    return [idf(rows, int(n)) for n in held[2:]], float(tokens) / float(rows) \
        if tokens > 0 else 1.0


async def completions(conn: Connection, counted: Counted, prefixes: Sequence[str]) -> list[str]:
    """The index's words that complete each prefix (at most ``EXPANSIONS`` each, shortest
    first), held by at least one row."""
    if not prefixes:
        return []
    rows = await conn.fetch(  # (every prefix in one round trip)
        f"SELECT t.term FROM unnest($1::text[]) WITH ORDINALITY AS p(prefix, n) CROSS "
        f"JOIN LATERAL (SELECT term FROM {counted.lexicon} WHERE term >= p.prefix AND "
        f"term < p.prefix || chr(1114111) AND {counted.count} > 0 ORDER BY length(term), "
        "term LIMIT $2) t ORDER BY p.n, length(t.term), t.term", list(prefixes), EXPANSIONS)
    return list(dict.fromkeys(str(r[0]) for r in rows))
