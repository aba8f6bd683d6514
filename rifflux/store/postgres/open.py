"""Opening a PostgreSQL index: the schema made or checked (``schema``), then the
connections: the writer's (the indexer's, which also follows the change log), a
pool for the query actor's reads and search legs and the embedder's reads, the
heartbeat's, and the embedding lease's (made when the lease is first tried). All
are closed when the store is left.

A read-only open (``--read-only``, a search by ``db_path``) never writes: it
checks the schema, follows the change log and reads, so it may point at a
replica. Every process uses at most ``POOL_SIZE + 3`` connections.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import asyncpg
from pgvector.asyncpg import register_vector

from ...config import Settings
from ...location import DatabaseUrl
from ..copies import Copies
from ..languages import Languages
from ..link_records import LinkRecords
from ..protocols import Capabilities, OpenStore
from ..records import Records
from . import bulk
from .changes import Follow
from .connection import OnPool, close, connect, given_back, mapped_errors
from .lexical import Lexical, planner
from .presence import Lease, Presence
from .reads import Reads
from .schema import check_version, ensure_schema, lexical_ranking
from .semantic import Semantic
from .session import WRITER_WAIT, Session
from .writer import Writer

#: Connections for searches and reads (each runs on one of its own).
POOL_SIZE = 8
#: A pooled connection unused this long is closed.
_POOL_IDLE = 60.0

_FALLBACK_NOTE = (
    "lexical ranking is PostgreSQL's ts_rank_cd, not BM25: pg_textsearch is not installed "
    "in this database (install it on the server, add it to shared_preload_libraries, "
    "restart the server and open the index again)")


@asynccontextmanager
async def open_postgres(settings: Settings, where: DatabaseUrl,
                        origin: str) -> AsyncIterator[OpenStore]:
    """The index in the database ``where``, open for a process known to the others as
    ``origin``."""
    read_only = settings.read_only
    timeout = max(settings.busy_timeout_ms / 1000, 1.0)
    async with AsyncExitStack() as stack:

        first = await connect(where, seconds=timeout, vectors=False)
        try:
            if read_only:
                await check_version(first, where)
            else:
                await ensure_schema(first, where)
            with mapped_errors(where):
                await bulk.check(first, where)  # (a copy that died half way is refused)
        finally:
            await close(first)
        session = Session(where, seconds=timeout, wait=0.0 if read_only else WRITER_WAIT)
        stack.push_async_callback(session.close)
        await session.open()
        with mapped_errors(where):
            pool = await asyncpg.create_pool(
                where.url, min_size=1, max_size=POOL_SIZE, timeout=timeout,
                max_inactive_connection_lifetime=_POOL_IDLE, init=register_vector,
                reset=given_back, server_settings={"application_name": "rifflux"})
        stack.push_async_callback(_close_pool, pool)
        follow = Follow(session, origin)
        await follow.install(writes=not read_only)
        ranking = await lexical_ranking(session.conn, where)
        presence = None
        if not read_only:
            beat = Session(where, seconds=timeout)
            stack.push_async_callback(beat.close)
            await beat.open()
            presence = Presence(beat, origin)
        lease = None if read_only else Lease(where, timeout=timeout)
        if lease is not None:
            stack.push_async_callback(lease.give_back)
        reads = Reads(pool, where)
        statements = OnPool(pool, where)  # (the records' and links' reads)
        yield OpenStore(
            where=where.redacted,
            capabilities=Capabilities(
                kind="postgresql", vectors_in_memory=False, lexical_ranking=ranking,
                lexical_plan=planner(ranking),
                note=None if ranking == "bm25" else _FALLBACK_NOTE),
            writer=Writer(session, read_only=read_only), follow=follow,
            reads=reads, records=Records(statements), links=LinkRecords(statements),
            copies=Copies(statements), languages=Languages(statements),
            lexical=Lexical(pool, where, ranking),
            semantic=Semantic(pool, where),
            matrix=None, open_matrix=None, pending=reads,
            presence=presence,
            lease=lease)


async def _close_pool(pool: asyncpg.Pool) -> None:
    """Close within 2 s, also when cancelled; what is left then (a server gone away) is
    dropped."""
    with anyio.move_on_after(2, shield=True), contextlib.suppress(Exception):
        await pool.close()
    pool.terminate()
