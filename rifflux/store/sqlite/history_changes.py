"""How a process learns that another one wrote commits or their vectors to the same
index: the history's part of the change log (``changes.py``), so that its in-memory
matrix of commit vectors follows the others' reads and embeddings as the chunks'
matrix follows their files.

The process that reads a repository's history (its history actor, on a connection of
its own) logs one row of kind ``history`` under its origin after each write that
changed commits or their vectors (one row a read or an embedded batch, never one a
commit: a first read of 20,000 commits must not push the other processes' followers
past the log's ``KEEP``). A process notices that another connection committed by
``PRAGMA data_version`` on its history's reader connection (one pragma every
``follow_seconds``, as the indexer looks for the files others wrote; never in a
search's path) and then looks for such rows of other origins after the last it saw.
The chunks' follower (``changes.Follow``) leaves these rows alone.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import aiosqlite

from ...errors import RiffluxError
from ...history.rows import others_looked
from .sql import mapped_errors

logger = logging.getLogger(__name__)

#: The change log's kind for "commits or their vectors changed".
KIND = "history"


async def note(conn: aiosqlite.Connection, db_path: Path, origin: str) -> None:
    """Tell the other processes that this one changed commits or their vectors (after
    the write: a follower that looks in between sees the write at its next look)."""
    with mapped_errors(db_path):
        await conn.execute("INSERT INTO changes(origin, kind) VALUES (?, ?)", (origin, KIND))


class HistoryFollow:
    """One process's look at the others' history writes, on its reader connection."""

    def __init__(self, conn: aiosqlite.Connection, db_path: Path, origin: str) -> None:
        self.conn = conn
        self.db_path = db_path
        self.origin = origin
        self._seen: int | None = None  # the last sequence number looked at
        self._version: int | None = None

    async def others_wrote(self) -> bool:
        """Whether another process changed commits or their vectors since the last call
        (the first call only starts following: what is there then is read whole)."""
        try:
            with mapped_errors(self.db_path):
                rows = await self.conn.execute_fetchall("PRAGMA data_version")
                version = int(next(iter(rows))[0])
                if version == self._version:
                    return False
                rows = await self.conn.execute_fetchall(
                    "SELECT (SELECT MIN(seq) FROM changes), MAX(seq), MAX(CASE WHEN kind = ? "
                    "AND origin != ? THEN seq END) FROM changes WHERE seq > ?",
                    (KIND, self.origin, self._seen or 0))
        except (RiffluxError, sqlite3.Error) as exc:  # (busy: looked at again next time)
            logger.debug("cannot read the history's changes: %s", exc)
            self._version = None
            return False
        self._version = version
        self._seen, wrote = others_looked(self._seen, *next(iter(rows)))
        return wrote
