"""The writer's statements on files and vectors. Only the indexer actor holds a writer
connection; the writer's roots (``roots``) and the texts still lacking vectors
(``missing``) are kept on it too, beside the files, and what builds the lexical
search's lists again (``lexicon_build``), which writes on a connection of its own.

Each public coroutine that changes the index is one transaction, so an
interrupted run never leaves a half-indexed file behind.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import aiosqlite

from ...core.plan import StoredState
from ...errors import IndexBusyError
from ..written import (
    Edges,
    FileToWrite,
    Written,
    batches,
    chunk_id_for,
    file_entries,
    marks,
)
from .link_index import forget_links, write_links
from .missing import Change, Missing
from .roots import Roots
from .schema import cjk_columns
from .sql import mapped_errors, snapshot, transaction
from .telling import Telling

if TYPE_CHECKING:  # (numpy is imported where vectors are made or read, not before)
    from ...core.vectors import F32
    from .codes_fill import CodesFiller
    from .lexicon_build import LexiconBuilder

__all__ = ["FileToWrite", "Writer", "Written", "chunk_id_for"]

logger = logging.getLogger(__name__)

#: Full-text index segments that make a write merge them (see ``Writer.merge_fts``).
_FTS_SEGMENTS_MOST = 4
#: The full-text columns of a chunk without CJK text (``cjk_columns``).
_NO_CJK = (None, None, None)


class Writer:
    """Files and vectors; ``roots`` and ``missing`` share its connection (and its
    transactions: a write keeps the missing texts exact inside them); ``lexicon``
    builds the lexical search's lists on a connection of its own."""

    def __init__(self, conn: aiosqlite.Connection, db_path: Path, *,
                 read_only: bool = False, busy_timeout_ms: int = 5000) -> None:
        self.conn = conn
        self.db_path = db_path
        self.missing = Missing(conn, db_path, read_only=read_only)
        self.roots = Roots(conn, db_path, self.missing)
        self.telling = Telling(conn, db_path)
        self._lexicon: LexiconBuilder | None = None
        self._codes: CodesFiller | None = None
        self._busy_timeout_ms = busy_timeout_ms
        self._read_only = read_only

    def snapshot(self) -> AbstractAsyncContextManager[None]:
        """Reads on this connection that all see one state of the database (nothing is
        written inside): what the change log says and what it names agree."""
        return snapshot(self.conn, self.db_path)

    @property
    def lexicon(self) -> LexiconBuilder:
        """The lexicon's builder, made (and numpy imported) after the first job: a process
        that only searches never needs it."""
        if self._lexicon is None:
            from .lexicon_build import LexiconBuilder

            self._lexicon = LexiconBuilder(self.db_path, read_only=self._read_only,
                                           busy_timeout_ms=self._busy_timeout_ms)
        return self._lexicon

    async def upkeep(self) -> None:
        """The compact rows of vectors an older version stored without them, once
        (``codes_fill``), then the lexicon built again when stale (``lexicon_build``)."""
        if self._codes is None:
            from .codes_fill import CodesFiller

            self._codes = CodesFiller(self.db_path, read_only=self._read_only,
                                      busy_timeout_ms=self._busy_timeout_ms)
        try:
            await self._codes.fill()
        except IndexBusyError as exc:  # (another writer: the next upkeep goes on with it)
            logger.info("the vectors' compact rows are filled later: %s", exc)
        finally:
            await self.lexicon.refresh()

    async def mend(self) -> None:
        """Nothing: what SQLite keeps (its full-text index included) survives a restart
        with the file, and a damaged file is found and rebuilt at open (``recovery``)."""

    async def known_files(self, root_id: int) -> dict[str, StoredState]:
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT rel_path, id, mtime_ns, size, sha256 FROM files WHERE root_id = ?",
                (root_id,),
            )
        return {rel: StoredState(i, mtime, size, sha) for rel, i, mtime, size, sha in rows}

    async def touch(self, touches: Sequence[tuple[int, int, int]]) -> Written:
        """(file id, mtime_ns, size): files whose bytes did not change, in one transaction.
        Their catalog entries come back (date filters read ``mtime_ns`` there)."""
        if not touches:
            return Written()
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                await self.conn.executemany(
                    "UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?",
                    [(mtime, size, file_id) for file_id, mtime, size in touches],
                )
            entries = await file_entries(self.conn, (file_id for file_id, _, _ in touches))
        return Written(files=tuple(entries))

    async def write_files(self, root_id: int, files: Sequence[FileToWrite]) -> Written:
        """Replace the chunks of whole files, all in one transaction.

        Each file is written completely or not at all, so an interrupted run
        never leaves a half-indexed file; grouping a few files per transaction
        keeps the FTS5 index from flushing a segment per file.
        """
        if not files:
            return Written()
        now = time.time()
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                # (one statement for all the files, and one read of their ids: a round
                # trip to the connection's thread per file is what a bulk index paid)
                await self.conn.executemany(
                    "INSERT INTO files(root_id, rel_path, mtime_ns, size, sha256, title, "
                    "tags, aliases, indexed_at, frontmatter, line_count, encoding, kind, "
                    "langs, langs_pending) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                    "ON CONFLICT(root_id, rel_path) DO UPDATE SET "
                    "mtime_ns=excluded.mtime_ns, size=excluded.size, sha256=excluded.sha256, "
                    "title=excluded.title, tags=excluded.tags, aliases=excluded.aliases, "
                    "indexed_at=excluded.indexed_at, frontmatter=excluded.frontmatter, "
                    "line_count=excluded.line_count, encoding=excluded.encoding, "
                    "kind=excluded.kind, langs=excluded.langs, "
                    "langs_pending=excluded.langs_pending",
                    [(root_id, f.rel_path, f.mtime_ns, f.size, f.sha256, f.metadata.title,
                      json.dumps(f.metadata.tags), json.dumps(f.metadata.aliases), now,
                      json.dumps(f.metadata.frontmatter, ensure_ascii=False), f.line_count,
                      f.encoding, f.kind, f.langs, f.langs_pending) for f in files],
                )
                id_of: dict[str, int] = {}
                for part in batches([f.rel_path for f in files]):
                    rows = await self.conn.execute_fetchall(
                        "SELECT rel_path, id FROM files WHERE root_id = ? AND rel_path IN "
                        f"({marks(len(part))})", (root_id, *part))
                    id_of.update((str(r[0]), int(r[1])) for r in rows)
                file_ids = [id_of[f.rel_path] for f in files]
                ids = marks(len(file_ids))
                cur = await self.conn.execute(
                    f"DELETE FROM chunks WHERE file_id IN ({ids}) RETURNING id, content_hash",
                    tuple(file_ids),
                )
                removed = [(int(r[0]), str(r[1])) for r in await cur.fetchall()]
                await self.conn.executemany(
                    "INSERT INTO chunks(chunk_id, file_id, chunk_index, heading_path, "
                    "content, content_hash, line_start, line_end, page, fts_heading, "
                    "fts_content, cjk, lang) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [
                        (chunk_id_for(root_id, f.rel_path, c.chunk_index, c.content_hash),
                         fid, c.chunk_index, c.heading_path, c.content, c.content_hash,
                         c.line_start, c.line_end, c.page,
                         *(cjk_columns(c.heading_path, c.content) if f.cjk else _NO_CJK),
                         c.lang)
                        for f, fid in zip(files, file_ids, strict=True)
                        for c in f.chunks
                    ],
                )
                cur = await self.conn.execute(
                    f"SELECT id, content_hash, file_id FROM chunks WHERE file_id IN ({ids}) "
                    "ORDER BY file_id, chunk_index",
                    tuple(file_ids),
                )
                added = [(int(r[0]), str(r[1]), int(r[2])) for r in await cur.fetchall()]
                change = await self.missing.inspect(removed, added)
                edges = await write_links(self.conn, root_id, list(zip(file_ids, files,
                                                                       strict=True)))
        entries = tuple(f.entry(fid, root_id) for f, fid in zip(files, file_ids, strict=True))
        return replace(self.missing.committed(change), files=entries,
                       roots=self.roots.entry(root_id), links=edges)

    async def delete_files(self, root_id: int, rel_paths: Sequence[str]) -> Written:
        """Remove files and their chunks, in one transaction."""
        if not rel_paths:
            return Written()
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                change, gone, edges = await self._delete(root_id, rel_paths)
        return replace(self.missing.committed(change), files_removed=gone, links=edges)

    async def _delete(self, root_id: int, rel_paths: Sequence[str],
                      ) -> tuple[Change, tuple[int, ...], Edges]:
        """Inside a transaction: delete files and their chunks; the change, the ids of the
        files gone, and the links resolved again."""
        removed: list[tuple[int, str]] = []
        gone: list[int] = []
        for part in batches(rel_paths):
            cur = await self.conn.execute(
                "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE "
                f"root_id = ? AND rel_path IN ({marks(len(part))})) "
                "RETURNING id, content_hash",
                (root_id, *part),
            )
            removed.extend((int(r[0]), str(r[1])) for r in await cur.fetchall())
            cur = await self.conn.execute(
                f"DELETE FROM files WHERE root_id = ? AND rel_path IN "
                f"({marks(len(part))}) RETURNING id",
                (root_id, *part),
            )
            gone.extend(int(r[0]) for r in await cur.fetchall())
        change = await self.missing.inspect(removed, [])
        return change, tuple(gone), await forget_links(self.conn, root_id, gone)

    # ------------------------------------------------------------ vectors

    async def write_vectors(self, model: str, hashes: Sequence[str], vectors: F32, *,
                            lease: str | None = None) -> Written:
        """Store vectors of ``model``; the answer lists every chunk that uses them. Texts
        no chunk has any more (edited or deleted, by any process, while they were
        embedded) are dropped: their vectors would be orphans. A text another process
        stored a vector for meanwhile keeps that one. (``lease``: none to confirm, the
        lock file's lease is held while its process lives.)"""
        import numpy as np

        from ...core.codes import packed

        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        blobs, rows_packed = [v.tobytes() for v in vecs], packed(vecs)  # (before the lock)
        index = {h: i for i, h in enumerate(hashes)}
        users: list[tuple[int, int, int]] = []
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                for part in batches(hashes):
                    rows = await self.conn.execute_fetchall(
                        f"SELECT id, content_hash, file_id FROM chunks WHERE content_hash IN "
                        f"({marks(len(part))})",
                        tuple(part),
                    )
                    users.extend((int(r[0]), index[str(r[1])], int(r[2])) for r in rows)
                used = sorted({row for _, row, _ in users})
                await self.conn.executemany(
                    "INSERT OR IGNORE INTO embeddings(content_hash, model, dim, vector) "
                    "VALUES (?,?,?,?)",
                    [(hashes[i], model, vecs.shape[1], blobs[i]) for i in used],
                )
                await self.conn.executemany(  # (not for another's vector, maybe not equal)
                    "INSERT OR REPLACE INTO embedding_codes(id, model, codes) SELECT id, "
                    "model, ? FROM embeddings WHERE content_hash = ? AND model = ? "
                    "AND vector = ?",
                    [(rows_packed[i], hashes[i], model, blobs[i]) for i in used],
                )
        self.missing.stored(model, hashes)
        if not users:
            return Written()
        rows_of = np.asarray([u[1] for u in users], dtype=np.int64)
        return Written(added_ids=tuple(u[0] for u in users),
                       added_files=tuple(u[2] for u in users), added_vectors=vecs[rows_of])

    async def prune_orphan_vectors(self) -> int:
        """Vectors no chunk or commit uses any more (their texts were edited or deleted
        away)."""
        with mapped_errors(self.db_path):
            cur = await self.conn.execute(
                "DELETE FROM embeddings WHERE content_hash NOT IN "
                "(SELECT content_hash FROM chunks) AND content_hash NOT IN "
                "(SELECT content_hash FROM commits)"
            )
            return cur.rowcount

    async def merge_fts(self) -> bool:
        """Merge the full-text index into one b-tree once writes have left it in
        ``_FTS_SEGMENTS_MOST`` or more (each write transaction adds one; FTS5 merges
        only some on its own): a search then reads each term's list once, about 0.3 ms
        less per lexical search on awesome-copilot. Answers are the same. Merging costs
        about 0.1 s per 10,000 chunks, hence not after every write. True when merged."""
        if self._read_only:
            return False
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT COUNT(DISTINCT segid) FROM chunks_fts_idx")
            if int(next(iter(rows))[0]) < _FTS_SEGMENTS_MOST:
                return False
            async with transaction(self.conn):
                await self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")
        return True
