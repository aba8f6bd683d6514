"""The SQLite store's roots: ``store.roots``' cache and rules on the writer's
connection, with the steps SQLite writes its own way (a root's files moved under
its parent, the links kept by ``link_index``)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import aiosqlite

from .. import roots
from ..written import Edges
from .link_index import forget_links, rekey_links
from .missing import Change, Missing
from .sql import OnConnection


class Roots(roots.Roots[Change]):
    def __init__(self, conn: aiosqlite.Connection, db_path: Path, missing: Missing) -> None:
        super().__init__(OnConnection(conn, db_path), missing)
        self.conn = conn

    async def _move_files(self, parent_id: int, child_id: int, prefix: str) -> None:
        await self.conn.execute(  # (a path the parent has already: the row is left alone)
            "UPDATE OR IGNORE files SET root_id = ?, rel_path = ? || rel_path "
            "WHERE root_id = ?", (parent_id, prefix, child_id))

    async def _rekey_links(self, root_id: int) -> Edges:
        return await rekey_links(self.conn, root_id)

    async def _forget_links(self, root_id: int, gone: Collection[int]) -> Edges:
        return await forget_links(self.conn, root_id, gone)
