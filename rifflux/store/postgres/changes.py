"""The change log on PostgreSQL: how a process learns what other processes wrote.

``changes`` is written by the schema's statement triggers, in the writing
transaction, under the writer connection's origin; its sequence numbers are in
commit order because writing transactions are serialised (``connection.WRITE_LOCK``).
The log and its sequence are the truth: a process reads the rows after the last
number it has applied, not its own, exactly as ``store.sqlite.changes.Follow``
does, and one that fell behind the pruned log reloads everything.

Noticing a commit: here each look asks for the log's last number (one index
lookup), where SQLite asks ``PRAGMA data_version``. (A ``LISTEN``/``NOTIFY`` wake-up
can replace the polling; the sequence stays the truth, for catching up after a
missed notification or a reconnect.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...location import DatabaseUrl
from ..common import Foreign
from ..protocols import RootsStore
from ..written import FILE_ENTRY_COLUMNS, Written, file_entry
from .connection import Connection, mapped_errors
from .links import edges_of

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
    """One process's view of the change log (on its writer connection)."""

    def __init__(self, conn: Connection, where: DatabaseUrl, origin: str) -> None:
        self.conn = conn
        self.where = where
        self.origin = origin
        self.seen = 0  # the last sequence number applied
        self._last = -1  # the log's last number at the last look
        self.available = True

    async def install(self, *, writes: bool) -> None:
        """Start following from now; ``writes``: this connection's writes are logged
        under its origin."""
        with mapped_errors(self.where):
            if writes:
                await self.conn.execute("SELECT set_config('rifflux.origin', $1, false)",
                                        self.origin)
            self.seen = self._last = await sequence(self.conn)

    async def sequence(self) -> int:
        with mapped_errors(self.where):
            return await sequence(self.conn)

    def look_again(self) -> None:
        self._last = -1

    async def others_wrote(self) -> bool:
        """Whether the log grew since the last look (its own rows are left out later)."""
        last = await self.sequence()
        changed, self._last = last != self._last, last
        return changed

    async def read(self, model: str | None, roots: RootsStore) -> Foreign | None:
        """Other processes' changes since the last applied, as one ``Written``; nothing
        counts as read until ``done(foreign.upto)``. (``model`` is not read: this store's
        vectors stay in the database.)"""
        with mapped_errors(self.where):
            bounds = await self.conn.fetchrow(
                "SELECT min(seq), max(seq) FROM changes WHERE seq > $1", self.seen)
            assert bounds is not None
            low, high = bounds
            if high is None:
                return None
            upto = int(high)
            if int(low) > self.seen + 1 and await self._pruned_past():
                return Foreign(Written(), reload=True, upto=upto)
            theirs = await self.conn.fetch(
                "SELECT seq, origin, kind, ref, hash FROM changes WHERE seq > $1 AND "
                "seq <= $2 AND origin != $3 ORDER BY seq", self.seen, upto, self.origin)
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
