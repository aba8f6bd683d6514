"""A bulk load into an empty PostgreSQL index (``rifflux migrate``): the database the
row-by-row path leaves, made faster.

Row by row, every statement that writes chunks also counts their words (the triggers of
``word_counts``: ``lexicon``, ``lexical_totals``) and grows two indexes a row at a time
(the GIN index of their tokens, and pg_textsearch's BM25 index), and every vector grows
pgvector's HNSW graph. A bulk load (``begin``, into an index that holds no chunk yet)
turns the chunks' word-count triggers off and leaves those indexes out while the files,
chunks and vectors are written (by the writer, as ever). Each batch's words are counted
as it is made ready (``Words``: split as the triggers split them, in the worker thread
that makes the batch's tokens), and once every chunk is written ``finish_words``
stores the counts in one statement (``stored_lexicon``; the totals counted from the
table), turns the triggers on again, in one transaction, and builds the GIN and BM25
indexes whole, on a connection of its own, while the writer's copies the vectors, gives
each chunk its vector and builds the HNSW index (``Writer.make_vector_indexes``): both
of the server's cores busy. ``done`` ends the load (``ANALYZE``, the mark removed).

While a bulk load runs, ``meta`` holds ``BULK_LOAD`` (when it began): an index found
that way by anyone but the load itself (it died half way) is refused (``check``), saying
to drop the database and copy again. A server restart during the load is waited for,
as the writer waits for it, and the load goes on: the writer's statements are run
again whole, and each step of ``finish_words`` may run again (its counts are set, not
added to, and its indexes made when missing).
"""

from __future__ import annotations

import re
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence

from ...errors import IndexDatabaseError
from ...location import DatabaseUrl
from ..written import FileToWrite
from .connection import Connection, mapped_errors, transaction
from .schema import BM25, WORDS_INDEX, extension
from .session import Session
from .writer import with_lexemes

#: The key in ``meta`` of a bulk load under way (its value: when it began, Unix time).
BULK_LOAD = "bulk_load"
#: The chunks' word-count triggers (``schema._WORD_COUNTS``), off during a bulk load.
_TRIGGERS = ("chunks_words_in", "chunks_words_out")
#: The indexes of the chunks' words a bulk load builds at the end.
_LEXICAL_INDEXES = ("chunks_words", "chunks_bm25")
#: The tables searches read, their columns the planner weighs (not the texts and the
#: vectors themselves: sampling those took 8 s of a load of 100,000 chunks).
_ANALYZE = ("ANALYZE roots, files, links, lexicon, lexical_totals, "
            "chunks (id, file_id, chunk_index, content_hash, lang, length), "
            "chunk_vectors (chunk_id, file_id), embeddings (content_hash, model)")
#: Where a chunk's tokens are split (``schema.TERMS``' ``regexp_split_to_table``).
_SPLIT = re.compile(r"[ |]+")
#: Memory for building the GIN and BM25 indexes (per connection; the HNSW index sizes its
#: own): a GIN build flushes its sorted lists each time this fills; a million chunks' lists
#: fill 256 MB many times over.
_GIN_MEMORY = "1GB"


async def begin(session: Session) -> None:
    """Start a bulk load into the index of ``session``, which holds no chunk yet: the
    chunks' word counts and lexical indexes left for ``finish``."""

    async def start() -> None:
        conn = session.conn
        with mapped_errors(session.where):
            async with transaction(conn):
                if await conn.fetchval("SELECT EXISTS (SELECT 1 FROM chunks)"):
                    raise IndexDatabaseError(
                        f"{session.where} holds chunks already: a bulk load goes into an "
                        "empty index only (a new database)")
                await conn.execute(
                    "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO "
                    "UPDATE SET value = excluded.value", BULK_LOAD, repr(time.time()))
                for trigger in _TRIGGERS:
                    await conn.execute(f"ALTER TABLE chunks DISABLE TRIGGER {trigger}")
                for index in _LEXICAL_INDEXES:
                    await conn.execute(f"DROP INDEX IF EXISTS {index}")

    await session.run(start)


class Words:
    """The chunks' words counted as the load writes them, as the triggers count them
    (``schema.TERMS``: each chunk's distinct tokens, split at spaces and ``|``): each batch
    counted when it is made ready (``ready``, in a worker thread), and added once the
    writer has stored it (``written``; batches are written in the order made ready). A
    batch the writer runs again after a lost connection is stored once, and counted once."""

    def __init__(self) -> None:
        self.chunks: Counter[str] = Counter()
        self._ready: deque[Counter[str]] = deque()

    def ready(self, files: Sequence[FileToWrite]) -> list[FileToWrite]:
        out = with_lexemes(files)
        counted: Counter[str] = Counter()
        for f in out:
            for text in f.lexemes or ():
                counted.update(set(_SPLIT.split(text)))
        counted.pop("", None)
        self._ready.append(counted)
        return out

    def written(self) -> None:
        self.chunks.update(self._ready.popleft())


async def finish_words(where: DatabaseUrl, words: Words, *, seconds: float) -> None:
    """The chunks' word counts stored (``words``, and the totals counted from every
    chunk), their triggers turned on again (one transaction), then the GIN and BM25
    indexes built whole; on a connection of its own, made again (and the step run again)
    when the server restarts meanwhile."""
    session = Session(where, seconds=seconds, vectors=False, wait=session_wait(seconds))
    try:
        await session.run(lambda: _counted(session.conn, where, words))
        await session.run(lambda: _indexed(session.conn, where))
    finally:
        await session.close()


async def done(session: Session) -> None:
    """The bulk load over: the planner's statistics of the tables gathered (``ANALYZE``:
    autovacuum would, some time later; the first searches would be planned without
    them; row by row, autovacuum gathers them as the index grows), and the load's mark
    removed (the index is whole)."""

    async def end() -> None:
        with mapped_errors(session.where):
            await session.conn.execute(_ANALYZE)
            await session.conn.execute("DELETE FROM meta WHERE key = $1", BULK_LOAD)

    await session.run(end)


async def check(conn: Connection, where: DatabaseUrl) -> None:
    """Refuse an index whose bulk load did not finish (the copy died half way)."""
    began = await conn.fetchval("SELECT value FROM meta WHERE key = $1", BULK_LOAD)
    if began is None:
        return
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(began)))
    raise IndexDatabaseError(
        f"{where} holds an index whose copy by rifflux migrate (begun {since}) has not "
        "finished: its word counts and search indexes are not built. If that copy is no "
        "longer running, drop the database (dropdb NAME, or DROP DATABASE) and run "
        "rifflux migrate again into a new, empty one")


def session_wait(seconds: float) -> float:
    """How long a bulk load's statements wait for a server that went away (as the
    writer's do: ``session.WRITER_WAIT``, or longer when connecting takes longer)."""
    from .session import WRITER_WAIT

    return max(WRITER_WAIT, seconds)


async def _counted(conn: Connection, where: DatabaseUrl, words: Words) -> None:
    with mapped_errors(where):
        async with transaction(conn):
            await conn.execute(
                "UPDATE lexical_totals SET chunks = t.c, tokens = t.t FROM (SELECT count(*) "
                "AS c, COALESCE(sum(length), 0) AS t FROM chunks) t")
            await conn.execute("DELETE FROM lexicon")
            await stored_lexicon(conn, words.chunks)
            for trigger in _TRIGGERS:
                await conn.execute(f"ALTER TABLE chunks ENABLE TRIGGER {trigger}")


async def stored_lexicon(conn: Connection, chunks: Mapping[str, int]) -> None:
    """Each word's count of chunks written into ``lexicon``. Not by ``COPY``: asyncpg's
    COPY, begun on a connection whose server has just cut it (its last message read,
    the connection's end not yet), fails and leaves behind a future holding the lost
    connection's error that nobody awaits (asyncio logs it; the tests fail on it)."""
    await conn.execute(
        "INSERT INTO lexicon(term, chunks) SELECT * FROM unnest($1::text[], $2::int[])",
        list(chunks), list(chunks.values()))


async def _indexed(conn: Connection, where: DatabaseUrl) -> None:
    with mapped_errors(where):
        await conn.execute(f"SET maintenance_work_mem = '{_GIN_MEMORY}'")
        await conn.execute(WORDS_INDEX)
        if await extension(conn, "pg_textsearch"):
            await conn.execute(BM25)
        await conn.execute("RESET maintenance_work_mem")


