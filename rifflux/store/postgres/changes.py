"""The change log on PostgreSQL: how a process learns what other processes wrote.

``changes`` is written by the schema's statement triggers, in the writing
transaction, under the writer connection's origin; its sequence numbers are in
commit order because writing transactions are serialised (``connection.WRITE_LOCK``).
The log and its sequence are the truth: a process reads the rows after the last
number it has applied, not its own, exactly as ``store.sqlite.changes.Follow``
does, and one that fell behind the pruned log reloads everything.

Noticing a commit: the writing transaction notifies ``CHANNEL`` (a trigger on
``changes``, with the writer's origin and the statement's last sequence number;
delivered when it commits), and the writer's connection listens. A look then
costs nothing unless a notification came, or ``SAFETY_POLL`` seconds passed: the
log's last number is asked for then anyway (one index lookup), so a missed
notification is caught up, late. After a reconnect (notifications sent meanwhile
are lost) the log is read from the last number applied, this process's own rows
included once (a commit whose answer was lost with the connection). Where
``LISTEN`` cannot run (a hot standby: the primary's notifications never reach
it) every look asks for the last number, as SQLite's every look asks
``PRAGMA data_version``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio
import asyncpg

from ...location import DatabaseUrl
from ..common import Foreign
from ..protocols import RootsStore
from ..written import FILE_ENTRY_COLUMNS, Written, file_entry
from .connection import Connection, mapped_errors
from .links import edges_of
from .session import Raw, Session, retried

logger = logging.getLogger(__name__)

#: The channel every writing transaction notifies (payload: ``origin seq``).
CHANNEL = "rifflux_changes"
#: Seconds between looks at the log's last number while notifications arrive.
SAFETY_POLL = 5.0

#: Rows kept in the log (a follower further behind reloads everything).
KEEP = 50_000


async def prune(conn: Connection, where: DatabaseUrl) -> None:
    with mapped_errors(where):
        await conn.execute(
            "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - $1", KEEP)


async def sequence(conn: Connection) -> int:
    """The index's change sequence number (0 before any write)."""
    return int(await conn.fetchval("SELECT COALESCE(max(seq), 0) FROM changes"))


def _hashes(rows: Sequence[Any], kind: str) -> tuple[str, ...]:
    return tuple(sorted({str(r[4]) for r in rows if r[2] == kind}))


class Follow:
    """One process's view of the change log, on the writer's session (its reads are
    tried once per look: a lost connection is made again at a later look)."""

    def __init__(self, session: Session, origin: str) -> None:
        self.session = session
        self.where = session.where
        self.origin = origin
        self.seen = 0  # the last sequence number applied
        self._last = -1  # the log's last number at the last look
        self._heard = 0  # the highest number another process notified
        self._polled = float("-inf")  # when the log's last number was last asked for
        self._listening = False
        self._generation = 0  # the session's connection the log was last read on
        self._writes = False
        self.available = True

    @property
    def conn(self) -> Connection:
        return self.session.conn

    @property
    def listening(self) -> bool:
        """Whether notifications wake this follower (False: every look polls)."""
        return self._listening

    @retried(wait=0)
    async def install(self, *, writes: bool) -> None:
        """Start following from now; ``writes``: this connection's writes are logged
        under its origin. Both, and the ``LISTEN``, again on every new connection."""
        self._writes = writes
        await self.session.add_setup(self._set_up)
        with mapped_errors(self.where):
            self.seen = self._last = await sequence(self.conn)
        self._generation = self.session.generation

    async def _set_up(self, conn: Raw) -> None:
        with mapped_errors(self.where):
            if self._writes:
                await conn.execute("SELECT set_config('rifflux.origin', $1, false)",
                                   self.origin)
            try:
                await conn.add_listener(CHANNEL, self._notified)
                self._listening = True
            except asyncpg.PostgresError as exc:  # a hot standby: polling instead
                self._listening = False
                logger.info("%s: cannot LISTEN (%s); following the change log by polling",
                            self.where, str(exc).splitlines()[0])

    def _notified(self, conn: object, pid: int, channel: str, payload: object) -> None:
        origin, _, seq = str(payload).rpartition(" ")
        if origin != self.origin and seq.isdigit():
            self._heard = max(self._heard, int(seq))

    @retried(wait=0)
    async def sequence(self) -> int:
        with mapped_errors(self.where):
            return await sequence(self.conn)

    def look_again(self) -> None:
        self._last = -1
        self._polled = float("-inf")

    async def others_wrote(self) -> bool:
        """Whether the log grew since the last look: told by a notification, or found by
        asking for its last number (at every look without ``LISTEN``, after a
        reconnect, else every ``SAFETY_POLL`` seconds)."""
        now = anyio.current_time()
        if (self._listening and self.session.connected
                and self.session.generation == self._generation
                and now - self._polled < SAFETY_POLL):
            if self._heard <= max(self._last, self.seen):  # nothing beyond what was read
                return False
            self._last = self._heard
            return True
        last = await self.sequence()
        self._polled = now
        reconnected = self.session.generation != self._generation
        changed = last != self._last or reconnected
        self._last = max(last, self._heard)
        return changed

    @retried(wait=0)
    async def read(self, model: str | None, roots: RootsStore) -> Foreign | None:
        """Other processes' changes since the last applied, as one ``Written``; nothing
        counts as read until ``done(foreign.upto)``. (``model`` is not read: this store's
        vectors stay in the database.) Read on a new connection, this process's own
        rows since the last applied are included (what it wrote before the connection
        was lost, whose answer may have been lost with it)."""
        generation = self.session.generation
        mine = "" if generation != self._generation else self.origin
        with mapped_errors(self.where):
            bounds = await self.conn.fetchrow(
                "SELECT min(seq), max(seq) FROM changes WHERE seq > $1", self.seen)
            assert bounds is not None
            low, high = bounds
            self._generation = generation
            if high is None:
                return None
            upto = int(high)
            if int(low) > self.seen + 1 and await self._pruned_past():
                return Foreign(Written(), reload=True, upto=upto)
            theirs = await self.conn.fetch(
                "SELECT seq, origin, kind, ref, hash FROM changes WHERE seq > $1 AND "
                "seq <= $2 AND origin != $3 ORDER BY seq", self.seen, upto, mine)
            if not theirs:
                self.seen = upto
                return None
            return Foreign(await self._gather(theirs, roots),
                           embedded=_hashes(theirs, "vector"),
                           texts_gone=_hashes(theirs, "text_gone"), upto=upto)

    def done(self, upto: int) -> None:
        self.seen = max(self.seen, upto)

    async def _pruned_past(self) -> bool:
        low = await self.conn.fetchval("SELECT min(seq) FROM changes")
        return low is not None and int(low) > self.seen + 1

    async def _gather(self, rows: Sequence[Any], roots: RootsStore) -> Written:
        files = sorted({int(r[3]) for r in rows if r[2] in ("file", "file_gone")})
        roots_gone = tuple(sorted({int(r[3]) for r in rows if r[2] == "root_gone"}))
        entries = [file_entry(r) for r in await self.conn.fetch(
            f"SELECT {FILE_ENTRY_COLUMNS} FROM files WHERE id = ANY($1)", files)]
        present = {e.id for e in entries}
        relinked = sorted({int(r[3]) for r in rows if r[2] == "links"} - set(files))
        still = {int(r[0]) for r in await self.conn.fetch(
            "SELECT id FROM files WHERE id = ANY($1)", relinked)}
        edges = await edges_of(self.conn, present | still)
        if any(r[2] in ("root", "root_gone") for r in rows) or any(
                e.root_id not in roots.paths for e in entries):
            await roots.load()
        return Written(
            files=tuple(entries),
            files_removed=tuple(f for f in files if f not in present),
            files_replaced=tuple(files), roots=tuple(sorted(roots.paths.items())),
            roots_removed=roots_gone, links=edges)
