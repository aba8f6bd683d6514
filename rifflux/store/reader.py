"""Read-side statements, on a connection of the reader's own (WAL lets it read while
the writer writes)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import aiosqlite
import numpy as np

from ..core import bm25
from ..core.catalog import Allowed
from ..core.chunker import embed_text
from ..core.filters import FileEntry, tag_levels
from ..core.vectors import F32
from ..errors import IndexDatabaseError
from ..types import ChunkRecord, Counts, ProcessInfo, RootCount
from .changes import sequence
from .lexicon import Lexicon
from .presence import Presence
from .schema import mapped_errors
from .written import FILE_ENTRY_COLUMNS, file_entry

#: bm25 column weights: a word in the heading breadcrumb counts double.
BM25_WEIGHTS = bm25.WEIGHTS  # heading_path, content, cjk (characters alone)
#: How equal bm25 scores are ordered (``core.bm25.tie_order`` orders the lexicon's alike).
TIE_BREAK = "rowid"

#: The columns of a result row, in the order ``row_dict`` reads them.
ROW_COLUMNS = (
    "c.id, c.chunk_id, c.chunk_index, c.heading_path, c.content, f.rel_path, r.path, "
    "f.title, f.tags, f.mtime_ns, c.line_start, c.line_end, c.file_id"
)
ROW_SQL = (
    f"SELECT {ROW_COLUMNS} "
    "FROM chunks c JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id "
)


@dataclass(frozen=True, slots=True)
class PendingText:
    content_hash: str
    text: str


def row_dict(row: Sequence[Any]) -> ChunkRecord:
    """A chunk row (``ROW_COLUMNS``) as a result: SPEC's fields, then where it is and what
    note it belongs to."""
    rel = str(row[5])
    return {
        "chunk_id": str(row[1]),
        "path": rel,
        "heading_path": str(row[3]),
        "chunk_index": int(row[2]),
        "content": str(row[4]),
        "root": str(row[6]),
        "title": title_of(row[7], rel),
        "tags": [] if row[8] == "[]" else sorted(tag_levels(json.loads(row[8]))),
        "modified": iso_utc(int(row[9])),
        "line_start": int(row[10]),
        "line_end": int(row[11]),
    }


def title_of(stored: str | None, rel_path: str) -> str:
    """The front-matter title, else the first H1 (both stored), else the file's name."""
    return stored or PurePosixPath(rel_path).stem


def iso_utc(mtime_ns: int) -> str:
    d = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    return f"{d.year}-{d.month:02}-{d.day:02}T{d.hour:02}:{d.minute:02}:{d.second:02}Z"


def _fts_hits(match: str, limit: int, allowed: Allowed | None,
              above: int | None) -> tuple[str, tuple[Any, ...]]:
    """The statement FTS5 ranks with: (rowid AS id, bm25 AS score) best first, of the
    rows matching ``match`` (of ``allowed`` files; with ids above ``above``)."""
    w = ", ".join(str(x) for x in BM25_WEIGHTS)
    where: list[str] = ["chunks_fts MATCH ?"]
    params: list[object] = [match]
    if above is not None:
        where.append("t.rowid > ?")
        params.append(above)
    if allowed is None:
        sql = f"SELECT t.rowid AS id, bm25(chunks_fts, {w}) AS score FROM chunks_fts t "
    else:
        sql = (f"SELECT t.rowid AS id, bm25(chunks_fts, {w}) AS score FROM chunks_fts t "
               "JOIN chunks k ON k.id = t.rowid ")
        where.append("k.file_id IN (SELECT value FROM json_each(?))")
        params.append(allowed.json)
    sql += f"WHERE {' AND '.join(where)} ORDER BY score, t.{TIE_BREAK} LIMIT ?"
    return sql, (*params, limit)


class Reader:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path
        self._lexicon = Lexicon(conn)

    async def lexical(
        self, match: str, limit: int, allowed: Allowed | None = None
    ) -> tuple[list[tuple[int, float]], dict[int, ChunkRecord]]:
        """(chunk rowid, bm25) best first, and those chunks' rows. ``match`` must come
        from ``build_match``. With ``allowed``, only chunks of those files are ranked
        (before the limit). Ranked by the lexicon when one is built (``store.lexicon``:
        the same ranking, at a cost that follows the query's terms), else by FTS5."""
        with mapped_errors(self.db_path):
            try:
                if await self._lexicon.usable():
                    async with self._lexicon.snapshot():
                        ranked = await self._lexicon.ranked(match, limit, allowed,
                                                            self._ranked_by_fts)
                        if ranked is not None:
                            found = await self.rows([cid for cid, _ in ranked])
                            return [(c, s) for c, s in ranked if c in found], found
                return await self._by_fts(match, limit, allowed)
            except sqlite3.OperationalError as exc:
                # build_match only emits quoted terms, so this is not expected; a query
                # error must still never reach the caller as a crash.
                if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                    return [], {}
                raise

    async def _by_fts(
        self, match: str, limit: int, allowed: Allowed | None
    ) -> tuple[list[tuple[int, float]], dict[int, ChunkRecord]]:
        """FTS5 ranks every row that matches, and the rows come in the same statement."""
        hits, params = _fts_hits(match, limit, allowed, None)
        sql = (
            f"WITH hits AS ({hits}) SELECT {ROW_COLUMNS}, hits.score FROM hits "
            "JOIN chunks c ON c.id = hits.id JOIN files f ON f.id = c.file_id "
            f"JOIN roots r ON r.id = f.root_id ORDER BY hits.score, hits.id"
        )
        rows = await self.conn.execute_fetchall(sql, params)
        ranked = [(int(r[0]), float(r[-1])) for r in rows]
        return ranked, {int(r[0]): row_dict(r) for r in rows}

    async def _ranked_by_fts(self, match: str, limit: int, allowed: Allowed | None,
                             above: int) -> list[tuple[int, float]]:
        """FTS5's ranking of the chunks with ids above ``above`` alone."""
        hits, params = _fts_hits(match, limit, allowed, above)
        rows = await self.conn.execute_fetchall(hits, params)
        return [(int(r[0]), float(r[1])) for r in rows]

    async def rows(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not rowids:
            return {}
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                ROW_SQL + f"WHERE c.id IN ({','.join('?' * len(rowids))})", tuple(rowids)
            )
        return {int(r[0]): row_dict(r) for r in rows}

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

    async def all_vectors(self, model: str, dim: int) -> tuple[list[int], list[int], F32]:
        """Every chunk with a vector of ``model``: rowids, their files, the vectors."""
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(
                "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e "
                "ON e.content_hash = c.content_hash AND e.model = ?",
                (model,),
            )
            rows = list(await cur.fetchall())
        ids = [int(r[0]) for r in rows]
        files = [int(r[1]) for r in rows]
        if not rows:
            return ids, files, np.zeros((0, dim), dtype=np.float32)
        blob = b"".join(bytes(r[2]) for r in rows)
        return ids, files, np.frombuffer(blob, dtype=np.float32).reshape(len(rows), -1).copy()

    async def catalog(self) -> tuple[dict[int, str], list[FileEntry], list[tuple[int, int]]]:
        """Every root, every file as filters see it, and every link between two files
        (linking file, linked file)."""
        with mapped_errors(self.db_path):
            roots = await self.conn.execute_fetchall("SELECT id, path FROM roots")
            files = await self.conn.execute_fetchall(f"SELECT {FILE_ENTRY_COLUMNS} FROM files")
            edges = await self.conn.execute_fetchall(
                "SELECT DISTINCT file_id, target_file_id FROM links "
                "WHERE target_file_id IS NOT NULL AND target_file_id != file_id")
        return ({int(r[0]): str(r[1]) for r in roots},
                [file_entry(f) for f in files],
                [(int(e[0]), int(e[1])) for e in edges])

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
                "  AND e.model = ?)), (SELECT COUNT(*) FROM roots), "
                "(SELECT COUNT(*) FROM links), "
                "(SELECT COUNT(*) FROM links WHERE target_file_id IS NULL)",
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
            "links": int(row[5]),
            "unresolved_links": int(row[6]),
        }
        return counts, model

    async def root_counts(self) -> list[RootCount]:
        """Every root with its file and chunk counts, in the order they were indexed."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT r.path, COUNT(f.id), COALESCE(SUM("
                " (SELECT COUNT(*) FROM chunks c WHERE c.file_id = f.id)), 0) "
                "FROM roots r LEFT JOIN files f ON f.root_id = r.id GROUP BY r.id ORDER BY r.id")
        return [{"path": str(r[0]), "files": int(r[1]), "chunks": int(r[2])} for r in rows]

    async def processes(self, origin: str) -> tuple[list[ProcessInfo], int]:
        """The other processes with the index open, and the change sequence number."""
        others = await Presence(self.conn, self.db_path, origin).others()
        try:
            with mapped_errors(self.db_path):
                return others, await sequence(self.conn)
        except IndexDatabaseError:  # an index made before the log (read-only)
            return others, 0

    async def roots(self) -> list[str]:
        with mapped_errors(self.db_path):
            cur = await self.conn.execute("SELECT path FROM roots ORDER BY id")
            return [str(r[0]) for r in await cur.fetchall()]
