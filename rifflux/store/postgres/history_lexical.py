"""The commits' lexical leg on PostgreSQL: FTS5's bm25 over a commit's title, body, paths
and change (weighted ``history.rows.WEIGHTS``), computed from WAL-logged data as the
chunks' is (``lexical``), so that both stores rank commits alike, after a server restart
and on a read replica too.

A query is read as the chunks' (``core.lexemes.lexical_query``: FTS5's phrases), plus
the phrase of its words in a title (``history.rows.title_words``), as SQLite's
``history_match`` adds it (a query with a ``prefix*`` has every match ranked: no lexicon
completes a prefix for the BM25 index here). Which commits match is told by the
``tsquery`` over ``commits.words`` (a GIN index). The candidates are the best ``POOL``
times as many as asked (at least ``POOL_LEAST``) of the BM25 index (``pg_textsearch``,
``history_schema.HISTORY_BM25``) while it is whole (``bm25_index.Accelerator``, the
chunks' rule), read further while too few of them match or pass the filters; else, and
with filters that keep few commits, every commit that matches. Each candidate is scored
as FTS5 scores it (``core.bm25.score``): each phrase's instances in its fields
(``core.lexemes.frequencies``: a field repeated as often as its weight counts that
often), the phrase's idf from the commits that hold it (a word's from
``commit_lexicon``, a phrase's or a prefix's counted); the commit's length and the
totals as FTS5 counts them (``commits.length``, ``commit_totals``). Equal scores: the
older row first, as SQLite orders them.
"""

from __future__ import annotations

from typing import Any

import asyncpg

from ...core.bm25 import idf, score
from ...core.lexemes import SEPARATOR, Clause, frequencies, lexical_query, tokens, tsquery
from ...history.rows import WEIGHTS, HistoryFilters, title_words
from ...location import DatabaseUrl
from .bm25_index import COMMITS, Accelerator
from .connection import Connection, Pool, mapped_errors, numbered, snapshot
from .history_schema import HISTORY_BM25
from .lexical import SCAN_MOST

_VECTOR = "c.words"
#: A candidate as it is scored: its fields once each (``lexemes`` holds each as often as
#: its weight: the first copy of each), and its length.
_FIELDS = ", ".join(
    f"split_part(c.lexemes, ' | ', {1 + sum(WEIGHTS[:i])}) AS f{i}" for i in range(len(WEIGHTS)))
_CANDIDATE = f"c.id, c.length, {_FIELDS}"
#: How many times as many commits as asked (at least ``POOL_LEAST``) the BM25 index
#: gives to be ranked as FTS5 ranks them. Fewer than the chunks' (5, 100): its order is
#: near FTS5's here (each field repeated as often as its weight), and its scan costs what
#: it reads (pdf.js's 23,500 commits, a loaded machine: 5 ms for 10, 32 ms for 100,
#: 200 ms for 500).
POOL, POOL_LEAST = 2, 30
#: A filter keeping at most this many commits is applied before ranking: its matching
#: commits are scored, all of them.
PREFILTER = 2_000


def commit_lexemes(title: str, body: str, paths: str, summary: str) -> tuple[str, int]:
    """What the lexical leg indexes of a commit: each field's tokens, repeated as often as
    its weight, the copies set apart (``core.lexemes.SEPARATOR``); and its tokens as
    FTS5 counts them (each field once)."""
    fields = [" ".join(tokens(text)) for text in (title, body, paths, summary)]
    parts = [f for f, weight in zip(fields, WEIGHTS, strict=True) for _ in range(weight)]
    return SEPARATOR.join(parts), sum(len(f.split()) for f in fields)


class HistoryLexical:
    """The commits' lexical leg of one process, on its pool."""

    def __init__(self, pool: Pool, where: DatabaseUrl, *, bm25: bool) -> None:
        self._pool = pool
        self._where = where
        self._index = Accelerator(where, COMMITS, enabled=bm25)

    def condition(self) -> str | None:
        return self._index.condition("history search")

    async def lexical(self, query: str, limit: int,
                      filters: HistoryFilters) -> list[tuple[int, float]]:
        q = lexical_query(query)
        if q is None or limit < 1:
            return []
        clauses: list[Clause] = list(q.clauses)
        words = title_words(query)
        title: Clause | None = None
        if words:
            title = (tuple(t for w in words for t in tokens(w)), False)
            title = title if title[0] else None
        with mapped_errors(self._where):
            async with self._pool.acquire() as conn, snapshot(conn):
                # (a prefix is matched exactly: no lexicon completes it for the index)
                ranking = "" if q.prefixes else q.ranking
                found = await self._found(conn, q.match, ranking, limit, filters)
                if not found:
                    return []
                idfs, avgdl = await _statistics(conn, clauses, title)
        scored: list[tuple[float, int]] = []
        for r in found:
            # each field's instances, as often as its weight (its copies are alike)
            freqs = [0.0] * len(clauses)
            for i, weight in enumerate(WEIGHTS):
                field = str(r[f"f{i}"])
                if field:
                    freqs = [f + weight * n for f, n in zip(
                        freqs, frequencies(field, clauses), strict=True)]
            if title is not None:
                freqs.append(WEIGHTS[0] * frequencies(str(r["f0"]), [title])[0])
            if any(freqs):  # (else a phrase only ran from one field into the next)
                scored.append((score(freqs, float(r["length"]), idfs, avgdl), int(r["id"])))
        scored.sort()
        return [(cid, s) for s, cid in scored[:limit]]

    async def _found(self, conn: Connection, match: str, ranking: str, limit: int,
                     filters: HistoryFilters) -> list[Any]:
        """The candidates: the best of the BM25 index while it is whole, else (and for a
        filter keeping few commits) every commit that matches."""
        if not filters.any() or not await self._few(conn, filters):
            if ranking and await self._index.whole_now(conn):
                try:
                    async with conn.transaction():  # (a savepoint: a torn index fails alone)
                        found = await self._scanned(conn, match, ranking,
                                                    max(limit * POOL, POOL_LEAST), filters)
                except asyncpg.InternalServerError as exc:  # pages a crash tore
                    self._index.lost(f"the commits' BM25 index cannot be read ({exc})")
                    found = None
                if found or (found is not None and not await self._any(conn, match, filters)):
                    return found or []
                if found is not None:
                    self._index.lost("the commits' BM25 index found nothing that the GIN "
                                     "index finds (a server restart empties it)")
        return await self._every(conn, match, filters)

    async def _few(self, conn: Connection, filters: HistoryFilters) -> bool:
        clause, args = filters.clause()
        n = await conn.fetchval(numbered(
            f"SELECT count(*) FROM (SELECT 1 FROM commits c WHERE {clause} LIMIT ?) s"),
            *args, PREFILTER + 1)
        return int(n) <= PREFILTER

    async def _every(self, conn: Connection, match: str, filters: HistoryFilters) -> list[Any]:
        """Every commit that matches and passes the filters (through the GIN index, which
        is WAL-logged: whole after a restart and on a replica)."""
        clause, args = filters.clause()
        return list(await conn.fetch(numbered(
            f"SELECT {_CANDIDATE} FROM commits c WHERE {_VECTOR} @@ "
            f"to_tsquery('simple', ?) AND {clause}"), match, *args))

    async def _any(self, conn: Connection, match: str, filters: HistoryFilters) -> bool:
        clause, args = filters.clause()
        return bool(await conn.fetchval(numbered(
            f"SELECT EXISTS (SELECT 1 FROM commits c WHERE {_VECTOR} @@ "
            f"to_tsquery('simple', ?) AND {clause})"), match, *args))

    async def _scanned(self, conn: Connection, match: str, ranking: str, want: int,
                       filters: HistoryFilters) -> list[Any]:
        """The best ``want`` of the BM25 index's scan that match and pass the filters,
        read further (four times as far each time, up to ``SCAN_MOST``) while too few
        do; every match when that is not enough."""
        clause, args = filters.clause()
        depth = want
        while True:
            score_sql = f"c.lexemes <@> to_bm25query(?, '{HISTORY_BM25}')"
            rows = await conn.fetch(numbered(
                f"WITH hit AS (SELECT c.id, {score_sql} AS score FROM commits c ORDER BY "
                f"{score_sql} LIMIT ?) SELECT {_CANDIDATE}, (SELECT count(*) "
                f"FROM hit) AS seen FROM hit JOIN commits c ON c.id = hit.id WHERE "
                f"hit.score < 0 AND {_VECTOR} @@ to_tsquery('simple', ?) AND {clause} "
                "ORDER BY hit.score, c.id LIMIT ?"),
                ranking, ranking, depth, match, *args, want)
            seen = int(rows[0]["seen"]) if rows else int(await conn.fetchval(numbered(
                f"SELECT count(*) FROM (SELECT 1 FROM commits c ORDER BY {score_sql} "
                "LIMIT ?) s"), ranking, depth))
            if len(rows) >= want or seen < depth:
                return list(rows)  # (enough, or every commit the index scores was read)
            if depth >= SCAN_MOST:
                return await self._every(conn, match, filters)
            depth = min(depth * 4, SCAN_MOST)


async def _statistics(conn: Connection, clauses: list[Clause], title: Clause | None,
                      ) -> tuple[list[float], float]:
    """Each phrase's idf, and the commits' tokens per commit, as FTS5 has them: a word's
    commits from ``commit_lexicon``, a phrase's or a prefix's counted (the title phrase's
    in the titles)."""
    word = [len(toks) == 1 and not prefix for toks, prefix in clauses]
    row = await conn.fetchrow(
        "SELECT t.commits, t.tokens, ARRAY(SELECT CASE WHEN q.word THEN COALESCE((SELECT "
        "l.commits FROM commit_lexicon l WHERE l.term = q.term), 0) ELSE (SELECT count(*) "
        f"FROM commits c WHERE {_VECTOR} @@ to_tsquery('simple', q.q)) END FROM "
        "unnest($1::text[], $2::text[], $3::boolean[]) WITH ORDINALITY AS q(q, term, word, "
        "i) ORDER BY q.i), (SELECT count(*) FROM commits c WHERE $4::text IS NOT NULL AND "
        "c.title_words @@ to_tsquery('simple', $4)) FROM commit_totals t",
        [tsquery(clause) for clause in clauses], [toks[0] for toks, _ in clauses], word,
        None if title is None else tsquery(title))
    assert row is not None
    rows, total = max(int(row[0]), 1), int(row[1])
    hits = [int(n) for n in row[2]] + ([] if title is None else [int(row[3])])
    return [idf(rows, n) for n in hits], float(total) / float(rows) if total > 0 else 1.0
