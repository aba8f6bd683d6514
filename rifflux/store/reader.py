"""Read-side statements, on a connection of the reader's own (WAL lets it read while
the writer writes)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
import numpy as np

from ..core.chunker import embed_text
from ..core.vectors import F32
from ..types import ChunkRecord, Counts, FileRecord
from .schema import mapped_errors

#: bm25 column weights: a word in the heading breadcrumb counts double.
BM25_WEIGHTS = (2.0, 1.0)

_ROW_SQL = (
    "SELECT c.id, c.chunk_id, c.chunk_index, c.heading_path, c.content, f.rel_path, r.path "
    "FROM chunks c JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id "
)


@dataclass(frozen=True, slots=True)
class PendingText:
    content_hash: str
    text: str


def _row_dict(row: Sequence[Any]) -> ChunkRecord:
    return {
        "chunk_id": str(row[1]),
        "path": str(row[5]),
        "heading_path": str(row[3]),
        "chunk_index": int(row[2]),
        "content": str(row[4]),
        "root": str(row[6]),
    }


def _user_path(path: str) -> Path:
    return Path(os.path.expanduser(path))


class Reader:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    async def lexical(
        self, match: str, limit: int
    ) -> tuple[list[tuple[int, float]], dict[int, ChunkRecord]]:
        """(chunk rowid, bm25) best first, and those chunks' rows: one round trip to the
        connection's thread. ``match`` must come from ``build_match``."""
        w = ", ".join(str(x) for x in BM25_WEIGHTS)
        sql = (
            "WITH hits AS (SELECT rowid AS id, bm25(chunks_fts, " + w + ") AS score "
            "FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score, rowid LIMIT ?) "
            "SELECT c.id, c.chunk_id, c.chunk_index, c.heading_path, c.content, f.rel_path, "
            "r.path, hits.score FROM hits JOIN chunks c ON c.id = hits.id "
            "JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id "
            "ORDER BY hits.score, hits.id"
        )
        with mapped_errors(self.db_path):
            try:
                rows = await self.conn.execute_fetchall(sql, (match, limit))
            except sqlite3.OperationalError as exc:
                # build_match only emits quoted terms, so this is not expected; a query
                # error must still never reach the caller as a crash.
                if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                    return [], {}
                raise
        ranked = [(int(r[0]), float(r[7])) for r in rows]
        return ranked, {int(r[0]): _row_dict(r) for r in rows}

    async def rows(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not rowids:
            return {}
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                _ROW_SQL + f"WHERE c.id IN ({','.join('?' * len(rowids))})", tuple(rowids)
            )
        return {int(r[0]): _row_dict(r) for r in rows}

    async def chunk(self, chunk_id: str) -> ChunkRecord | None:
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(_ROW_SQL + "WHERE c.chunk_id = ?", (chunk_id,))
            row = await cur.fetchone()
        return _row_dict(row) if row else None

    async def file(self, path: str) -> FileRecord | None:
        """A file by path relative to its root, or absolute; first root wins on ties."""
        candidates: list[tuple[str, str]] = []
        p = _user_path(path)
        resolved = Path(await anyio.Path(p).resolve()) if p.is_absolute() else p
        with mapped_errors(self.db_path):
            cur = await self.conn.execute("SELECT path FROM roots ORDER BY id")
            roots = [str(r[0]) for r in await cur.fetchall()]
            if p.is_absolute():
                for root in roots:
                    try:
                        rel = resolved.relative_to(root).as_posix()
                    except ValueError:
                        try:
                            rel = p.relative_to(root).as_posix()
                        except ValueError:
                            continue
                    candidates.append((root, rel))
            else:
                rel = p.as_posix().removeprefix("./")
                candidates.extend((root, rel) for root in roots)
            for root, rel in candidates:
                cur = await self.conn.execute(
                    "SELECT f.id, f.title, f.tags, f.aliases, f.sha256, f.size FROM files f "
                    "JOIN roots r ON r.id = f.root_id WHERE r.path = ? AND f.rel_path = ?",
                    (root, rel),
                )
                frow = await cur.fetchone()
                if frow is None:
                    continue
                cur = await self.conn.execute(
                    _ROW_SQL + "WHERE c.file_id = ? ORDER BY c.chunk_index", (int(frow[0]),)
                )
                chunks = [_row_dict(r) for r in await cur.fetchall()]
                return {
                    "path": rel,
                    "root": root,
                    "title": frow[1],
                    "tags": json.loads(frow[2]),
                    "aliases": json.loads(frow[3]),
                    "sha256": frow[4],
                    "size": frow[5],
                    "chunks": chunks,
                }
        return None

    async def pending(self, model: str, limit: int) -> list[PendingText]:
        """Distinct chunk texts with no vector from ``model``, newest first."""
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(
                "SELECT c.content_hash, c.heading_path, c.content, MAX(c.id) AS newest "
                "FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.content_hash = c.content_hash AND e.model = ?) "
                "GROUP BY c.content_hash ORDER BY newest DESC LIMIT ?",
                (model, limit),
            )
            rows = await cur.fetchall()
        return [PendingText(str(r[0]), embed_text(str(r[1]), str(r[2]))) for r in rows]

    async def all_vectors(self, model: str, dim: int) -> tuple[list[int], F32]:
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(
                "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
                "ON e.content_hash = c.content_hash AND e.model = ?",
                (model,),
            )
            rows = list(await cur.fetchall())
        ids = [int(r[0]) for r in rows]
        if not rows:
            return ids, np.zeros((0, dim), dtype=np.float32)
        blob = b"".join(bytes(r[1]) for r in rows)
        return ids, np.frombuffer(blob, dtype=np.float32).reshape(len(rows), -1).copy()

    async def counts(self, model: str | None) -> tuple[Counts, str | None]:
        """The index's counts; vectors are counted for ``model``, or when it is None (not
        loaded yet) for the model the index was last embedded with. Returns the counts
        and the model they were counted for."""
        with mapped_errors(self.db_path):
            if model is None:
                cur = await self.conn.execute(
                    "SELECT value FROM meta WHERE key = 'embedding_model'")
                row = await cur.fetchone()
                model = str(row[0]) if row else None
            cur = await self.conn.execute(
                "SELECT (SELECT COUNT(*) FROM files), (SELECT COUNT(*) FROM chunks), "
                "(SELECT COUNT(*) FROM embeddings WHERE model = ?), "
                "(SELECT COUNT(DISTINCT content_hash) FROM chunks c WHERE NOT EXISTS "
                " (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash "
                "  AND e.model = ?)), (SELECT COUNT(*) FROM roots)",
                (model or "", model or ""),
            )
            row = await cur.fetchone()
        assert row is not None
        counts: Counts = {
            "files": int(row[0]),
            "chunks": int(row[1]),
            "embeddings": int(row[2]),
            "pending_embeddings": int(row[3]),
            "roots": int(row[4]),
        }
        return counts, model

    async def roots(self) -> list[str]:
        with mapped_errors(self.db_path):
            cur = await self.conn.execute("SELECT path FROM roots ORDER BY id")
            return [str(r[0]) for r in await cur.fetchall()]
