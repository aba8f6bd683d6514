"""An index connection's statements as Rifflux sees them: what the store asks of a
connection (``Connection``: aiosqlite's, or a one-shot read's, answered at once in the
calling thread: ``direct``), sqlite3's errors translated into Rifflux errors that say
what to do (``mapped_errors``), the two ways a connection holds the database still: a
write transaction (``transaction``) and a snapshot for reads (``snapshot``), and the
statements both stores share (``store.statements``) run on a connection
(``OnConnection``, in SQLite's ``DIALECT``).

Neither aiosqlite nor anyio is imported here: a one-shot read runs these statements
without them."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ...errors import IndexBusyError, IndexDamagedError, IndexDatabaseError
from ..statements import Dialect
from .recovery import is_damage, mark_for_check

T = TypeVar("T")


class Cursor(Protocol):
    """A statement's rows, as ``Connection.execute`` gives them."""

    def fetchone(self) -> Awaitable[sqlite3.Row | None]: ...
    def fetchall(self) -> Awaitable[Iterable[sqlite3.Row]]: ...
    def fetchmany(self, size: int, /) -> Awaitable[Iterable[sqlite3.Row]]: ...
    def close(self) -> Awaitable[None]: ...


class Connection(Protocol):
    """What the store's statements ask of a connection to the index file: aiosqlite's
    (each statement on the connection's thread, awaited by the event loop), or
    ``direct.Immediate`` (sqlite3's, each statement answered at once in the calling
    thread: a one-shot read's, run without an event loop). Rows are tuples."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Awaitable[Cursor]: ...
    def execute_fetchall(self, sql: str, parameters: Any = ...,
                         /) -> Awaitable[Iterable[sqlite3.Row]]: ...
    def executemany(self, sql: str, parameters: Iterable[Iterable[Any]],
                    /) -> Awaitable[Cursor]: ...
    def executescript(self, sql_script: str, /) -> Awaitable[Cursor]: ...
    def close(self) -> Awaitable[None]: ...


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says another connection holds the lock."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translate(exc: sqlite3.Error, db_path: Path | str) -> IndexDatabaseError:
    """The Rifflux error for a sqlite3 error, with a message that says what to do."""
    if is_busy(exc):
        return IndexBusyError(
            f"the index {db_path} is locked by another writer ({exc}); "
            "retry shortly, or stop the other process writing to it"
        )
    text = str(exc).lower()
    if is_damage(text):
        mark_for_check(Path(db_path))
        return IndexDamagedError(
            f"the index {db_path} is damaged ({exc}); Rifflux moves it aside and rebuilds it "
            "from your markdown files the next time it opens it (restart it); the files "
            "themselves are untouched"
        )
    if "full" in text:
        return IndexDatabaseError(
            f"the disk holding the index {db_path} is full ({exc}): nothing half-written was "
            "kept and searches go on; free some space and reindex"
        )
    if "disk i/o error" in text:
        return IndexDatabaseError(
            f"the index {db_path} could not be written ({exc}: a full disk, a file size "
            "limit, a file made read-only or immutable, or a failing drive); nothing "
            "half-written was kept; fix that and reindex"
        )
    if "readonly" in text or "read-only" in text:
        return IndexDatabaseError(
            f"the index {db_path} cannot be written ({exc}: a read-only file, folder or file "
            "system); make it writable, or point --db (RIFFLUX_DB_PATH) somewhere writable"
        )
    if "unable to open" in text:
        return IndexDatabaseError(
            f"cannot open the index {db_path} ({exc}): check that its folder exists and is "
            "writable, or point --db (RIFFLUX_DB_PATH) elsewhere"
        )
    return IndexDatabaseError(f"index database error on {db_path}: {exc}")


@asynccontextmanager
async def transaction(conn: Connection) -> AsyncIterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception, cancellation included, rolls it
    back. The ``BEGIN`` is inside: cancelled while it waits for another process's lock,
    aiosqlite still runs it later on its thread, and only the ``ROLLBACK`` queued after
    it (shielded, so that it is queued at all) leaves the connection out of the
    transaction for its next write."""
    import anyio  # (a transaction runs with an event loop: never in a one-shot read)

    try:
        await conn.execute("BEGIN IMMEDIATE")
        yield
        await conn.execute("COMMIT")
    except BaseException:
        with anyio.CancelScope(shield=True), contextlib.suppress(sqlite3.Error):
            await conn.execute("ROLLBACK")  # (an error may have ended it already)
        raise


@asynccontextmanager
async def snapshot(conn: Connection, db_path: Path) -> AsyncIterator[None]:
    """``BEGIN`` … ``COMMIT`` around reads only: every read inside sees the database as the
    first one found it (WAL), whatever other connections commit meanwhile. Ended as
    ``transaction`` ends, so a cancelled ``BEGIN`` never leaves the connection inside."""
    import anyio  # (as transaction's)

    try:
        with mapped_errors(db_path):
            await conn.execute("BEGIN")
        yield
        with mapped_errors(db_path):
            await conn.execute("COMMIT")
    except BaseException:
        with anyio.CancelScope(shield=True), contextlib.suppress(sqlite3.Error):
            await conn.execute("ROLLBACK")
        raise


@contextmanager
def mapped_errors(db_path: Path | str) -> Iterator[None]:
    """Translate sqlite3 errors raised inside the block (httpcore's map_exceptions)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, db_path) from exc


def _json_array(values: Collection[int] | Collection[str]) -> str:
    return json.dumps(list(values))


#: SQLite's spellings of what the stores' shared statements say differently.
DIALECT = Dialect(position="instr", bytewise="BINARY",
                  among="IN (SELECT value FROM json_each(?))", listed=_json_array,
                  like="LIKE ? ESCAPE '\\'")


class OnConnection:
    """The shared statements (``store.statements.Writing``) on one connection: the
    reader's, or the writer's."""

    dialect = DIALECT

    def __init__(self, conn: Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    async def fetch(self, sql: str, *args: object) -> list[sqlite3.Row]:
        with mapped_errors(self.db_path):
            return list(await self.conn.execute_fetchall(sql, args))

    async def execute(self, sql: str, *args: object) -> None:
        with mapped_errors(self.db_path):
            await self.conn.execute(sql, args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                yield

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        return await work()
