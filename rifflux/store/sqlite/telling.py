"""The SQLite store's languages told after the commit (``store.telling``), on the
writer's connection: the chunks' languages set in one ``executemany``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import aiosqlite

from .. import telling
from .sql import OnConnection


class Telling(telling.Telling):
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        super().__init__(OnConnection(conn, db_path))
        self.conn = conn

    async def _set(self, rows: Sequence[tuple[int, int, str | None]]) -> None:
        if rows:  # (chunks_au re-indexes no full-text row: lang is not one of its columns)
            await self.conn.executemany(
                "UPDATE chunks SET lang = ? WHERE file_id = ? AND chunk_index = ?",
                [(lang, file_id, index) for file_id, index, lang in rows])
