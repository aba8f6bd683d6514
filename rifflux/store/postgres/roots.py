"""The PostgreSQL store's roots: ``store.roots``' cache and rules on the writer's
session (each unit of work run again on a new connection when the connection was
lost), with the steps PostgreSQL writes its own way (a root's files moved under its
parent, the links kept by ``links``)."""

from __future__ import annotations

from collections.abc import Collection

from .. import roots
from ..written import Edges
from .connection import Connection
from .links import forget_links, rekey_links
from .missing import Change, Missing
from .session import OnSession, Session


class Roots(roots.Roots[Change]):
    def __init__(self, session: Session, missing: Missing) -> None:
        super().__init__(OnSession(session), missing)
        self.session = session

    @property
    def conn(self) -> Connection:
        return self.session.conn

    async def _move_files(self, parent_id: int, child_id: int, prefix: str) -> None:
        await self.conn.execute(
            "UPDATE files f SET root_id = $1, rel_path = $2 || f.rel_path "
            "WHERE f.root_id = $3 AND NOT EXISTS (SELECT 1 FROM files p WHERE "
            "p.root_id = $1 AND p.rel_path = $2 || f.rel_path)", parent_id, prefix, child_id)

    async def _rekey_links(self, root_id: int) -> Edges:
        return await rekey_links(self.conn, root_id)

    async def _forget_links(self, root_id: int, gone: Collection[int]) -> Edges:
        return await forget_links(self.conn, root_id, gone)
