"""The PostgreSQL store's languages told after the commit (``store.telling``), on the
writer's session: the chunks' languages set in one statement from arrays."""

from __future__ import annotations

from collections.abc import Sequence

from .. import telling
from .session import OnSession, Session


class Telling(telling.Telling):
    def __init__(self, session: Session) -> None:
        super().__init__(OnSession(session))
        self.session = session

    async def _set(self, rows: Sequence[tuple[int, int, str | None]]) -> None:
        if rows:
            await self.session.conn.execute(
                "UPDATE chunks c SET lang = t.lang FROM unnest($1::bigint[], $2::int[], "
                "$3::text[]) AS t(file_id, chunk_index, lang) "
                "WHERE c.file_id = t.file_id AND c.chunk_index = t.chunk_index",
                [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
