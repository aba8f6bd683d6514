"""What ``store.migrate`` copies from: an index, an SQLite file or a PostgreSQL
database, read in one snapshot and never written.

Both are read by the same few reads (``Source``), written once over the statements
both stores share (``store.statements``): a value of ``meta`` (``embedding_model``),
the folders, each folder's file rows, a batch of those files as the writer takes
them (``FileToWrite``: their chunks, front matter and links), and the vectors of a
model a block at a time. Each store supplies only its connection, held in one
snapshot whatever other processes commit meanwhile, and how its driver hands over
a vector:

- SQLite: a connection that cannot write (``recovery.read_uri``) inside one read
  transaction; a vector is its float32 bytes.
- PostgreSQL: a connection inside one ``REPEATABLE READ READ ONLY`` transaction; a
  vector is pgvector's, made into the same bytes.

A vector whose bytes are not as many as its size says (torn: not expected) is left
out of its block (``sqlite.vectors.by_size``); the text it was for is embedded again
once the copy is opened.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
import anyio

from ..core.chunker import Chunk
from ..core.frontmatter import FileMetadata
from ..core.links import Link
from ..errors import IndexDatabaseError, NotAnIndexError, SchemaVersionError
from ..location import DatabaseUrl, IndexLocation
from .sqlite.recovery import read_uri
from .sqlite.schema import SCHEMA_VERSION as SQLITE_SCHEMA_VERSION
from .sqlite.sql import OnConnection, snapshot
from .sqlite.vectors import by_size
from .statements import Statements
from .written import FileToWrite, Row

if TYPE_CHECKING:
    from ..core.vectors import F32

#: The ``files`` columns a file is read from, in the order ``_file`` takes them.
_FILE_COLUMNS = ("id, rel_path, mtime_ns, size, sha256, title, tags, aliases, frontmatter, "
                 "line_count, encoding, kind, langs_pending")
#: What to give ``--from``, for the messages.
_GIVE = "give the index to copy (--from index.db, or --from postgresql://user@host/dbname)"


@dataclass(frozen=True, slots=True)
class VectorBlock:
    """Vectors of one model, a block of rows in the order they were stored."""

    #: The last row read (the next block starts after it); rows read, kept or not.
    upto: int
    rows: int
    #: The rows kept, a size at a time: their texts (content hashes) and vectors.
    sizes: list[tuple[list[str], F32]]


class Source:
    """An index held in one snapshot, and the reads a copy makes of it."""

    def __init__(self, sql: Statements, vector_bytes: Callable[[Any], bytes]) -> None:
        self._sql = sql
        self._vector_bytes = vector_bytes

    async def value(self, key: str) -> str | None:
        """A value of ``meta`` (None: not set)."""
        rows = await self._sql.fetch("SELECT value FROM meta WHERE key = ?", key)
        return None if not rows else str(rows[0][0])

    async def roots(self) -> list[tuple[int, str]]:
        """The folders (id, path), in the order they were added."""
        rows = await self._sql.fetch("SELECT id, path FROM roots ORDER BY id")
        return [(int(r[0]), str(r[1])) for r in rows]

    async def count_files(self) -> int:
        return int((await self._sql.fetch("SELECT count(*) FROM files"))[0][0])

    async def count_vectors(self, model: str | None) -> tuple[int, int]:
        """How many vectors are of ``model``, and how many of other models."""
        every = int((await self._sql.fetch("SELECT count(*) FROM embeddings"))[0][0])
        rows = await self._sql.fetch("SELECT count(*) FROM embeddings WHERE model = ?", model)
        return int(rows[0][0]), every - int(rows[0][0])

    async def file_rows(self, root_id: int) -> list[Row]:
        """A folder's files, as ``files`` takes them."""
        return list(await self._sql.fetch(
            f"SELECT {_FILE_COLUMNS} FROM files WHERE root_id = ? ORDER BY id", root_id))

    async def files(self, rows: Sequence[Row]) -> list[FileToWrite]:
        """These files (rows of ``file_rows``) as the writer takes them."""
        ids = [int(r[0]) for r in rows]
        among, listed = self._sql.dialect.among, self._sql.dialect.listed(ids)
        chunks: dict[int, list[Chunk]] = {i: [] for i in ids}
        for r in await self._sql.fetch(
                "SELECT file_id, chunk_index, heading_path, content, content_hash, "
                f"line_start, line_end, page, lang FROM chunks WHERE file_id {among} "
                "ORDER BY file_id, chunk_index", listed):
            chunks[int(r[0])].append(Chunk(
                chunk_index=int(r[1]), heading_path=str(r[2]), content=str(r[3]),
                content_hash=str(r[4]), line_start=int(r[5]), line_end=int(r[6]),
                page=None if r[7] is None else int(r[7]),
                lang=None if r[8] is None else str(r[8])))
        links: dict[int, list[Link]] = {i: [] for i in ids}
        for r in await self._sql.fetch(
                "SELECT file_id, kind, embed, target, text, line, heading, chunk_index, "
                f"context FROM links WHERE file_id {among} ORDER BY id", listed):
            links[int(r[0])].append(Link(
                kind=r[1], embed=bool(r[2]), target=str(r[3]), text=str(r[4]),
                line=int(r[5]), heading=str(r[6]), chunk_index=int(r[7]),
                context=str(r[8])))
        return [_file(r, chunks[int(r[0])], links[int(r[0])]) for r in rows]

    async def vectors(self, model: str, *, after: int, limit: int) -> VectorBlock:
        """The next ``limit`` vectors of ``model`` stored after the row ``after``."""
        rows = await self._sql.fetch(
            "SELECT id, content_hash, dim, vector FROM embeddings WHERE model = ? AND id > ? "
            "ORDER BY id LIMIT ?", model, after, limit)
        block = [(str(r[1]), int(r[2]), self._vector_bytes(r[3])) for r in rows]
        return VectorBlock(upto=int(rows[-1][0]) if rows else after, rows=len(rows),
                           sizes=[([str(r[0]) for r in same], vecs)
                                  for same, vecs in by_size(block)])


def _file(row: Row, chunks: list[Chunk], links: list[Link]) -> FileToWrite:
    """A row of ``_FILE_COLUMNS``, with its chunks and links, as the writer takes it."""
    return FileToWrite(
        rel_path=str(row[1]), mtime_ns=int(row[2]), size=int(row[3]), sha256=str(row[4]),
        metadata=FileMetadata(title=row[5], tags=tuple(json.loads(row[6])),
                              aliases=tuple(json.loads(row[7])),
                              frontmatter=json.loads(row[8])),
        chunks=chunks, line_count=int(row[9]), encoding=str(row[10]), links=links,
        kind=str(row[11]), langs_told=int(row[12]) == 0)  # (else told in the copy)


@asynccontextmanager
async def open_source(where: IndexLocation) -> AsyncIterator[Source]:
    """The index at ``where`` held in one snapshot while the context lasts."""
    if isinstance(where, DatabaseUrl):
        async with _postgres(where) as source:
            yield source
    else:
        async with _sqlite(where) as source:
            yield source


# ---------------------------------------------------------------- SQLite


@asynccontextmanager
async def _sqlite(path: Path) -> AsyncIterator[Source]:
    if not await anyio.to_thread.run_sync(path.is_file):
        raise NotAnIndexError(f"{path} is not a file: {_GIVE}")
    try:
        # (shielded, as store.sqlite.schema.connect does: cancelled half-way, the
        # connection's thread would be left running with no one to close it)
        with anyio.CancelScope(shield=True):
            conn = await aiosqlite.connect(read_uri(path), uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise IndexDatabaseError(f"cannot read the index {path} ({exc})") from exc
    try:
        async with snapshot(conn, path):
            await _sqlite_version(conn, path)  # (the first read: the snapshot's)
            yield Source(OnConnection(conn, path), bytes)
    finally:
        with anyio.move_on_after(2, shield=True):
            await conn.close()


async def _sqlite_version(conn: aiosqlite.Connection, path: Path) -> None:
    """The file is an index of this Rifflux's schema (checked by hand: the store's own
    check would call a file that is no database damaged, and offer to rebuild it)."""
    try:
        rows = list(await conn.execute_fetchall(
            "SELECT value FROM meta WHERE key = 'schema_version'"))
    except sqlite3.DatabaseError as exc:
        raise NotAnIndexError(f"{path} is not a Rifflux index ({exc}): {_GIVE}") from exc
    version = str(rows[0][0]) if rows else None
    if version != str(SQLITE_SCHEMA_VERSION):
        raise SchemaVersionError(
            f"{path} has index schema version {version}, this Rifflux copies version "
            f"{SQLITE_SCHEMA_VERSION}: open it once with this Rifflux (rifflux status "
            f"--db {path}) to upgrade it, then migrate it")


# ---------------------------------------------------------------- PostgreSQL


@asynccontextmanager
async def _postgres(where: DatabaseUrl) -> AsyncIterator[Source]:
    import asyncpg  # (only for a URL, as every PostgreSQL module)
    from pgvector.asyncpg import register_vector

    from .postgres.connection import OnConnection as OnPostgres
    from .postgres.connection import close, connect, mapped_errors
    from .postgres.schema import check_version

    try:
        conn = await connect(where, seconds=30.0, vectors=False)
    except IndexDatabaseError as exc:
        if isinstance(exc.__cause__, asyncpg.InvalidCatalogNameError):
            raise NotAnIndexError(f"there is no database {where} to copy: {_GIVE}") from exc
        raise
    try:
        await check_version(conn, where)
        with mapped_errors(where):
            await register_vector(conn)
            # one snapshot for every read; closing the connection ends it
            await conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield Source(OnPostgres(conn, where), _pgvector_bytes)
    finally:
        await close(conn)


def _pgvector_bytes(vector: Any) -> bytes:
    """A pgvector ``Vector`` as the float32 bytes SQLite stores."""
    return bytes(vector.to_numpy().tobytes())
