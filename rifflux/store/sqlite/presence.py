"""Which processes have this index open: each writing process keeps a row in
``processes`` (its pid, its roles, when it was last seen), refreshed every few
seconds and removed when it closes; one that died is simply no longer seen."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ...errors import IndexDatabaseError
from ...types import ProcessInfo
from .changes import prune
from .sql import Connection, mapped_errors

#: A process not seen for this long is no longer listed.
SEEN_WITHIN = 60.0


class Presence:
    def __init__(self, conn: Connection, db_path: Path, origin: str) -> None:
        self.conn = conn
        self.db_path = db_path
        self.origin = origin
        self.started = time.time()
        self._listed = False  # (a row written: one to remove)

    async def beat(self, roles: list[str]) -> None:
        # (before the write: a beat whose await is cancelled still runs to its end in the
        # connection's thread, and ``leave``'s delete, queued after it there, removes it)
        self._listed = True
        with mapped_errors(self.db_path):
            await self.conn.execute(
                "INSERT OR REPLACE INTO processes(origin, pid, roles, started_at, last_seen) "
                "VALUES (?, ?, ?, ?, ?)",
                (self.origin, os.getpid(), json.dumps(roles), self.started, time.time()))

    async def leave(self) -> None:
        if not self._listed:  # (no beat was tried: nothing to remove, nor to wait for)
            return
        with mapped_errors(self.db_path):
            await self.conn.execute("DELETE FROM processes WHERE origin = ? OR last_seen < ?",
                                    (self.origin, time.time() - 24 * 3600))

    async def prune_changes(self) -> None:
        await prune(self.conn, self.db_path)

    async def others(self) -> list[ProcessInfo]:
        """The other processes seen in the last minute, most recently seen first."""
        try:
            with mapped_errors(self.db_path):
                rows = await self.conn.execute_fetchall(
                    "SELECT pid, roles, last_seen FROM processes WHERE origin != ? AND "
                    "last_seen >= ? ORDER BY last_seen DESC",
                    (self.origin, time.time() - SEEN_WITHIN))
        except IndexDatabaseError:  # an index made before the table (read-only)
            return []
        return [{"pid": int(r[0]), "roles": list(json.loads(r[1])), "last_seen": float(r[2])}
                for r in rows]
