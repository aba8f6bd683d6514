"""Reading back what the index holds: a file by its path, a chunk by its id.

A file is found by its indexed path only: relative to a root (``..`` may not
climb out of it), or absolute inside a root. When several roots hold the same
relative path, the first root indexed wins and the others are named.
"""

from __future__ import annotations

import json
from pathlib import Path

import aiosqlite

from ...core.catalog import path_candidates
from ...core.filters import tag_levels
from ...types import ChunkDetail, FileRecord
from ..common import Located, iso_utc, row_dict, title_of
from .reader import ROW_SQL
from .sql import mapped_errors


class Records:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    async def locate(self, path: str, roots: dict[int, str],
                     root_id: int | None = None) -> Located | None:
        """The indexed file at ``path`` (under ``root_id`` when given); None when the
        index holds no file there. A path that leaves every root is an error."""
        candidates = path_candidates(path, roots)
        if root_id is not None:
            candidates = [(rid, rel) for rid, rel in candidates if rid == root_id]
        found: list[tuple[int, int, str, str]] = []  # (root id, file id, rel, sha256)
        with mapped_errors(self.db_path):
            for rid, rel in sorted(set(candidates)):
                rows = await self.conn.execute_fetchall(
                    "SELECT id, sha256 FROM files WHERE root_id = ? AND rel_path = ?",
                    (rid, rel))
                found.extend((rid, int(r[0]), rel, str(r[1])) for r in rows)
        if not found:
            return None
        rid, file_id, rel, sha = found[0]
        return Located(file_id, roots[rid], rel, tuple(roots[r] for r, *_ in found[1:]), sha)

    async def file(self, located: Located) -> FileRecord | None:
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(
                "SELECT title, tags, aliases, frontmatter, sha256, size, line_count, mtime_ns, "
                "encoding FROM files WHERE id = ?", (located.file_id,))
            row = await cur.fetchone()
            if row is None:
                return None  # deleted since it was located
            cur = await self.conn.execute(
                ROW_SQL + "WHERE c.file_id = ? ORDER BY c.chunk_index", (located.file_id,))
            chunks = [row_dict(r) for r in await cur.fetchall()]
        record: FileRecord = {
            "path": located.rel_path,
            "root": located.root,
            "title": title_of(row[0], located.rel_path),
            "tags": sorted(tag_levels(json.loads(row[1]))),  # as hits and filters see them
            "aliases": json.loads(row[2]),
            "frontmatter": json.loads(row[3]),
            "encoding": str(row[8]),
            "sha256": str(row[4]),
            "size": int(row[5]),
            "total_lines": int(row[6]),
            "modified": iso_utc(int(row[7])),
            "chunks": chunks,
        }
        if located.other_roots:
            record["other_roots"] = list(located.other_roots)
        return record

    async def chunk(self, chunk_id: str) -> ChunkDetail | None:
        """A chunk with the ids of the chunks before and after it in its file."""
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(ROW_SQL + "WHERE c.chunk_id = ?", (chunk_id,))
            row = await cur.fetchone()
            if row is None:
                return None
            file_id, index = int(row[12]), int(row[2])
            rows = await self.conn.execute_fetchall(
                "SELECT chunk_index, chunk_id FROM chunks WHERE file_id = ? "
                "AND chunk_index IN (?, ?)", (file_id, index - 1, index + 1))
        near = {int(r[0]): str(r[1]) for r in rows}
        return {**row_dict(row), "prev_chunk_id": near.get(index - 1),
                "next_chunk_id": near.get(index + 1)}
