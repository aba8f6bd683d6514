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

from ..core.catalog import Allowed
from ..core.chunker import embed_text
from ..core.filters import FileEntry, tag_levels
from ..core.vectors import F32
from ..errors import IndexDatabaseError
from ..types import ChunkRecord, Counts, IndexedFile, ProcessInfo, RootCount
from .changes import sequence
from .presence import Presence
from .schema import mapped_errors
from .written import FILE_ENTRY_COLUMNS, file_entry

#: bm25 column weights: a word in the heading breadcrumb counts double.
BM25_WEIGHTS = (2.0, 1.0, 1.0)  # heading_path, content, cjk (characters alone)

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


#: Where a chunk deleted since it was ranked goes among its ties (it is dropped later).
_GONE = ("", -1, "")


def stable_order(row: Sequence[Any]) -> tuple[str, int, str]:
    """How chunks of equal score are ordered (a row of ``ROW_COLUMNS``): by path, then
    chunk index, then root; the same in every index of the same files, however and in
    whatever order they were built (row ids are not)."""
    return str(row[5]), int(row[2]), str(row[6])


def _with_rows(hits: str) -> str:
    """A statement of (id, score, tier) rows -> the same with each chunk's
    ``ROW_COLUMNS`` first."""
    return (f"WITH hits AS ({hits}) SELECT {ROW_COLUMNS}, hits.tier, hits.score FROM hits "
            "JOIN chunks c ON c.id = hits.id JOIN files f ON f.id = c.file_id "
            "JOIN roots r ON r.id = f.root_id ORDER BY hits.tier DESC, hits.score")


def _place(row: Sequence[Any]) -> tuple[int, float]:
    """Where a lexical hit ranks, before ties are broken: its tier (chunks holding every
    word first), then its bm25 (lower is better)."""
    return -int(row[-2]), float(row[-1])


def title_of(stored: str | None, rel_path: str) -> str:
    """The front-matter title, else the first H1 (both stored), else the file's name."""
    return stored or PurePosixPath(rel_path).stem


def iso_utc(mtime_ns: int) -> str:
    d = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    return f"{d.year}-{d.month:02}-{d.day:02}T{d.hour:02}:{d.minute:02}:{d.second:02}Z"


class Reader:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    async def lexical(
        self, match: str, limit: int, allowed: Allowed | None = None, every: str | None = None,
    ) -> tuple[list[tuple[int, float]], dict[int, ChunkRecord]]:
        """(chunk rowid, bm25) best first, and those chunks' rows: one round trip to the
        connection's thread (more when chunks tied on bm25 straddle the limit). ``match``
        must come from ``build_match`` and ``every`` from ``build_every``: the chunks
        that match it (that hold every word of the query) come first, each group by
        bm25. With ``allowed``, only chunks of those files are ranked (before the
        limit). Equal scores are in ``stable_order``, never by row id, and which of
        them make the limit is decided by it too."""
        score = "bm25(chunks_fts, " + ", ".join(str(x) for x in BM25_WEIGHTS) + ")"
        tier = ("t.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :every)"
                if every is not None else "0")
        matching = f"SELECT t.rowid AS id, {score} AS score, {tier} AS tier FROM chunks_fts t "
        if allowed is None:
            matching += "WHERE chunks_fts MATCH :match"
        else:
            matching += ("JOIN chunks k ON k.id = t.rowid WHERE chunks_fts MATCH :match "
                         "AND k.file_id IN (SELECT value FROM json_each(:allowed))")
        params: dict[str, Any] = {"match": match, "every": every,
                                  "allowed": None if allowed is None else allowed.json}
        params = {k: v for k, v in params.items() if f":{k}" in matching}
        with mapped_errors(self.db_path):
            try:
                rows = list(await self.conn.execute_fetchall(
                    _with_rows(f"{matching} ORDER BY tier DESC, score LIMIT :limit"),
                    {**params, "limit": limit + 1}))
                ties: list[int] = []
                last = (0, 0.0)
                if len(rows) > limit and _place(rows[limit]) == _place(rows[limit - 1]):
                    last = _place(rows[limit])  # a tie across the limit: all of it
                    rows = [r for r in rows if _place(r) < last]
                    ties = [int(r[0]) for r in await self.conn.execute_fetchall(
                        f"{matching} AND {score} = :score AND {tier} = :tier",
                        {**params, "score": last[1], "tier": -last[0]})]
            except sqlite3.OperationalError as exc:
                # build_match only emits quoted terms, so this is not expected; a query
                # error must still never reach the caller as a crash.
                if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                    return [], {}
                raise
        rows = sorted(rows, key=lambda r: (*_place(r), *stable_order(r)))[:limit]
        ranked = [(int(r[0]), float(r[-1])) for r in rows]
        found = {int(r[0]): row_dict(r) for r in rows}
        if ties:
            keys = await self._order_keys(ties)
            ties = sorted(ties, key=lambda cid: keys.get(cid, _GONE))[: limit - len(ranked)]
            ranked += [(cid, last[1]) for cid in ties]
            found.update(await self.rows(ties))
        return ranked, found

    async def in_stable_order(self, ranked: list[tuple[int, float]],
                              limit: int) -> list[tuple[int, float]]:
        """``ranked`` (row id, score; highest first) with equal scores in
        ``stable_order``, cut to ``limit``: the same order whatever the row ids, so two
        indexes of the same files rank alike. Only tied chunks are looked up."""
        tied = [cid for i, (cid, score) in enumerate(ranked)
                if (i > 0 and ranked[i - 1][1] == score)
                or (i + 1 < len(ranked) and ranked[i + 1][1] == score)]
        if not tied:
            return ranked[:limit]
        keys = await self._order_keys(tied)
        return sorted(ranked, key=lambda hit: (-hit[1], *keys.get(hit[0], _GONE)))[:limit]

    async def _order_keys(self, rowids: Sequence[int]) -> dict[int, tuple[str, int, str]]:
        """``stable_order`` of these chunks."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT c.id, f.rel_path, c.chunk_index, r.path FROM chunks c "
                "JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id "
                "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(list(rowids)),))
        return {int(r[0]): (str(r[1]), int(r[2]), str(r[3])) for r in rows}

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

    async def files(self, root_id: int | None = None) -> list[IndexedFile]:
        """The files the index holds (of one root, when given) with their chunk counts, by
        root in the order they were indexed, then path."""
        where, params = ("WHERE f.root_id = ? ", (root_id,)) if root_id is not None else ("", ())
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT f.rel_path, r.path, f.title, f.mtime_ns, "
                "(SELECT COUNT(*) FROM chunks c WHERE c.file_id = f.id) "
                f"FROM files f JOIN roots r ON r.id = f.root_id {where}"
                "ORDER BY r.id, f.rel_path", params)
        return [{"path": str(r[0]), "root": str(r[1]), "title": title_of(r[2], str(r[0])),
                 "modified": iso_utc(int(r[3])), "chunks": int(r[4])} for r in rows]

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
