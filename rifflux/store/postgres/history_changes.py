"""How a process learns that another one wrote commits or their vectors to the same
PostgreSQL index (``store.sqlite.history_changes`` is SQLite's): the history's rows in
the change log, followed as the chunks' are (``changes.Follow``), so that a process's
in-memory matrix of commit vectors follows the others' reads and embeddings.

Each transaction of the history's that changes commits or their vectors (a batch
written, commits dropped, vectors stored) logs one row of kind ``history`` under its
process's origin (``note``: one a transaction, never one a commit), which notifies the
change log's channel when it commits. A follower is a ``changes.Follow`` on a
connection of its own that ``LISTEN``s: a look costs nothing until a notification
comes (or ``changes.SAFETY_POLL`` seconds pass, or a reconnect); on a read replica,
which never hears one, every look asks for the log's last number. When the log grew,
the rows after the last one seen are asked whether one is another origin's
``history`` row.
"""

from __future__ import annotations

import logging

from ...errors import RiffluxError
from ...history.rows import others_looked
from ...location import DatabaseUrl
from .changes import Follow
from .connection import Connection, mapped_errors
from .session import Session

logger = logging.getLogger(__name__)

#: The change log's kind for "commits or their vectors changed" (SQLite's too).
KIND = "history"


async def note(conn: Connection) -> None:
    """Tell the other processes that this transaction changes commits or their vectors
    (under the connection's origin, ``rifflux.origin``)."""
    await conn.execute("INSERT INTO changes(origin, kind) VALUES (rifflux_origin(), $1)", KIND)


class HistoryFollow:
    """One process's look at the others' history writes, on a connection of its own."""

    def __init__(self, where: DatabaseUrl, origin: str, *, seconds: float) -> None:
        self.where = where
        self.origin = origin
        self._session = Session(where, seconds=seconds, vectors=False)
        self._follow = Follow(self._session, origin)
        self._seen: int | None = None  # the last sequence number looked at

    async def open(self) -> None:
        await self._session.open()
        await self._follow.install(writes=False)

    async def close(self) -> None:
        await self._session.close()

    async def others_wrote(self) -> bool:
        """Whether another process changed commits or their vectors since the last call
        (the first call only starts following: what is there then is read whole)."""
        try:
            if self._seen is not None and not await self._follow.others_wrote():
                return False
            with mapped_errors(self.where):
                async with self._session.unit():
                    row = await self._session.conn.fetchrow(
                        "SELECT (SELECT min(seq) FROM changes), max(seq), max(seq) FILTER "
                        "(WHERE kind = $1 AND origin <> $2) FROM changes WHERE seq > $3",
                        KIND, self.origin, self._seen or 0)
        except RiffluxError as exc:  # (the server away: looked at again next time)
            logger.debug("cannot read the history's changes: %s", exc)
            self._follow.look_again()
            return False
        assert row is not None
        self._seen, wrote = others_looked(self._seen, *row)
        self._follow.done(self._seen)
        return wrote
