"""``rifflux migrate``: an SQLite index copied into a PostgreSQL database, vectors
included, so that nothing is parsed or embedded again.

The copy goes through the PostgreSQL store's own writer (``store.postgres.writer``),
as an indexing run would write the same files: the folders, then each folder's
files a batch at a time (their chunks, front matter and links, which the writer
resolves as it goes), then the vectors of the model in use, a batch at a time.
The HNSW index over them is built once at the end, which is much faster than
growing it with every batch. The SQLite file is read, never written, in one read
transaction: a process writing to it meanwhile does not tear the copy.

The target must hold no index yet (an empty database, or one made by Rifflux with
no folder in it): a copy never mixes into another index. Vectors of other models
(which SQLite keeps to switch back to) are left behind and counted. A vector whose
bytes are not as many as its size says (torn: not expected) is left behind too, and
its text is embedded again once the PostgreSQL index is opened.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

import anyio

from ..core.chunker import Chunk
from ..core.frontmatter import FileMetadata
from ..core.links import Link
from ..errors import IndexDatabaseError, NotAnIndexError, SchemaVersionError
from ..location import DatabaseUrl
from .postgres.connection import close, connect, mapped_errors
from .postgres.schema import ensure_schema
from .postgres.session import Session
from .postgres.writer import Writer
from .sqlite.schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from .sqlite.vectors import by_size
from .written import FileToWrite

#: Files written per transaction, and vectors.
FILE_BATCH = 200
VECTOR_BATCH = 2_000

#: Told what is copied: a stage (``files``, ``vectors``, ``index``), done, of how many.
Progress = Callable[[str, int, int], None]


class Migrated(TypedDict):
    """What ``migrate`` copied."""

    roots: int
    files: int
    chunks: int
    vectors: int
    model: str | None
    #: Vectors of other models than the one in use, not copied.
    vectors_left: int
    seconds: float


async def migrate(source: Path, target: str | DatabaseUrl, *,
                  progress: Progress | None = None) -> Migrated:
    """Copy the SQLite index ``source`` into the empty PostgreSQL database ``target``."""
    where = target if isinstance(target, DatabaseUrl) else DatabaseUrl(target)
    started = time.perf_counter()
    tell = progress or (lambda stage, done, total: None)
    with _Source(source) as lite:
        model = lite.value("embedding_model")
        await _prepare(where)
        session = Session(where, seconds=30.0)
        try:
            await session.open()
            writer = Writer(session, vector_index=False)
            await writer.missing.adopt(model)
            await writer.roots.load()
            files = chunks = 0
            total = lite.count("SELECT count(*) FROM files")
            for root_id, path in lite.rows("SELECT id, path FROM roots ORDER BY id"):
                into = await writer.roots.root_id(Path(path))
                if into is None:  # (roots never overlap in an index: never happens)
                    raise IndexDatabaseError(f"cannot copy the folder {path}: it overlaps "
                                             f"another folder already in {where}")
                rows = await anyio.to_thread.run_sync(lite.file_rows, int(root_id))
                for i in range(0, len(rows), FILE_BATCH):
                    batch = await anyio.to_thread.run_sync(lite.batch, rows[i:i + FILE_BATCH])
                    await writer.write_files(into, batch)
                    files += len(batch)
                    chunks += sum(len(f.chunks) for f in batch)
                    tell("files", files, total)
            vectors, left = 0, 0
            if model is not None:
                total = lite.count("SELECT count(*) FROM embeddings WHERE model = ?", model)
                left = lite.count("SELECT count(*) FROM embeddings WHERE model != ?", model)
                cursor = lite.conn.execute(
                    "SELECT content_hash, dim, vector FROM embeddings WHERE model = ? "
                    "ORDER BY id", (model,))
                while block := await anyio.to_thread.run_sync(cursor.fetchmany, VECTOR_BATCH):
                    for same, vecs in by_size(block):  # (a vector torn short: left out)
                        await writer.write_vectors(model, [str(r[0]) for r in same], vecs)
                        vectors += len(same)
                    tell("vectors", vectors, total)
                tell("index", 0, 1)
                await writer.make_vector_indexes()
                tell("index", 1, 1)
        finally:
            await session.close()
        return Migrated(roots=len(lite.rows("SELECT id FROM roots")), files=files,
                        chunks=chunks, vectors=vectors, model=model, vectors_left=left,
                        seconds=round(time.perf_counter() - started, 2))


async def _prepare(where: DatabaseUrl) -> None:
    """The schema made (or checked) in the target, which must hold no index yet."""
    conn = await connect(where, seconds=30.0, vectors=False)
    try:
        await ensure_schema(conn, where)
        with mapped_errors(where):
            held = int(await conn.fetchval("SELECT count(*) FROM files"))
            roots = int(await conn.fetchval("SELECT count(*) FROM roots"))
    finally:
        await close(conn)
    if held or roots:
        raise IndexDatabaseError(
            f"{where} holds an index already ({roots} folders, {held} files): migrate into "
            "a new, empty database (createdb NAME), or forget its folders first")


class _Source:
    """The SQLite index, read in one read transaction (a snapshot of it)."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise NotAnIndexError(f"{path} is not a file: give the SQLite index to copy "
                                  "(--from index.db)")
        self.path = path
        try:
            self.conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                        check_same_thread=False, isolation_level=None)
            self.conn.execute("BEGIN")
            version = self.value("schema_version")
        except sqlite3.DatabaseError as exc:
            raise NotAnIndexError(f"{path} is not a Rifflux index ({exc}): give the "
                                  "SQLite index to copy (--from index.db)") from exc
        if version != str(SQLITE_SCHEMA_VERSION):
            self.conn.close()
            raise SchemaVersionError(
                f"{path} has index schema version {version}, this Rifflux copies version "
                f"{SQLITE_SCHEMA_VERSION}: open it once with this Rifflux (rifflux status "
                f"--db {path}) to upgrade it, then migrate it")

    def __enter__(self) -> _Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    def value(self, key: str) -> str | None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            raise NotAnIndexError(f"{self.path} is not a Rifflux index ({exc}): give the "
                                  "SQLite index to copy (--from index.db)") from exc
        return None if row is None else str(row[0])

    def rows(self, sql: str, *args: Any) -> list[Any]:
        return self.conn.execute(sql, args).fetchall()

    def count(self, sql: str, *args: Any) -> int:
        return int(self.conn.execute(sql, args).fetchone()[0])

    def file_rows(self, root_id: int) -> list[Any]:
        return self.rows(
            "SELECT id, rel_path, mtime_ns, size, sha256, title, tags, aliases, frontmatter, "
            "line_count, encoding FROM files WHERE root_id = ? ORDER BY id", root_id)

    def batch(self, rows: Sequence[Any]) -> list[FileToWrite]:
        """These files (of ``file_rows``) as the writer takes them."""
        ids = [int(r[0]) for r in rows]
        marks = ",".join("?" * len(ids))
        chunks: dict[int, list[Chunk]] = {i: [] for i in ids}
        for r in self.rows(
                "SELECT file_id, chunk_index, heading_path, content, content_hash, line_start, "
                f"line_end FROM chunks WHERE file_id IN ({marks}) ORDER BY file_id, "
                "chunk_index", *ids):
            chunks[int(r[0])].append(Chunk(
                chunk_index=int(r[1]), heading_path=r[2], content=r[3], content_hash=r[4],
                line_start=int(r[5]), line_end=int(r[6])))
        links: dict[int, list[Link]] = {i: [] for i in ids}
        for r in self.rows(
                "SELECT file_id, kind, embed, target, text, line, heading, chunk_index, "
                f"context FROM links WHERE file_id IN ({marks}) ORDER BY id", *ids):
            links[int(r[0])].append(Link(kind=r[1], embed=bool(r[2]), target=r[3], text=r[4],
                                         line=int(r[5]), heading=r[6],
                                         chunk_index=int(r[7]), context=r[8]))
        return [FileToWrite(
            rel_path=r[1], mtime_ns=int(r[2]), size=int(r[3]), sha256=r[4],
            metadata=FileMetadata(title=r[5], tags=tuple(json.loads(r[6])),
                                  aliases=tuple(json.loads(r[7])),
                                  frontmatter=json.loads(r[8])),
            chunks=chunks[int(r[0])], line_count=int(r[9]), encoding=r[10],
            links=links[int(r[0])]) for r in rows]
