"""Reading back what the index holds: a file by its path, a chunk by its id. Written
once for both stores, on a store's ``Statements`` (the reader's connection, or the
pool).

A file is found by its indexed path only: relative to a root (``..`` may not
climb out of it), or absolute inside a root. When several roots hold the same
relative path, the first root indexed wins and the others are named.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..core.catalog import path_candidates
from ..core.filters import tag_levels
from .common import ROW_SQL, Located, iso_utc, row_dict, title_of

if TYPE_CHECKING:
    from ..types import ChunkDetail, FileRecord
    from .statements import Statements


class Records:
    """``RecordStore``."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql

    async def locate(self, path: str, roots: dict[int, str],
                     root_id: int | None = None) -> Located | None:
        """The indexed file at ``path`` (under ``root_id`` when given); None when the
        index holds no file there. A path that leaves every root is an error."""
        candidates = path_candidates(path, roots)
        if root_id is not None:
            candidates = [(rid, rel) for rid, rel in candidates if rid == root_id]
        found: list[tuple[int, int, str, str]] = []  # (root id, file id, rel, sha256)
        for rid, rel in sorted(set(candidates)):
            rows = await self._sql.fetch(
                "SELECT id, sha256 FROM files WHERE root_id = ? AND rel_path = ?", rid, rel)
            found.extend((rid, int(r[0]), rel, str(r[1])) for r in rows)
        if not found:
            return None
        rid, file_id, rel, sha = found[0]
        return Located(file_id, roots[rid], rel, tuple(roots[r] for r, *_ in found[1:]), sha)

    async def file(self, located: Located) -> FileRecord | None:
        """The file ``located`` names, with its metadata and every chunk in order; None
        when it was deleted since it was located."""
        rows = await self._sql.fetch(
            "SELECT title, tags, aliases, frontmatter, sha256, size, line_count, mtime_ns, "
            "encoding FROM files WHERE id = ?", located.file_id)
        if not rows:
            return None
        row = rows[0]
        chunks = [row_dict(r) for r in await self._sql.fetch(
            ROW_SQL + "WHERE c.file_id = ? ORDER BY c.chunk_index", located.file_id)]
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
        rows = await self._sql.fetch(ROW_SQL + "WHERE c.chunk_id = ?", chunk_id)
        if not rows:
            return None
        row = rows[0]
        file_id, index = int(row[12]), int(row[2])
        near = {int(r[0]): str(r[1]) for r in await self._sql.fetch(
            "SELECT chunk_index, chunk_id FROM chunks WHERE file_id = ? "
            "AND chunk_index IN (?, ?)", file_id, index - 1, index + 1)}
        return {**row_dict(row), "prev_chunk_id": near.get(index - 1),
                "next_chunk_id": near.get(index + 1)}
