"""The history actor's rows, on either store: opened on connections of the history's own
(the history reads and writes beside the indexer, in short transactions), and closed
when the actor ends."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiosqlite
import anyio

from ..config import Settings
from ..history.rows import HistoryFollowing, HistoryRows
from ..location import DatabaseUrl
from ..store.sqlite.history_changes import HistoryFollow


@asynccontextmanager
async def opened_rows(settings: Settings, origin: str) -> AsyncIterator[
        tuple[HistoryRows, HistoryRows | None, HistoryFollowing]]:
    """The rows searches read, those the reads write (None: a read-only open), on
    connections of the history's own, and how other processes' writes are followed
    (``store.sqlite.history_changes``, ``store.postgres.history_changes``; this
    process's own logged under ``origin``)."""
    where, s = settings.db_path, settings
    if isinstance(where, DatabaseUrl):
        from ..store.postgres.history import open_history

        async with open_history(where, seconds=max(s.busy_timeout_ms / 1000, 1.0),
                                origin=origin) as (rows, follow):
            yield rows, None if s.read_only else rows, follow
        return
    from ..store.sqlite.history import HistoryRows as SqliteRows
    from ..store.sqlite.schema import connect

    db = where.expanduser().resolve()
    async with contextlib.AsyncExitStack() as stack:

        async def closed(conn: aiosqlite.Connection) -> None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await conn.close()

        reader = await connect(db, busy_timeout_ms=s.busy_timeout_ms, readonly=True,
                               snapshot=s.read_snapshot)
        stack.push_async_callback(closed, reader)
        writer = None
        if not s.read_only:
            writer = await connect(db, busy_timeout_ms=s.busy_timeout_ms)
            stack.push_async_callback(closed, writer)
        yield (SqliteRows(reader, db), None if writer is None else SqliteRows(writer, db),
               HistoryFollow(reader, db, origin))
