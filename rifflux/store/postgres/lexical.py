"""The PostgreSQL store's lexical leg: BM25 inside the database (``pg_textsearch``,
k1 = 1.2, b = 0.75, as FTS5), over the tokens ``core.lexemes`` makes of each chunk
and of the query, so that both stores see the same words; the best it finds are
ranked again by FTS5's own ``bm25()``.

Which chunks match is FTS5's rule (any word, a ``"phrase"`` only where it occurs,
a ``prefix*`` by any word it starts), told by the ``tsquery`` of the query over
the chunk's ``tsvector`` (a GIN index). ``pg_textsearch`` finds the best
``POOL`` times as many as asked (at least ``POOL_LEAST``), by its BM25 of the
query's tokens (a phrase's words each counted, a prefix by the index's words that
complete it: at most ``bm25_counts.EXPANSIONS``, shortest first). Its BM25 is not FTS5's: its idf is
``ln(1 + (N - n + 0.5) / (n + 0.5))`` (FTS5: ``ln((N - n + 0.5) / (n + 0.5))``, at
least 1e-6), it rounds a chunk's length (to 4 bits of mantissa past 39 tokens) and
its scores to float4, and the breadcrumb, weighed twice by being indexed twice,
counts twice in the chunk's length. So those found are scored as FTS5 scores
them (``core.bm25.score``): each phrase and prefix one term, its instances from
the chunk's tokens (``core.lexemes.frequencies``), its idf from the chunks
holding it (``lexicon`` for a word, a count for a phrase or prefix), the chunk's
length and the index's totals as FTS5 counts them (kept by triggers, see
``schema``). Equal scores are ordered by path, then chunk index, then root; a
query mixing CJK with other words ranks the chunks holding every word first
(found and scored apart, all of them, before a scan: the BM25 index's best need
not hold every word).

How the best are found: the BM25 index is scanned best first (``ORDER BY ...
LIMIT``, its top-k shortcut), reading further (four times as far each time) while
the chunks it scores do not match (a phrase) or do not pass a broad filter. A
narrow filter (``_narrow``: few chunks for the size of the index) is applied
first: its matching chunks are scored, all of them. What the scan has not found
within ``SCAN_MOST`` chunks is looked up the same way, exactly. Only the candidates'
tokens, lengths and order keys are read to rank them; the rows of the best alone are
read whole, by a second statement (a search is two round trips, three with a prefix
to complete; the counts a phrase's idf needs are read with the candidates).

The BM25 index is an accelerator only (``bm25_index``: pg_textsearch 0.6.1 keeps nothing
across a server restart and nothing on a replica). While it is not whole (looked at
every ``CHECK_EVERY`` seconds, and whenever a scan of it finds nothing the GIN index
finds), every matching chunk, found through the GIN index (WAL-logged: whole after a
restart, a crash or a restore, and on a streaming replica), is ranked by FTS5's bm25:
the same answers, slower, and ``condition`` says so in every answer and in
``status()``.

Without ``pg_textsearch`` (``ts_rank_cd``): the matching chunks are ranked by
PostgreSQL's ``ts_rank_cd`` (cover density, no document frequencies), negated so
that lower is better as for BM25; reported in ``status()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import asyncpg

from ...core.bm25 import score
from ...core.catalog import Allowed
from ...core.lexemes import LexicalQuery, frequencies, lexical_query
from ...location import DatabaseUrl
from ...types import LexicalExplain, LexicalRanking
from ..common import HIT_SQL, Rows
from ..protocols import Ranked
from .bm25_counts import CHUNK_COUNTS, Params, completions, counts, statistics
from .bm25_index import CHUNKS, Accelerator
from .connection import Connection, Pool, mapped_errors
from .schema import BM25_INDEX

#: Scoring a chunk by itself costs about this many times reading one from the BM25
#: index, best first (measured here: 130 µs and 10 µs on awesome-copilot).
SCORE_COST = 13
#: A filter passing at most this many chunks is always applied before ranking.
PREFILTER = 300
#: How far down the BM25 index a scan reads at most, before looking up exactly.
SCAN_MOST = 20_000
#: How many times as many chunks as asked (at least ``POOL_LEAST``) are ranked again as
#: FTS5 ranks them. The BM25 index's scan costs what it reads (at 100,000 chunks: 1.6 ms
#: for 10, 2.5 ms for 30, 4.6 ms for 100), and FTS5's best are near the top of its
#: order. At 100,000 chunks (the benchmark's postgres section, its index grown by inserts)
#: the top 10's share of FTS5's is 0.945 (five times, at least 100: 0.965; 1.5 times, at
#: least 20: 0.93), and 14 of 20 top tens equal FTS5's (18; 15); over a BM25 index built
#: whole (``REINDEX``) 59 of 60 are equal at any of these depths. A search of the top 10
#: reads ``POOL_LEAST`` whatever ``POOL`` is from 1 to 3; a hybrid search's branch,
#: read 100 deep, reads ``POOL`` times that: 1.3 times (130) fuses the same top 10 as
#: twice (200) for each of 60 queries at 100,571 chunks, and its scan reads a third less
#: (hybrid p50 about 30% lower, on a loaded machine).
POOL, POOL_LEAST = 1.3, 30


def candidates(limit: int, pool: float = POOL) -> int:
    """How many of the BM25 index's best a lexical leg ranks again as FTS5 ranks them, for
    the best ``limit``: ``pool`` times as many, at least ``POOL_LEAST`` (the chunks' leg
    and the commits', ``history_lexical``, each with its own measured ``pool``)."""
    return max(round(limit * pool), POOL_LEAST)

_VECTOR = "to_tsvector('simple'::regconfig, c.lexemes)"
#: A candidate as it is ranked: its tokens and length (FTS5's bm25), and the keys of the
#: order of equal scores; the rows of the final best only are read whole (``HIT_SQL``).
_COLUMNS = "c.id, c.lexemes, c.length, f.rel_path, c.chunk_index, r.path"
_ROWS = ("JOIN chunks c ON c.id = hit.id JOIN files f ON f.id = c.file_id "
         "JOIN roots r ON r.id = f.root_id ")


def planner(ranking: LexicalRanking) -> Callable[[str], LexicalExplain | None]:
    """What a search for a query runs, ranked ``ranking`` (``bm25`` or ``ts_rank_cd``): the
    ``tsquery`` a chunk's ``tsvector`` must match, and the tokens BM25 ranks by (a
    prefix's are the index's words that complete it, looked up as the search runs)."""

    def plan(query: str) -> LexicalExplain | None:
        q = lexical_query(query)
        if q is None:
            return None
        ranked = " ".join([q.ranking, *(f"{p}*" for p in q.prefixes)]).strip()
        return {"store": "postgresql", "ranking": ranking, "match": q.match, "every": q.every,
                "ranked_by": ranked if ranking == "bm25" else None}

    return plan


class Lexical:
    def __init__(self, pool: Pool, where: DatabaseUrl, ranking: LexicalRanking) -> None:
        self._pool = pool
        self._where = where
        self._bm25 = ranking == "bm25"
        self._index = Accelerator(where, CHUNKS, enabled=self._bm25)

    def condition(self) -> str | None:
        """What an answer should say of how it was ranked now (None: nothing)."""
        return self._index.condition("keyword search")

    async def lexical(self, query: str, limit: int, allowed: Allowed | None, *,
                      rows: int | None = None) -> tuple[Ranked, Rows]:
        q = lexical_query(query)
        if q is None:
            return [], Rows()
        with mapped_errors(self._where):
            # (no transaction: the candidates and the counts they are ranked by are read
            # by one statement, in one state; a chunk deleted before its row is read is
            # left out of the answer, as one deleted a moment earlier)
            async with self._pool.acquire() as conn:
                if not self._bm25:
                    found = await self._search(conn, q, limit, allowed)
                    ranked = [(int(r[0]), float(r["score"])) for r in found]
                else:
                    ranked = _as_fts5(q, await self._found(conn, q, limit, allowed), limit)
                wanted = [rowid for rowid, _ in ranked[:rows]]
                read = await conn.fetch(HIT_SQL + "WHERE c.id = ANY($1)",
                                        wanted) if wanted else []
        return ranked, Rows.of_hits(read)

    async def _found(self, conn: Connection, q: LexicalQuery, limit: int,
                     allowed: Allowed | None) -> list[Any]:
        """The candidates FTS5's bm25 ranks: the best of the BM25 index's scan while it is
        whole, else every chunk that matches (``bm25_index``: what a restart leaves)."""
        if await self._index.whole_now(conn):
            try:  # (outside a transaction: a torn index fails its statement alone)
                found = await self._search(conn, q, candidates(limit),
                                           allowed)
            except asyncpg.InternalServerError as exc:  # pages a crash tore
                self._index.lost(f"the BM25 index cannot be read ({exc})")
                return await self._every_match(conn, q, allowed)
            if found or not await self._any_match(conn, q, allowed):
                return found
            self._index.lost("the BM25 index found nothing that the GIN index finds (a "
                             "server restart empties it)")  # (empty, or behind)
        return await self._every_match(conn, q, allowed)

    async def _any_match(self, conn: Connection, q: LexicalQuery,
                         allowed: Allowed | None) -> bool:
        p = Params()
        where = " AND ".join(_filters(p, q, allowed, exact=False))
        return bool(await conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM chunks c WHERE {where})", *p.values))

    async def _every_match(self, conn: Connection, q: LexicalQuery,
                           allowed: Allowed | None) -> list[Any]:
        """Every chunk that matches (and passes the filter), found through the GIN index
        alone (WAL-logged: whole after a restart, and on a replica), for FTS5's bm25 to
        rank each."""
        p = Params()
        where = " AND ".join(_filters(p, q, allowed, exact=False))
        return list(await conn.fetch(
            f"SELECT {_COLUMNS}, {_tier(p, q)} AS tier, {_counts(p, q)} AS counts FROM "
            "chunks c JOIN files f ON "
            f"f.id = c.file_id JOIN roots r ON r.id = f.root_id WHERE {where}", *p.values))

    async def _search(self, conn: Connection, q: LexicalQuery, limit: int,
                      allowed: Allowed | None) -> list[Any]:
        ranking = q.ranking
        if self._bm25 and q.prefixes:
            ranking = " ".join([ranking, *await completions(conn, CHUNK_COUNTS,
                                                            q.prefixes)]).strip()
        if not self._bm25 or not ranking:
            return await self._matched(conn, q, ranking, limit, allowed)
        if allowed is not None and await _narrow(conn, allowed, limit):
            return await self._matched(conn, q, ranking, limit, allowed)
        first: list[Any] = []
        if q.every is not None:  # the chunks holding every word, all of them, come first
            first = await self._matched(conn, q, ranking, limit, allowed, every=True)
            if len(first) >= limit:
                return first
        simple = q.exact and q.every is None and allowed is None
        depth = limit if simple else max(limit * 4, 200)
        while True:
            rows, seen = await self._scanned(conn, q, ranking, limit, allowed, depth)
            if len(rows) >= limit or seen < depth:
                break  # enough, or every chunk the index scores was read
            if depth >= SCAN_MOST:
                return await self._matched(conn, q, ranking, limit, allowed)
            depth = min(depth * 4, SCAN_MOST)
        # the scan's best of the others follow (it holds as many as are missing: its
        # own chunks holding every word are among ``first``)
        return [*first, *(r for r in rows if not r["tier"])][:limit] if first else rows

    async def _scanned(self, conn: Connection, q: LexicalQuery, ranking: str, limit: int,
                       allowed: Allowed | None, depth: int) -> tuple[list[Any], int]:
        """The best ``limit`` of the first ``depth`` chunks of the BM25 index (and every
        chunk tied with the last of them) that match and pass the filter; and how many
        the index gave."""
        p = Params()
        score = f"c.lexemes <@> to_bm25query({p(ranking)}, '{BM25_INDEX}')"
        scan = f"SELECT c.id, {score} AS score FROM chunks c ORDER BY {score} " \
               f"FETCH FIRST ({p(depth)}) ROWS WITH TIES"
        where = ["hit.score < 0", *_filters(p, q, allowed, exact=q.exact)]
        rows = await conn.fetch(
            f"WITH hit AS ({scan}) SELECT {_COLUMNS}, {_tier(p, q)} AS tier, "
            f"{_counts(p, q)} AS counts, "
            "hit.score AS score, (SELECT count(*) FROM hit) AS seen FROM hit " + _ROWS +
            f"WHERE {' AND '.join(where)} {_order(p, limit)}", *p.values)
        if rows:
            return list(rows), int(rows[0]["seen"])
        return [], int(await conn.fetchval(f"SELECT count(*) FROM ({scan}) s", *p.values[:2]))

    async def _matched(self, conn: Connection, q: LexicalQuery, ranking: str, limit: int,
                       allowed: Allowed | None, *, every: bool = False) -> list[Any]:
        """Every chunk that matches (and passes the filter), ranked: exact, at the cost
        of scoring each. With ``every``: only the chunks holding every word."""
        p = Params()
        where = _filters(p, q, allowed, exact=False)
        if every and q.every is not None:
            where.append(f"{_VECTOR} @@ to_tsquery('simple', {p(q.every)})")
        if self._bm25 and ranking:
            score = f"c.lexemes <@> to_bm25query({p(ranking)}, '{BM25_INDEX}')"
        else:  # PostgreSQL's own ranking, higher better (or nothing to rank by)
            score = f"-ts_rank_cd({_VECTOR}, to_tsquery('simple', {p(q.match)}))"
        rows = await conn.fetch(
            f"WITH hit AS MATERIALIZED (SELECT c.id FROM chunks c WHERE {' AND '.join(where)}) "
            f"SELECT {_COLUMNS}, {_tier(p, q)} AS tier, {_counts(p, q)} AS counts, "
            f"{score} AS score FROM hit " + _ROWS +
            _order(p, limit), *p.values)
        return list(rows)


def _filters(p: Params, q: LexicalQuery, allowed: Allowed | None, *, exact: bool) -> list[str]:
    """The conditions a chunk (``c``) passes: it matches (unless ``exact``: every chunk
    BM25 scores matches), and it is of an allowed file."""
    out = [] if exact else [f"{_VECTOR} @@ to_tsquery('simple', {p(q.match)})"]
    if allowed is not None:
        out.append(f"c.file_id = ANY({p(list(allowed.ids))})")
        if allowed.langs:
            out.append(f"c.lang = ANY({p(list(allowed.langs))})")
    return out


def _tier(p: Params, q: LexicalQuery) -> str:
    """1 for a chunk holding every word of a query that mixes scripts, else 0."""
    if q.every is None:
        return "0"
    return f"({_VECTOR} @@ to_tsquery('simple', {p(q.every)}))::int"


def _counts(p: Params, q: LexicalQuery) -> str:
    """The counts FTS5's bm25 of the query needs, read with the candidates
    (``bm25_counts.counts``)."""
    return counts(p, CHUNK_COUNTS, q.clauses)


def _order(p: Params, limit: int) -> str:
    return ('ORDER BY tier DESC, score, f.rel_path COLLATE "C", c.chunk_index, '
            f'r.path COLLATE "C" LIMIT {p(limit)}')


async def _narrow(conn: Connection, allowed: Allowed, limit: int) -> bool:
    """Whether to score the filter's chunks one by one rather than read the BM25 index
    until ``limit`` of them come up: ``n`` allowed chunks of ``total`` cost about
    ``n * SCORE_COST`` that way, and ``limit * total / n`` reads the other."""
    row = await conn.fetchrow(
        "SELECT (SELECT count(*) FROM chunks WHERE file_id = ANY($1)), "
        "(SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'chunks'::regclass)",
        list(allowed.ids))
    assert row is not None
    n, total = int(row[0]), int(row[1] or 0)
    return bool(n <= PREFILTER or n * n * SCORE_COST <= limit * max(total, n))


def _as_fts5(q: LexicalQuery, rows: list[Any], limit: int) -> Ranked:
    """The best ``limit`` of ``rows`` as FTS5 ranks them (its ``bm25()``, chunks holding
    every word first), ties by path, chunk index, root."""
    if not rows:
        return []
    idfs, avgdl = statistics(rows[0]["counts"])
    scored = []
    # (each chunk once: pg_textsearch 0.6.1's scan can give one twice)
    for r in {int(r[0]): r for r in reversed(rows)}.values():
        freqs = frequencies(str(r["lexemes"]), q.clauses)
        if any(freqs):  # (else a phrase only ran from one column into the next)
            scored.append((score(freqs, float(r["length"]), idfs, avgdl), r))
    scored.sort(key=lambda s: (-int(s[1]["tier"]), s[0], str(s[1]["rel_path"]),
                               int(s[1]["chunk_index"]), str(s[1]["path"])))
    return [(int(r[0]), bm25) for bm25, r in scored[:limit]]
