"""A connection of its own that comes back after the server went away: the writer's
(which also follows the change log) and the heartbeat's.

The pool of search connections needs none of this: asyncpg's pool makes a fresh
connection in place of one the server closed. A connection of its own is made
again by ``Session.run``: a unit of work (one transaction, or one read) that fails
because the connection was lost is run again on a new one, once the server
answers. Attempts are spaced out (``BACKOFF``); ``wait`` says how long a unit may
wait for the server before it fails with ``IndexUnreachableError``:

- the writer's work waits (``WRITER_WAIT``): a running job's transaction is run
  again once the server is back, and the jobs queued behind it stay queued; a job
  whose transaction still cannot run after that long fails, saying why;
- the change log's reads and the heartbeat never wait (each is tried again at its
  next tick), but each of their attempts may reconnect.

A unit run again must be whole: every writer method is one transaction, which the
server rolled back when the connection was lost (a connection lost during its
``COMMIT`` may have committed it: the unit run again then finds its own work
done, and the change log, read once again in full after a reconnect, tells the
query actor the rest). Whoever needs the connection set up (the origin of its
writes, ``LISTEN``) registers a ``setup``, run on every new connection.

``OnSession`` runs the statements both stores share (``store.statements.Writing``)
on a session: its units of work are ``Session.run``'s.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeAlias, TypeVar

import anyio
import asyncpg

from ...errors import IndexUnreachableError
from ...location import DatabaseUrl
from .connection import DIALECT, close, connect, mapped_errors, numbered, transaction

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds between attempts to reach the server again (the last repeats).
BACKOFF = (0.25, 0.5, 1.0, 2.0, 4.0)
#: How long the writer's work waits for the server to come back before it fails.
WRITER_WAIT = 60.0

Raw: TypeAlias = "asyncpg.Connection[asyncpg.Record]"
Setup = Callable[[Raw], Awaitable[None]]


class Session:
    """One connection, made again when lost; used by one task at a time."""

    def __init__(self, where: DatabaseUrl, *, seconds: float, vectors: bool = True,
                 wait: float = 0.0) -> None:
        self.where = where
        self.wait = wait
        #: How long a connection is tried for.
        self.seconds = seconds
        self._seconds = seconds
        self._vectors = vectors
        self._conn: Raw | None = None
        self._setups: list[Setup] = []
        self._failures = 0
        self._next_try = 0.0
        self._error: IndexUnreachableError | None = None
        self._running = False
        #: How many connections were made (a follower reads the log in full after a new one).
        self.generation = 0

    @property
    def conn(self) -> Raw:
        """The connection, while it is open."""
        if self._conn is None or self._conn.is_closed():
            raise self._error or IndexUnreachableError(
                f"the connection to the PostgreSQL index {self.where} was lost: check that "
                "the server is running; Rifflux reconnects when it is back")
        return self._conn

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def open(self) -> None:
        """Connect now (at open: an unreachable server fails the open at once)."""
        await self._connected(anyio.current_time())

    async def add_setup(self, setup: Setup) -> None:
        """Run ``setup`` on the connection now (if open) and on every new one."""
        self._setups.append(setup)
        if self.connected:
            await setup(self.conn)

    async def run(self, work: Callable[[], Awaitable[T]], *, wait: float | None = None) -> T:
        """``work`` on an open connection; run again on a new one when the connection was
        lost, for up to ``wait`` seconds (the session's by default). Work run inside
        other work is not retried on its own: the outer unit is run again whole."""
        if self._running:
            return await work()
        deadline = anyio.current_time() + (self.wait if wait is None else wait)
        self._running = True
        try:
            while True:
                await self._connected(deadline)
                try:
                    return await work()
                except IndexUnreachableError as exc:
                    self._lost(exc)
                    if anyio.current_time() >= deadline:
                        raise
                    logger.warning("%s; reconnecting", exc)
        finally:
            self._running = False

    @asynccontextmanager
    async def unit(self, *, wait: float = 0.0) -> AsyncIterator[None]:
        """One unit of work that is not run again here (its caller tries it again later):
        on an open connection (made again, waiting up to ``wait`` seconds); a connection
        lost inside fails it, and the next unit makes a new one."""
        if self._running:
            yield
            return
        await self._connected(anyio.current_time() + wait)
        self._running = True
        try:
            yield
        except IndexUnreachableError as exc:
            self._lost(exc)
            raise
        finally:
            self._running = False

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await close(conn)

    def _lost(self, exc: IndexUnreachableError) -> None:
        """The connection cannot be trusted any more: the next unit makes a new one."""
        conn, self._conn, self._error = self._conn, None, exc
        if conn is not None and not conn.is_closed():
            conn.terminate()

    async def _connected(self, deadline: float) -> None:
        """An open connection, made again (attempts spaced by ``BACKOFF``) until
        ``deadline``; past it, the last attempt's error."""
        while not self.connected:
            now = anyio.current_time()
            if now < self._next_try:
                if self._next_try > deadline:
                    raise self._unreachable()
                await anyio.sleep(self._next_try - now)
            try:
                conn = await connect(self.where, seconds=self._seconds, vectors=self._vectors)
            except IndexUnreachableError as exc:
                self._failed(exc)
                continue
            try:
                for setup in self._setups:
                    await setup(conn)
            except IndexUnreachableError as exc:
                await close(conn)
                self._failed(exc)
                continue
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await close(conn)
                raise
            if self.generation:
                logger.warning("reconnected to the PostgreSQL index %s", self.where)
            self._conn, self._failures, self._next_try, self._error = conn, 0, 0.0, None
            self.generation += 1

    def _failed(self, exc: IndexUnreachableError) -> None:
        self._error = exc
        self._next_try = anyio.current_time() + BACKOFF[min(self._failures, len(BACKOFF) - 1)]
        self._failures += 1

    def _unreachable(self) -> IndexUnreachableError:
        return self._error or IndexUnreachableError(
            f"cannot reach the PostgreSQL index {self.where}: check that the server is "
            "running; Rifflux reconnects when it is back")


class _OnSession(Protocol):
    @property
    def session(self) -> Session: ...


S = TypeVar("S", bound=_OnSession)


def retried(wait: float | None = None) -> Callable[
        [Callable[Concatenate[S, P], Awaitable[T]]],
        Callable[Concatenate[S, P], Coroutine[Any, Any, T]]]:
    """A method run by ``self.session.run`` (a unit of work: run again whole on a new
    connection when the connection was lost), waiting up to ``wait`` seconds (the
    session's by default)."""

    def wrap(method: Callable[Concatenate[S, P], Awaitable[T]],
             ) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
        async def again(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return await self.session.run(lambda: method(self, *args, **kwargs), wait=wait)

        functools.update_wrapper(again, method)
        return again

    return wrap


class OnSession:
    """The shared statements (``store.statements.Writing``) on a session's connection,
    whichever it is now."""

    dialect = DIALECT

    def __init__(self, session: Session) -> None:
        self.session = session

    async def fetch(self, sql: str, *args: object) -> Sequence[asyncpg.Record]:
        with mapped_errors(self.session.where):
            return await self.session.conn.fetch(numbered(sql), *args)

    async def execute(self, sql: str, *args: object) -> None:
        with mapped_errors(self.session.where):
            await self.session.conn.execute(numbered(sql), *args)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        with mapped_errors(self.session.where):
            async with transaction(self.session.conn):
                yield

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        return await self.session.run(work)
