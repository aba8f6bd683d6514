"""Which processes have a PostgreSQL index open (``processes``, as in SQLite: each
writing process's row, refreshed by its heartbeat), and the embedding lease.

The lease is the session-level advisory lock ``EMBEDDING_LEASE``, held by a
connection of its own: PostgreSQL releases it when that session ends, and so when
its process dies, however (a killed process's connection is closed by its kernel;
a machine that vanishes is noticed by the server's TCP keepalives). Another
process takes it at its next try.

A server restart ends the session, and the lease, unseen by its holder until it uses
the connection again; another process may take it meanwhile and embed the same texts.
So each take writes a token of its own to ``meta`` (``LEASE_KEY``), on the lease's
session right after the lock is granted, and the writer stores a batch's vectors only
in a transaction that finds the token it was embedded under there (``confirm_lease``,
which holds the row until that transaction ends: a new holder's token waits for it). A
batch embedded under a lease lost meanwhile is stored by nobody but the new holder.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import anyio
import asyncpg

from ...errors import LeaseLostError, RiffluxError
from ...location import DatabaseUrl
from ...types import ProcessInfo
from .changes import prune
from .connection import EMBEDDING_LEASE, LOCKS, Connection, close, connect, mapped_errors
from .session import Session, retried

#: A process not seen for this long is no longer listed.
SEEN_WITHIN = 60.0
#: The key in ``meta`` of the token of the lease's last take.
LEASE_KEY = "embedding_lease"


async def confirm_lease(conn: Connection, token: str, where: DatabaseUrl) -> None:
    """Inside a writing transaction: the lease is still the take known by ``token``
    (its row held until the transaction ends), else ``LeaseLostError``."""
    if await conn.fetchval("SELECT 1 FROM meta WHERE key = $1 AND value = $2 FOR SHARE",
                           LEASE_KEY, token) is None:
        raise LeaseLostError(
            f"the embedding lease on {where} was lost (its session ended: a server restart?) "
            "and may be another process's: this batch's vectors are not stored, the lease's "
            "holder embeds these texts")


class Presence:
    """On a session of its own, each call tried once (the heartbeat's next beat tries
    again, on a new connection if the server went away)."""

    def __init__(self, session: Session, origin: str) -> None:
        self.session = session
        self.where = session.where
        self.origin = origin
        self.started = time.time()

    @property
    def conn(self) -> Connection:
        return self.session.conn

    @retried(wait=0)
    async def beat(self, roles: list[str]) -> None:
        with mapped_errors(self.where):
            await self.conn.execute(
                "INSERT INTO processes(origin, pid, roles, started_at, last_seen) "
                "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (origin) DO UPDATE SET "
                "roles = excluded.roles, last_seen = excluded.last_seen",
                self.origin, os.getpid(), json.dumps(roles), self.started, time.time())

    @retried(wait=0)
    async def leave(self) -> None:
        with mapped_errors(self.where):
            await self.conn.execute("DELETE FROM processes WHERE origin = $1 OR last_seen < $2",
                                    self.origin, time.time() - 24 * 3600)

    @retried(wait=0)
    async def others(self) -> list[ProcessInfo]:
        with mapped_errors(self.where):
            rows = await self.conn.fetch(
                "SELECT pid, roles, last_seen FROM processes WHERE origin != $1 AND "
                "last_seen >= $2 ORDER BY last_seen DESC", self.origin, time.time() - SEEN_WITHIN)
        return [{"pid": int(r[0]), "roles": list(json.loads(r[1])), "last_seen": float(r[2])}
                for r in rows]

    @retried(wait=0)
    async def prune_changes(self) -> None:
        await prune(self.conn, self.where)


class Lease:
    """The embedding lease: an advisory lock on a connection of its own, made when the
    lease is first tried and closed when it is given back."""

    def __init__(self, where: DatabaseUrl, *, timeout: float) -> None:
        self._where = where
        self._timeout = timeout
        self._conn: asyncpg.Connection[asyncpg.Record] | None = None
        self._held = False
        self._token: str | None = None
        self._turn = anyio.Lock()  # one try at a time (the embedder tries from two tasks)

    @property
    def held(self) -> bool:
        """Held, on a session still open (a server restart ends it, and the lease)."""
        return self._held and self._conn is not None and not self._conn.is_closed()

    @property
    def where(self) -> str:
        return f"the advisory lock ({LOCKS}, {EMBEDDING_LEASE}) on {self._where}"

    @property
    def token(self) -> str | None:
        """This take's token in ``meta`` (None: not held)."""
        return self._token if self._held else None

    async def try_take(self) -> bool:
        async with self._turn:
            return await self._try_take()

    async def _try_take(self) -> bool:
        if self.held:
            return True
        try:
            if self._conn is None or self._conn.is_closed():
                self._conn = await connect(self._where, seconds=self._timeout, vectors=False)
            self._held, self._token = False, None
            with mapped_errors(self._where):
                if await self._conn.fetchval(
                        "SELECT pg_try_advisory_lock($1, $2)", LOCKS, EMBEDDING_LEASE):
                    # (waits for a store under the last take's token to end: ``confirm_lease``)
                    token = uuid.uuid4().hex
                    await self._conn.execute(
                        "INSERT INTO meta(key, value) VALUES ($1, $2) ON CONFLICT (key) "
                        "DO UPDATE SET value = excluded.value", LEASE_KEY, token,
                        timeout=self._timeout)
                    self._token, self._held = token, True
        except RiffluxError:  # the server is away: not held; tried again later
            await self.give_back()
            return False
        return self._held

    async def confirm(self) -> bool:
        """Whether the server still counts the lock as this session's: after a restart of
        the server the session is gone, and the lock may be another process's, while
        ``held`` still says yes until the connection is used. Not held: given back."""
        async with self._turn:
            if not self.held:
                return False
            assert self._conn is not None
            try:
                with mapped_errors(self._where):
                    self._held = bool(await self._conn.fetchval(
                        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                        "AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted "
                        "AND pid = pg_backend_pid())", LOCKS, EMBEDDING_LEASE,
                        timeout=self._timeout))
            except RiffluxError:  # the session is gone, and the lease with it
                self._held = False
            if not self._held:
                await self.give_back()
            return self._held

    async def give_back(self) -> None:
        """Let the lease go (closing its session releases the lock)."""
        conn, self._conn, self._held, self._token = self._conn, None, False, None
        if conn is not None:
            await close(conn)
