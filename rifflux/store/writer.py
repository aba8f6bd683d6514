"""The writer's statements. Only the indexer actor holds a writer connection.

Each public coroutine is one transaction, so an interrupted run never leaves a
half-indexed file behind.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import aiosqlite
import numpy as np

from ..core.chunker import Chunk, FileMetadata
from ..core.vectors import F32
from .schema import mapped_errors


@dataclass(frozen=True, slots=True)
class StoredFile:
    id: int
    mtime_ns: int
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class FileToWrite:
    rel_path: str
    mtime_ns: int
    size: int
    sha256: str
    metadata: FileMetadata
    chunks: Sequence[Chunk]


@dataclass(frozen=True, slots=True)
class FileWritten:
    """What one file's transaction changed, for the in-memory matrix and the embedder."""

    removed_rowids: tuple[int, ...]
    added: tuple[tuple[int, str], ...]  # (chunk rowid, content_hash)


def chunk_id_for(root_id: int, rel_path: str, index: int, content_hash: str) -> str:
    raw = f"{root_id}\0{rel_path}\0{index}\0{content_hash}".encode()
    return hashlib.sha256(raw).hexdigest()[:20]


class Writer:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    async def _tx_begin(self) -> None:
        await self.conn.execute("BEGIN IMMEDIATE")

    async def _rollback(self) -> None:
        try:
            await self.conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # no transaction was open

    async def root_id(self, root: Path) -> int:
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT id FROM roots WHERE path = ?", (str(root),)
            )
            if not rows:  # a write only for a new root
                await self.conn.execute(
                    "INSERT OR IGNORE INTO roots(path) VALUES (?)", (str(root),)
                )
                rows = await self.conn.execute_fetchall(
                    "SELECT id FROM roots WHERE path = ?", (str(root),)
                )
            return int(next(iter(rows))[0])

    async def known_files(self, root_id: int) -> dict[str, StoredFile]:
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT rel_path, id, mtime_ns, size, sha256 FROM files WHERE root_id = ?",
                (root_id,),
            )
        return {r[0]: StoredFile(int(r[1]), int(r[2]), int(r[3]), str(r[4])) for r in rows}

    async def touch(self, file_id: int, mtime_ns: int, size: int) -> None:
        with mapped_errors(self.db_path):
            await self.conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?", (mtime_ns, size, file_id)
            )

    async def write_files(self, root_id: int, files: Sequence[FileToWrite]) -> list[FileWritten]:
        """Replace the chunks of whole files, all in one transaction.

        Each file is written completely or not at all, so an interrupted run
        never leaves a half-indexed file; grouping a few files per transaction
        keeps the FTS5 index from flushing a segment per file.
        """
        if not files:
            return []
        now = time.time()
        with mapped_errors(self.db_path):
            await self._tx_begin()
            try:
                file_ids: list[int] = []
                for f in files:
                    m = f.metadata
                    cur = await self.conn.execute(
                        "INSERT INTO files(root_id, rel_path, mtime_ns, size, sha256, title, "
                        "tags, aliases, indexed_at) VALUES (?,?,?,?,?,?,?,?,?) "
                        "ON CONFLICT(root_id, rel_path) DO UPDATE SET "
                        "mtime_ns=excluded.mtime_ns, size=excluded.size, sha256=excluded.sha256, "
                        "title=excluded.title, tags=excluded.tags, aliases=excluded.aliases, "
                        "indexed_at=excluded.indexed_at RETURNING id",
                        (root_id, f.rel_path, f.mtime_ns, f.size, f.sha256, m.title,
                         json.dumps(m.tags), json.dumps(m.aliases), now),
                    )
                    row = await cur.fetchone()
                    assert row is not None
                    file_ids.append(int(row[0]))
                marks = ",".join("?" * len(file_ids))
                cur = await self.conn.execute(
                    f"DELETE FROM chunks WHERE file_id IN ({marks}) RETURNING id, file_id",
                    tuple(file_ids),
                )
                removed: dict[int, list[int]] = {}
                for r in await cur.fetchall():
                    removed.setdefault(int(r[1]), []).append(int(r[0]))
                await self.conn.executemany(
                    "INSERT INTO chunks(chunk_id, file_id, chunk_index, heading_path, "
                    "content, content_hash) VALUES (?,?,?,?,?,?)",
                    [
                        (chunk_id_for(root_id, f.rel_path, c.chunk_index, c.content_hash),
                         fid, c.chunk_index, c.heading_path, c.content, c.content_hash)
                        for f, fid in zip(files, file_ids, strict=True)
                        for c in f.chunks
                    ],
                )
                cur = await self.conn.execute(
                    f"SELECT id, file_id, content_hash FROM chunks WHERE file_id IN ({marks}) "
                    "ORDER BY file_id, chunk_index",
                    tuple(file_ids),
                )
                added: dict[int, list[tuple[int, str]]] = {}
                for r in await cur.fetchall():
                    added.setdefault(int(r[1]), []).append((int(r[0]), str(r[2])))
                await self.conn.execute("COMMIT")
            except BaseException:
                await self._rollback()
                raise
        return [
            FileWritten(tuple(removed.get(fid, ())), tuple(added.get(fid, ())))
            for fid in file_ids
        ]

    async def present_hashes(self, hashes: set[str]) -> set[str]:
        """Which of these content hashes some chunk still has."""
        found: set[str] = set()
        ordered = sorted(hashes)
        with mapped_errors(self.db_path):
            for i in range(0, len(ordered), 500):
                part = ordered[i : i + 500]
                rows = await self.conn.execute_fetchall(
                    "SELECT DISTINCT content_hash FROM chunks WHERE content_hash IN "
                    f"({','.join('?' * len(part))})",
                    part,
                )
                found.update(str(r[0]) for r in rows)
        return found

    async def delete_files(self, root_id: int, rel_paths: Sequence[str]) -> tuple[int, ...]:
        """Remove files and their chunks; returns the removed chunk rowids."""
        removed: list[int] = []
        with mapped_errors(self.db_path):
            await self._tx_begin()
            try:
                for rel in rel_paths:
                    cur = await self.conn.execute(
                        "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id "
                        "WHERE f.root_id = ? AND f.rel_path = ?",
                        (root_id, rel),
                    )
                    removed.extend(int(r[0]) for r in await cur.fetchall())
                    await self.conn.execute(
                        "DELETE FROM chunks WHERE file_id IN "
                        "(SELECT id FROM files WHERE root_id = ? AND rel_path = ?)",
                        (root_id, rel),
                    )
                    await self.conn.execute(
                        "DELETE FROM files WHERE root_id = ? AND rel_path = ?", (root_id, rel)
                    )
                await self.conn.execute("COMMIT")
            except BaseException:
                await self._rollback()
                raise
        return tuple(removed)

    async def write_vectors(
        self, model: str, hashes: Sequence[str], vectors: F32
    ) -> list[tuple[int, int]]:
        """Store vectors; returns (chunk rowid, row in ``vectors``) for every chunk using them."""
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        with mapped_errors(self.db_path):
            await self._tx_begin()
            try:
                await self.conn.executemany(
                    "INSERT OR REPLACE INTO embeddings(content_hash, model, dim, vector) "
                    "VALUES (?,?,?,?)",
                    [(h, model, vecs.shape[1], vecs[i].tobytes()) for i, h in enumerate(hashes)],
                )
                await self.conn.execute("COMMIT")
            except BaseException:
                await self._rollback()
                raise
            index = {h: i for i, h in enumerate(hashes)}
            users: list[tuple[int, int]] = []
            for start in range(0, len(hashes), 500):
                part = hashes[start : start + 500]
                cur = await self.conn.execute(
                    f"SELECT id, content_hash FROM chunks WHERE content_hash IN "
                    f"({','.join('?' * len(part))})",
                    tuple(part),
                )
                users.extend((int(r[0]), index[str(r[1])]) for r in await cur.fetchall())
        return users

    async def vectors_for(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with mapped_errors(self.db_path):
            for start in range(0, len(hashes), 500):
                part = list(dict.fromkeys(hashes[start : start + 500]))
                cur = await self.conn.execute(
                    f"SELECT content_hash, vector FROM embeddings WHERE model = ? AND "
                    f"content_hash IN ({','.join('?' * len(part))})",
                    (model, *part),
                )
                out.update((str(r[0]), bytes(r[1])) for r in await cur.fetchall())
        return out

    async def pending_hashes(
        self, model: str, root_id: int, prefix: str = "", rel_paths: Sequence[str] | None = None
    ) -> set[str]:
        """Content hashes of chunks in scope that have no vector from ``model``."""
        base = (
            "SELECT DISTINCT c.content_hash FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.root_id = ? AND NOT EXISTS (SELECT 1 FROM embeddings e "
            "WHERE e.content_hash = c.content_hash AND e.model = ?)"
        )
        out: set[str] = set()
        with mapped_errors(self.db_path):
            if rel_paths is None:
                like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                cur = await self.conn.execute(
                    base + " AND f.rel_path LIKE ? ESCAPE '\\'", (root_id, model, like + "%")
                )
                out.update(str(r[0]) for r in await cur.fetchall())
                return out
            paths = list(rel_paths)
            for start in range(0, len(paths), 500):
                part = paths[start : start + 500]
                cur = await self.conn.execute(
                    base + f" AND f.rel_path IN ({','.join('?' * len(part))})",
                    (root_id, model, *part),
                )
                out.update(str(r[0]) for r in await cur.fetchall())
        return out

    async def drop_other_models(self, model: str) -> int:
        """Vectors of any other model are deleted: they are never mixed with ours."""
        with mapped_errors(self.db_path):
            cur = await self.conn.execute("DELETE FROM embeddings WHERE model != ?", (model,))
            return cur.rowcount

    async def prune_orphan_vectors(self) -> int:
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(
                "DELETE FROM embeddings WHERE content_hash NOT IN "
                "(SELECT content_hash FROM chunks)"
            )
            return cur.rowcount

    async def set_meta(self, key: str, value: str) -> None:
        with mapped_errors(self.db_path):
            await self.conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value)
            )
