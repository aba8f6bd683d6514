"""The PostgreSQL store's reads, for the query actor and the embedder, on a pool of
connections (searches and reads run side by side, each on a connection of its own):
chunk rows, the catalog, counts, roots, processes, texts without vectors, a file
or a chunk by its key, a note's links. Same answers as ``store.sqlite``'s.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Sequence

from ...core.catalog import path_candidates
from ...core.chunker import embed_text
from ...core.filters import FileEntry, tag_levels
from ...core.links import anchor_matches, target_parts
from ...location import DatabaseUrl
from ...types import (
    Backlink,
    ChunkDetail,
    ChunkRecord,
    Counts,
    FileRecord,
    IndexedFile,
    LinkKind,
    LinkPlace,
    NoteLinks,
    OutgoingLink,
    ProcessInfo,
    RootCount,
)
from ..common import ROW_COLUMNS, Located, PendingText, iso_utc, row_dict, title_of
from ..written import FILE_ENTRY_COLUMNS, Row, file_entry
from .changes import sequence
from .connection import Pool, mapped_errors
from .presence import SEEN_WITHIN

ROW_SQL = (f"SELECT {ROW_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id "
           "JOIN roots r ON r.id = f.root_id ")



class Reads:
    """``ReadStore``, ``PendingStore``, ``RecordStore`` and ``LinkStore`` in one."""

    def __init__(self, pool: Pool, where: DatabaseUrl) -> None:
        self.pool = pool
        self.where = where

    async def rows(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not rowids:
            return {}
        with mapped_errors(self.where):
            rows = await self.pool.fetch(ROW_SQL + "WHERE c.id = ANY($1)", list(rowids))
        return {int(r[0]): row_dict(r) for r in rows}

    async def pending(self, model: str, limit: int) -> list[PendingText]:
        """Distinct chunk texts with no vector from ``model``, newest first."""
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT content_hash, heading_path, content FROM (SELECT DISTINCT ON "
                "(c.content_hash) c.content_hash, c.heading_path, c.content, c.id FROM chunks c "
                "WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = "
                "c.content_hash AND e.model = $1) ORDER BY c.content_hash, c.id DESC) t "
                "ORDER BY id DESC LIMIT $2", model, limit)
        return [PendingText(str(r[0]), embed_text(str(r[1]), str(r[2]))) for r in rows]

    async def catalog(self) -> tuple[dict[int, str], list[FileEntry], list[tuple[int, int]]]:
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, conn.transaction(readonly=True,
                                                                     isolation="repeatable_read"):
                roots = await conn.fetch("SELECT id, path FROM roots")
                files = await conn.fetch(f"SELECT {FILE_ENTRY_COLUMNS} FROM files")
                edges = await conn.fetch(
                    "SELECT DISTINCT file_id, target_file_id FROM links "
                    "WHERE target_file_id IS NOT NULL AND target_file_id != file_id")
        return ({int(r[0]): str(r[1]) for r in roots}, [file_entry(f) for f in files],
                [(int(e[0]), int(e[1])) for e in edges])

    async def counts(self, model: str | None) -> tuple[Counts, str | None]:
        with mapped_errors(self.where):
            if model is None:
                model = await self.pool.fetchval(
                    "SELECT value FROM meta WHERE key = 'embedding_model'")
            row = await self.pool.fetchrow(
                "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks), "
                "(SELECT count(*) FROM embeddings WHERE model = $1), "
                "(SELECT count(DISTINCT content_hash) FROM chunks c WHERE NOT EXISTS "
                " (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash "
                "  AND e.model = $1)), (SELECT count(*) FROM roots), "
                "(SELECT count(*) FROM links), "
                "(SELECT count(*) FROM links WHERE target_file_id IS NULL)", model or "")
        assert row is not None
        counts: Counts = {"files": int(row[0]), "chunks": int(row[1]),
                          "embeddings": int(row[2]), "pending_embeddings": int(row[3]),
                          "roots": int(row[4]), "links": int(row[5]),
                          "unresolved_links": int(row[6])}
        return counts, model

    async def root_counts(self) -> list[RootCount]:
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT r.path, count(f.id), COALESCE(sum((SELECT count(*) FROM chunks c "
                "WHERE c.file_id = f.id)), 0) FROM roots r LEFT JOIN files f "
                "ON f.root_id = r.id GROUP BY r.id ORDER BY r.id")
        return [{"path": str(r[0]), "files": int(r[1]), "chunks": int(r[2])} for r in rows]

    async def files(self, root_id: int | None = None) -> list[IndexedFile]:
        """The files the index holds (of one root, when given) with their chunk counts, by
        root in the order they were indexed, then path."""
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT f.rel_path, r.path, f.title, f.mtime_ns, (SELECT count(*) FROM chunks c "
                "WHERE c.file_id = f.id) FROM files f JOIN roots r ON r.id = f.root_id "
                "WHERE $1::bigint IS NULL OR f.root_id = $1 "
                'ORDER BY r.id, f.rel_path COLLATE "C"', root_id)
        return [{"path": str(r[0]), "root": str(r[1]), "title": title_of(r[2], str(r[0])),
                 "modified": iso_utc(int(r[3])), "chunks": int(r[4])} for r in rows]

    async def processes(self, origin: str) -> tuple[list[ProcessInfo], int]:
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT pid, roles, last_seen FROM processes WHERE origin != $1 AND "
                "last_seen >= $2 ORDER BY last_seen DESC", origin, time.time() - SEEN_WITHIN)
            async with self.pool.acquire() as conn:
                seq = await sequence(conn)
        return ([{"pid": int(r[0]), "roles": list(json.loads(r[1])), "last_seen": float(r[2])}
                 for r in rows], seq)

    async def roots(self) -> list[str]:
        with mapped_errors(self.where):
            rows = await self.pool.fetch("SELECT path FROM roots ORDER BY id")
        return [str(r[0]) for r in rows]

    # ------------------------------------------------------------ records

    async def locate(self, path: str, roots: dict[int, str],
                     root_id: int | None = None) -> Located | None:
        candidates = path_candidates(path, roots)
        if root_id is not None:
            candidates = [(rid, rel) for rid, rel in candidates if rid == root_id]
        found: list[tuple[int, int, str, str]] = []
        with mapped_errors(self.where):
            for rid, rel in sorted(set(candidates)):
                rows = await self.pool.fetch(
                    "SELECT id, sha256 FROM files WHERE root_id = $1 AND rel_path = $2", rid, rel)
                found.extend((rid, int(r[0]), rel, str(r[1])) for r in rows)
        if not found:
            return None
        rid, file_id, rel, sha = found[0]
        return Located(file_id, roots[rid], rel, tuple(roots[r] for r, *_ in found[1:]), sha)

    async def file(self, located: Located) -> FileRecord | None:
        with mapped_errors(self.where):
            row = await self.pool.fetchrow(
                "SELECT title, tags, aliases, frontmatter, sha256, size, line_count, mtime_ns, "
                "encoding FROM files WHERE id = $1", located.file_id)
            if row is None:
                return None  # deleted since it was located
            chunks = [row_dict(r) for r in await self.pool.fetch(
                ROW_SQL + "WHERE c.file_id = $1 ORDER BY c.chunk_index", located.file_id)]
        record: FileRecord = {
            "path": located.rel_path, "root": located.root,
            "title": title_of(row[0], located.rel_path),
            "tags": sorted(tag_levels(json.loads(row[1]))), "aliases": json.loads(row[2]),
            "frontmatter": json.loads(row[3]), "encoding": str(row[8]), "sha256": str(row[4]),
            "size": int(row[5]), "total_lines": int(row[6]), "modified": iso_utc(int(row[7])),
            "chunks": chunks,
        }
        if located.other_roots:
            record["other_roots"] = list(located.other_roots)
        return record

    async def chunk(self, chunk_id: str) -> ChunkDetail | None:
        with mapped_errors(self.where):
            row = await self.pool.fetchrow(ROW_SQL + "WHERE c.chunk_id = $1", chunk_id)
            if row is None:
                return None
            file_id, index = int(row[12]), int(row[2])
            rows = await self.pool.fetch(
                "SELECT chunk_index, chunk_id FROM chunks WHERE file_id = $1 "
                "AND chunk_index IN ($2, $3)", file_id, index - 1, index + 1)
        near = {int(r[0]): str(r[1]) for r in rows}
        return {**row_dict(row), "prev_chunk_id": near.get(index - 1),
                "next_chunk_id": near.get(index + 1)}

    # ------------------------------------------------------------ links

    async def of(self, file_id: int, path: str, root: str) -> NoteLinks:
        """The links of the file ``file_id`` (at ``path`` in ``root``), both ways."""
        source = "LEFT JOIN chunks c ON c.file_id = l.file_id AND c.chunk_index = l.chunk_index "
        with mapped_errors(self.where):
            out_rows = await self.pool.fetch(
                "SELECT l.kind, l.target, l.embed, l.text, l.line, l.context, l.heading, "
                "c.chunk_id, t.rel_path, l.target_file_id FROM links l "
                "LEFT JOIN files t ON t.id = l.target_file_id " + source +
                "WHERE l.file_id = $1 ORDER BY l.line, l.id", file_id)
            back_rows = await self.pool.fetch(
                "SELECT l.kind, l.target, l.embed, l.text, l.line, l.context, l.heading, "
                "c.chunk_id, s.rel_path FROM links l JOIN files s ON s.id = l.file_id " + source +
                "WHERE l.target_file_id = $1 ORDER BY s.rel_path COLLATE \"C\", l.line, l.id",
                file_id)
            outgoing: list[OutgoingLink] = []
            for r in out_rows:
                place = _place(r)
                target_id = None if r[9] is None or r[8] is None else int(r[9])
                anchor = place["anchor"]
                chunk = (await self._anchored(target_id, anchor)
                         if target_id is not None and anchor else None)
                outgoing.append({"target": place["target"],
                                 "path": None if r[8] is None else str(r[8]),
                                 **place, "target_chunk_id": chunk})
        backlinks: list[Backlink] = [{"path": str(r[8]), **_place(r)} for r in back_rows]
        return {"path": path, "root": root, "outgoing": outgoing, "backlinks": backlinks,
                "unresolved": [link for link in outgoing if link["path"] is None]}

    async def _anchored(self, file_id: int, anchor: str) -> str | None:
        if anchor.startswith("^"):
            block = re.compile(re.escape(anchor) + r"(?![\w-])")
            rows = await self.pool.fetch(
                "SELECT chunk_id, content FROM chunks WHERE file_id = $1 AND "
                "strpos(content, $2) > 0 ORDER BY chunk_index", file_id, anchor)
            return next((str(r[0]) for r in rows if block.search(str(r[1]))), None)
        rows = await self.pool.fetch(
            "SELECT chunk_id, heading_path FROM chunks WHERE file_id = $1 ORDER BY chunk_index",
            file_id)
        return next((str(r[0]) for r in rows if anchor_matches(anchor, str(r[1]))), None)

    async def notes(self, file_ids: Collection[int]) -> dict[int, tuple[str, str]]:
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT id, rel_path, title FROM files WHERE id = ANY($1)", list(file_ids))
        return {int(r[0]): (str(r[1]), title_of(r[2], str(r[1]))) for r in rows}


def _place(r: Row) -> LinkPlace:
    kind: LinkKind = "markdown" if r[0] == "markdown" else "wikilink"
    return {"heading": str(r[6]), "line": int(r[4]), "text": str(r[3]), "target": str(r[1]),
            "kind": kind, "embed": bool(r[2]), "anchor": target_parts(kind, str(r[1]))[1],
            "chunk_id": None if r[7] is None else str(r[7]), "context": str(r[5])}
