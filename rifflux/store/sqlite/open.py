"""Opening an SQLite index: its file checked (someone else's file is refused untouched,
a damaged index moved aside and rebuilt), then a connection per owner: the writer's
(the indexer's, which also follows the change log), the query actor's, the
embedder's, and the heartbeat's, each closed when the store is left.

Damage that the check did not see (it runs when it has cause to) and that a step of
opening finds: everything opened is closed, the file moved aside, and the index
opened anew (a read-only open reports it instead). The routine daily check of a large
file (``recovery.CHECK_AT_OPEN_MOST``) runs once the index serves (``OpenStore.later``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path

import aiosqlite
import anyio

from ...config import Settings
from ...errors import IndexDamagedError, IndexDatabaseError
from ..common import Recovery
from ..copies import Copies
from ..languages import Languages
from ..link_records import LinkRecords
from ..protocols import Capabilities, OpenStore
from ..records import Records
from .changes import Follow
from .lease import Lease
from .lexical import Lexical, lexical_plan
from .presence import Presence
from .reader import Pending, Reader
from .recovery import (
    check_in_background,
    damage,
    move_aside,
    needs_check,
    refuse_unreadable,
)
from .rows_now import RowReads
from .schema import connect
from .sql import OnConnection
from .writer import Writer

CAPABILITIES = Capabilities(kind="sqlite", vectors_in_memory=True, lexical_ranking="fts5",
                            lexical_plan=lexical_plan)


@asynccontextmanager
async def open_sqlite(settings: Settings, db: Path, origin: str) -> AsyncIterator[OpenStore]:
    """The index file ``db`` (resolved), open for a process known to the others as
    ``origin``."""
    recovery, check_later = await anyio.to_thread.run_sync(_check, db, settings)
    later = partial(check_in_background, db, read_only=settings.read_only)
    try:
        stack, store = await _open(settings, db, origin, recovery,
                                   later if check_later else None)
    except IndexDatabaseError as exc:
        if settings.read_only or not isinstance(exc, IndexDamagedError):
            raise
        recovery = await anyio.to_thread.run_sync(move_aside, db, str(exc.__cause__ or exc))
        stack, store = await _open(settings, db, origin, recovery, None)
    async with stack:
        yield store


def _check(db: Path, settings: Settings) -> tuple[Recovery | None, bool]:
    """Before opening: someone else's file is refused untouched, and so is one that can
    be read only as it is now by a process that would keep it open (``unshared``); a
    damaged index is moved aside (a read-only open reports the damage instead). True
    beside: the routine check of a large index is due, to run once it is open."""
    read_only = settings.read_only
    refuse_unreadable(db, read_only=read_only, read_snapshot=settings.read_snapshot)
    when = needs_check(db)
    if when != "now":
        return None, when == "later"
    reason = damage(db)
    if reason is None:
        return None, False
    if read_only:
        raise IndexDatabaseError(f"the index {db} is damaged ({reason}); it is open "
                                 "read-only, so it was left as it is")
    return move_aside(db, reason), False


#: How long a heartbeat's write waits for the lock, in milliseconds.
_BEAT_BUSY_MS = 500


async def _open(settings: Settings, db: Path, origin: str, recovery: Recovery | None,
                later: Callable[[], None] | None) -> tuple[AsyncExitStack, OpenStore]:
    read_only, timeout = settings.read_only, settings.busy_timeout_ms
    stack = AsyncExitStack()

    async def connected(*, readonly: bool, busy_ms: int = timeout) -> aiosqlite.Connection:
        conn = await connect(db, busy_timeout_ms=busy_ms, readonly=readonly,
                             snapshot=settings.read_snapshot)
        stack.push_async_callback(_close, conn)
        return conn

    try:
        # read-only: the writer's connection cannot write either (no schema upgrade,
        # no vectors dropped: the index is someone else's)
        writer_conn = await connected(readonly=read_only)
        query_conn = await connected(readonly=True)
        embed_conn = await connected(readonly=True)
        # The heartbeat's, no one else's (see actors.heartbeat). Set up as the readers'
        # are, the schema being the writer's to make: it writes only this process's
        # row and prunes the change log. A beat the lock holds up is given up soon (the
        # next comes in 5 s): never 5 s of a one-shot command's exit behind another's write.
        beat_conn = None if read_only else await connected(
            readonly=True, busy_ms=min(timeout, _BEAT_BUSY_MS))
        # This process among the others on the index: its changes are logged under its
        # origin (before anything that must be closed is made: this reads the file)
        follow = Follow(writer_conn, db, origin)
        await follow.install(writes=not read_only)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stack.aclose()
        raise
    rows = RowReads(db, busy_timeout_ms=timeout, snapshot=settings.read_snapshot)
    stack.callback(rows.close)
    reader = Reader(query_conn, db, rows=rows)
    writer = Writer(writer_conn, db, read_only=read_only, busy_timeout_ms=timeout)
    statements = OnConnection(query_conn, db)  # (the records' and links' reads)
    return stack, OpenStore(
        where=str(db), capabilities=CAPABILITIES, writer=writer, follow=follow,
        reads=reader, records=Records(statements), links=LinkRecords(statements),
        copies=Copies(statements), languages=Languages(statements),
        lexical=Lexical(reader), semantic=None, matrix=reader,
        open_matrix=lambda: _reading(db, settings),
        pending=Pending(writer.missing, Reader(embed_conn, db)),
        presence=None if beat_conn is None else Presence(beat_conn, db, origin),
        lease=None if read_only else Lease(db), recovery=recovery,
        open_reads=lambda: _reading(db, settings), later=later)


async def _close(conn: aiosqlite.Connection) -> None:
    """Close within 2 s, also when cancelled: an open connection keeps a non-daemon
    thread, and so the process, alive."""
    with anyio.move_on_after(2, shield=True):
        await conn.close()


@asynccontextmanager
async def _reading(db: Path, settings: Settings) -> AsyncIterator[Reader]:
    """A short-lived read connection (for loading the vector matrix, or the catalog)."""
    def beside() -> Awaitable[aiosqlite.Connection]:  # (a load reads on two at once)
        return connect(db, busy_timeout_ms=settings.busy_timeout_ms, readonly=True,
                       snapshot=settings.read_snapshot)

    conn = await beside()
    try:
        yield Reader(conn, db, beside=beside)
    finally:
        await _close(conn)
