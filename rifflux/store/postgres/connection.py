"""Connections to a PostgreSQL index through asyncpg, its transactions, and the
translation of every asyncpg error into a :mod:`rifflux.errors` class (at the
boundary, as ``store.sqlite.sql.mapped_errors`` does for SQLite).

Writes are serialised across every process on the database, as SQLite serialises
them: each writing transaction first takes the transaction-level advisory lock
``WRITE_LOCK``. So the change log's sequence numbers (assigned inside the
transaction) are in commit order, and a follower that has read up to a number has
seen every commit before it. (The history's batches of commits take it last, before
their change log row: ``store.postgres.history``.)

The statements both stores share (``store.statements``) run here in PostgreSQL's
``DIALECT``, their ``?`` placeholders numbered (``numbered``): on the pool
(``OnPool``), or on a session of its own (``session.OnSession``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import lru_cache
from typing import TypeAlias
from urllib.parse import urlsplit

import anyio
import asyncpg
import asyncpg.pool
from asyncpg.transaction import Transaction
from pgvector.asyncpg import register_vector

from ...errors import (
    IndexBusyError,
    IndexDatabaseError,
    IndexUnreachableError,
    NotAnIndexError,
    RiffluxError,
)
from ...location import DatabaseUrl
from ..statements import Dialect

#: The first key of every advisory lock Rifflux takes (``pg_advisory_*lock(int, int)``).
LOCKS = 0x52694678
#: Second keys: the writers' lock, the embedding lease, schema creation and upgrades.
WRITE_LOCK, EMBEDDING_LEASE, SCHEMA_LOCK = 1, 2, 3

#: A connection of its own, or one lent by a pool.
Connection: TypeAlias = (
    "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]")
#: A pool of connections.
Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"


class _OneLine(logging.Filter):
    """asyncpg's pool logs each failed attempt to reconnect with its traceback (about 20
    lines, several a restart) while Rifflux says the same once, in words: one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


logging.getLogger("asyncpg.pool").addFilter(_OneLine())

_UNREACHABLE_STATES = ("08", "57P")  # connection exceptions; shutdown, crash, starting up
_BUSY_STATES = ("40001", "40P01", "55P03")  # serialization, deadlock, lock not available


def translate(exc: BaseException, where: DatabaseUrl) -> RiffluxError:
    """The Rifflux error for what asyncpg (or the network under it) raised, with a
    message that names the database (never its password) and says what to do."""
    state = str(getattr(exc, "sqlstate", "") or "")
    closed = isinstance(exc, asyncpg.InterfaceError) and "closed" in str(exc)
    # a connection cut in the middle of an operation can leave asyncpg's protocol in a
    # state it never leaves ("cannot switch to state 15; another operation is in
    # progress"): lost as surely as a closed one, and a new one is the way out
    broken = isinstance(exc, asyncpg.InternalClientError)
    if isinstance(exc, OSError | TimeoutError) or closed or broken or \
            state.startswith(_UNREACHABLE_STATES):
        return IndexUnreachableError(
            f"cannot reach the PostgreSQL index {where} ({type(exc).__name__}: {exc}): check "
            "that the server is running and reachable from here, and the host, port, user "
            "and password in the URL; searches fail until it is back")
    if state == "3D000":
        return IndexDatabaseError(
            f"the database of {where} does not exist ({exc}): create it (createdb NAME, or "
            "CREATE DATABASE) or fix the URL (--db, RIFFLUX_DB_PATH)")
    if state.startswith("28"):
        return IndexDatabaseError(
            f"PostgreSQL refused the login to {where} ({exc}): check the user and password "
            "in the URL and the server's pg_hba.conf")
    if state in _BUSY_STATES:
        return IndexBusyError(f"the index {where} is busy ({exc}); retry shortly")
    if state == "53100":
        return IndexDatabaseError(
            f"the disk of the PostgreSQL server holding {where} is full ({exc}): nothing "
            "half-written was kept and searches go on; free some space and reindex")
    if state == "25006":
        return IndexDatabaseError(
            f"{where} is read-only ({exc}: a replica, or a read-only transaction): open it "
            "read-only (--read-only) to search it, or point at the primary to index")
    if state == "42501":
        return IndexDatabaseError(
            f"the role in {where} lacks a privilege Rifflux needs ({exc}): grant it (see "
            "the README's PostgreSQL section) or use the role that created the index")
    if state == "42P01":
        return NotAnIndexError(
            f"{where} does not hold a Rifflux index ({exc}): open it once without "
            "read_only to create one, or point --db elsewhere")
    return IndexDatabaseError(f"index database error on {where}: {type(exc).__name__}: {exc}")


@contextmanager
def mapped_errors(where: DatabaseUrl) -> Iterator[None]:
    """Translate asyncpg's and the network's errors raised inside the block."""
    try:
        yield
    except RiffluxError:
        raise
    except (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError,
            OSError, TimeoutError) as exc:
        raise translate(exc, where) from exc


def _tls(url: str) -> bool | None:
    """No TLS to a server on this machine unless the URL asks for it (``sslmode``): asyncpg
    would ask the server for it first (a round trip per connection), and a connection cut
    during that question leaves an exception nobody awaits (a server restarting)."""
    parts = urlsplit(url)
    local = parts.hostname in (None, "", "localhost", "127.0.0.1", "::1") or (
        parts.hostname or "").startswith("/")
    asked = "sslmode" in parts.query or "PGSSLMODE" in os.environ
    return False if local and not asked else None  # (None: the URL's, or the default)


async def connect(where: DatabaseUrl, *, seconds: float,
                  vectors: bool = True) -> asyncpg.Connection[asyncpg.Record]:
    """A connection, given up after ``seconds`` (``vectors``: with pgvector's type known,
    once the schema exists)."""
    with mapped_errors(where):
        conn = await asyncpg.connect(where.url, timeout=seconds, ssl=_tls(where.url),
                                     server_settings={"application_name": "rifflux"})
        try:
            if vectors:
                await register_vector(conn)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await close(conn)
            raise
    return conn


async def close(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    """Close within 2 s, also when cancelled; a server that went away is let go."""
    with anyio.move_on_after(2, shield=True), contextlib.suppress(Exception):
        await conn.close()
    if not conn.is_closed():
        conn.terminate()


async def given_back(conn: asyncpg.Connection[asyncpg.Record]) -> None:
    """A pooled connection given back (a pool's ``reset``): nothing to undo but a
    transaction left open (the pools' connections take no session lock, LISTEN nothing
    and set nothing), so no round trip (asyncpg's default runs four statements at every
    release: a search's time)."""
    if conn.is_in_transaction():
        await conn.execute("ROLLBACK")


def tls(where: DatabaseUrl) -> bool | None:
    """What a connection to ``where`` asks of TLS (``_tls``: none on this machine unless
    asked)."""
    return _tls(where.url)


@asynccontextmanager
async def transaction(conn: Connection, *, write: bool = True) -> AsyncIterator[None]:
    """One transaction; a writing one holds the writers' lock until it ends. Any
    exception, cancellation included, rolls it back (shielded, so that the connection
    is out of the transaction for its next use)."""
    async with _ended(conn.transaction()):
        if write:
            await writers_lock(conn)
        yield


async def writers_lock(conn: Connection) -> None:
    """The writers' lock, taken by the transaction on ``conn`` until it ends."""
    await conn.execute("SELECT pg_advisory_xact_lock($1, $2)", LOCKS, WRITE_LOCK)


@asynccontextmanager
async def snapshot(conn: Connection) -> AsyncIterator[None]:
    """Reads only, all seeing one state of the database (a repeatable-read, read-only
    transaction), whatever other connections commit meanwhile; ended as ``transaction``
    ends."""
    async with _ended(conn.transaction(isolation="repeatable_read", readonly=True)):
        yield


@asynccontextmanager
async def _ended(tr: Transaction) -> AsyncIterator[None]:
    """``tr`` started, then committed; any exception, cancellation included, rolls it
    back (shielded, so that the connection is out of the transaction for its next use)."""
    await tr.start()
    try:
        yield
    except BaseException:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await tr.rollback()
        raise
    await tr.commit()


#: PostgreSQL's spellings of what the stores' shared statements say differently.
DIALECT = Dialect(position="strpos", bytewise='"C"', among="= ANY(?)", listed=list,
                  like="LIKE ?")


@lru_cache(maxsize=256)
def numbered(sql: str, *, start: int = 0) -> str:
    """A shared statement's ``?`` placeholders as asyncpg's ``$1``, ``$2``, ... in order
    (numbered from ``start + 1``: a part of a statement holding ``start`` before it).
    A ``?`` inside quotes (a string literal, a quoted name) is text, left as it is
    (the shared statements hold none; a doubled quote inside closes and opens again)."""
    out: list[str] = []
    quote, placed = "", start
    for ch in sql:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "?":
            placed += 1
            out.append(f"${placed}")
            continue
        out.append(ch)
    return "".join(out)


class OnConnection:
    """The shared statements (``store.statements.Statements``) on one connection of its
    own (reads only: ``store.migrate``'s source, held in one snapshot)."""

    dialect = DIALECT

    def __init__(self, conn: Connection, where: DatabaseUrl) -> None:
        self.conn = conn
        self.where = where

    async def fetch(self, sql: str, *args: object) -> Sequence[asyncpg.Record]:
        with mapped_errors(self.where):
            return await self.conn.fetch(numbered(sql), *args)


class OnPool:
    """The shared statements (``store.statements.Statements``) on the pool: each on a
    connection it lends (reads only)."""

    dialect = DIALECT

    def __init__(self, pool: Pool, where: DatabaseUrl) -> None:
        self.pool = pool
        self.where = where

    async def fetch(self, sql: str, *args: object) -> Sequence[asyncpg.Record]:
        with mapped_errors(self.where):
            return await self.pool.fetch(numbered(sql), *args)
