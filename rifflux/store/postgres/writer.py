"""The PostgreSQL writer's statements on files and vectors: the rules of
``store.sqlite.writer`` (each change one transaction, a file written whole or not
at all), over PostgreSQL. Each chunk is written with its tokens (``lexemes``, see
``store.postgres.schema``), and with its vector when its text has one already.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from functools import partial

import numpy as np
from pgvector import Vector

from ...core.lexemes import indexed_text
from ...core.plan import StoredState
from ...core.vectors import F32
from ..written import FILE_ENTRY_COLUMNS, Edges, FileToWrite, Written, chunk_id_for, file_entry
from .bm25_index import INDEXES, rebuild
from .connection import Connection, mapped_errors, snapshot, transaction
from .links import _columns, forget_links, write_links
from .missing import Change, Missing
from .presence import confirm_lease
from .roots import Roots
from .schema import hnsw_index
from .session import Session, retried
from .telling import Telling

#: The HNSW graph's links per node and its build's search depth: cheaper than pgvector's
#: defaults (m = 16, ef_construction = 64), searched deeper (``semantic.search_depth``).
#: Measured on 100,571 hash vectors (30 queries, the build on one core): the defaults took
#: 108.8 s of CPU and found 0.92 of the exact top 10 searched 220 deep; m = 12,
#: ef_construction = 40 took 28.6 s and finds 0.90 searched 400 deep, 0.95 700 deep
#: (ef_construction 32 at m = 16: 33.8 s, 0.87 and 0.90). At a million vectors the build
#: was 390 s of a 751 s load (two parallel workers).
HNSW_LINKS = 12
HNSW_BUILD_DEPTH = 40
_HNSW = ("CREATE INDEX IF NOT EXISTS {name} ON chunk_vectors USING "
         "hnsw ((embedding::vector({dim})) vector_cosine_ops) "
         f"WITH (m = {HNSW_LINKS}, ef_construction = {HNSW_BUILD_DEPTH})")


#: Each chunk's vector of the model ``$1`` (of the chunks the statement's ``WHERE`` picks).
_CHUNK_VECTORS = ("INSERT INTO chunk_vectors(chunk_id, file_id, embedding) "
                  "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e "
                  "ON e.content_hash = c.content_hash AND e.model = $1 ")

#: What an HNSW graph's node takes beside its vector's floats (its links, at most m = 16,
#: on every layer it is on, and the headers): about 400 bytes.
_HNSW_NODE = 400


class Writer:
    """Each method one unit of work on the writer's session: run again whole on a new
    connection when the connection was lost (``session``)."""

    def __init__(self, session: Session, *, read_only: bool = False,
                 vector_index: bool = True) -> None:
        self.session = session
        #: False (a bulk load): each chunk's vector and the HNSW index are made by
        #: ``make_vector_indexes``, once every vector is stored.
        self.vector_index = vector_index
        self._dims: set[int] = set()
        self.where = session.where
        self._read_only = read_only
        self.missing = Missing(session, read_only=read_only)
        self.roots = Roots(session, self.missing)
        self.telling = Telling(session)
        self._indexed_dims: set[int] = set()

    @property
    def conn(self) -> Connection:
        return self.session.conn

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[None]:
        """Reads on this connection that all see one state of the database (nothing is
        written inside): what the change log says and what it names agree. One unit of
        work: a connection lost inside fails it whole (tried again by the caller)."""
        async with self.session.unit(), snapshot(self.conn):
            yield

    @retried()
    async def known_files(self, root_id: int) -> dict[str, StoredState]:
        with mapped_errors(self.where):
            rows = await self.conn.fetch(
                "SELECT rel_path, id, mtime_ns, size, sha256 FROM files WHERE root_id = $1",
                root_id)
        return {str(r[0]): StoredState(int(r[1]), int(r[2]), int(r[3]), str(r[4]))
                for r in rows}

    @retried()
    async def touch(self, touches: Sequence[tuple[int, int, int]]) -> Written:
        if not touches:
            return Written()
        with mapped_errors(self.where):
            async with transaction(self.conn):
                await self.conn.execute(
                    "UPDATE files f SET mtime_ns = t.m, size = t.s FROM unnest($1::bigint[], "
                    "$2::bigint[], $3::bigint[]) AS t(id, m, s) WHERE f.id = t.id",
                    *_columns(touches, 3))
            rows = await self.conn.fetch(
                f"SELECT {FILE_ENTRY_COLUMNS} FROM files WHERE id = ANY($1)",
                [file_id for file_id, _, _ in touches])
        return Written(files=tuple(map(file_entry, rows)))

    @retried()
    async def write_files(self, root_id: int, files: Sequence[FileToWrite]) -> Written:
        if not files:
            return Written()
        now = time.time()
        chunks = [(fi, c, lexemes) for fi, f in enumerate(files)
                  for c, lexemes in zip(f.chunks, indexed_texts(f), strict=True)]
        with mapped_errors(self.where):
            async with transaction(self.conn):
                ids = {str(r[1]): int(r[0]) for r in await self.conn.fetch(
                    "INSERT INTO files(root_id, rel_path, mtime_ns, size, sha256, title, tags, "
                    "aliases, indexed_at, frontmatter, line_count, encoding, kind, langs, "
                    "langs_pending) "
                    "SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::bigint[], "
                    "$5::text[], $6::text[], $7::text[], $8::text[], $9::float8[], $10::text[], "
                    "$11::int[], $12::text[], $13::text[], $14::text[], $15::int[]) "
                    "ON CONFLICT (root_id, rel_path) DO "
                    "UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size, "
                    "sha256 = excluded.sha256, title = excluded.title, tags = excluded.tags, "
                    "aliases = excluded.aliases, indexed_at = excluded.indexed_at, "
                    "frontmatter = excluded.frontmatter, line_count = excluded.line_count, "
                    "encoding = excluded.encoding, kind = excluded.kind, langs = excluded.langs, "
                    "langs_pending = excluded.langs_pending "
                    "RETURNING id, rel_path",
                    root_id, *_columns([_file_row(f, now) for f in files], 14))}
                file_ids = [ids[f.rel_path] for f in files]
                removed = [(int(r[0]), str(r[1])) for r in await self.conn.fetch(
                    "DELETE FROM chunks WHERE file_id = ANY($1) RETURNING id, content_hash",
                    file_ids)]
                rows = [(chunk_id_for(root_id, files[fi].rel_path, c.chunk_index,
                                      c.content_hash), file_ids[fi], c.chunk_index,
                         c.heading_path, c.content, c.content_hash, c.line_start, c.line_end,
                         c.page, lexemes, c.lang) for fi, c, lexemes in chunks]
                added = [(int(r[0]), str(r[1]), int(r[2])) for r in await self.conn.fetch(
                    "INSERT INTO chunks(chunk_id, file_id, chunk_index, heading_path, content, "
                    "content_hash, line_start, line_end, page, lexemes, lang) SELECT * FROM "
                    "unnest($1::text[], $2::bigint[], $3::int[], $4::text[], $5::text[], "
                    "$6::text[], $7::int[], $8::int[], $9::int[], $10::text[], $11::text[]) "
                    "RETURNING id, content_hash, file_id", *_columns(rows, 11))]
                if self.missing.model is not None:
                    await self.conn.execute(
                        "INSERT INTO chunk_vectors(chunk_id, file_id, embedding) "
                        "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e "
                        "ON e.content_hash = c.content_hash AND e.model = $2 "
                        "WHERE c.file_id = ANY($1)", file_ids, self.missing.model)
                change = await self.missing.inspect(removed, added)
                edges = await write_links(self.conn, root_id,
                                          list(zip(file_ids, files, strict=True)))
        entries = tuple(f.entry(fid, root_id) for f, fid in zip(files, file_ids, strict=True))
        return replace(self.missing.committed(change), files=entries,
                       roots=self.roots.entry(root_id), links=edges)

    @retried()
    async def delete_files(self, root_id: int, rel_paths: Sequence[str]) -> Written:
        if not rel_paths:
            return Written()
        with mapped_errors(self.where):
            async with transaction(self.conn):
                change, gone, edges = await self._delete(root_id, rel_paths)
        return replace(self.missing.committed(change), files_removed=gone, links=edges)

    async def _delete(self, root_id: int, rel_paths: Sequence[str],
                      ) -> tuple[Change, tuple[int, ...], Edges]:
        paths = list(rel_paths)
        removed = [(int(r[0]), str(r[1])) for r in await self.conn.fetch(
            "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE root_id = $1 "
            "AND rel_path = ANY($2)) RETURNING id, content_hash", root_id, paths)]
        gone = tuple(int(r[0]) for r in await self.conn.fetch(
            "DELETE FROM files WHERE root_id = $1 AND rel_path = ANY($2) RETURNING id",
            root_id, paths))
        change = await self.missing.inspect(removed, [])
        return change, gone, await forget_links(self.conn, root_id, gone)

    # ------------------------------------------------------------ vectors

    @retried()
    async def write_vectors(self, model: str, hashes: Sequence[str], vectors: F32, *,
                            lease: str | None = None) -> Written:
        """Store vectors of ``model`` for the texts some chunk still has (the others are
        dropped: they would be orphans), and give every chunk of those texts its vector;
        a text another process stored a vector for meanwhile keeps that one. With
        ``lease``, in the transaction that confirms the embedding lease is still that take
        (``presence.confirm_lease``), else nothing: ``LeaseLostError``."""
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        dim = int(vecs.shape[1])
        with mapped_errors(self.where):
            async with transaction(self.conn):
                if lease is not None:
                    await confirm_lease(self.conn, lease, self.where)
                if dim not in self._indexed_dims and self.vector_index:
                    await self.conn.execute(_HNSW.format(name=hnsw_index(dim), dim=dim))
                await self.conn.execute(
                    "INSERT INTO embeddings(content_hash, model, dim, vector) "
                    "SELECT t.h, $1, $2, t.v FROM unnest($3::text[], $4::vector[]) AS t(h, v) "
                    "WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.content_hash = t.h) "
                    "ON CONFLICT (content_hash, model) DO NOTHING",
                    model, dim, list(hashes), [Vector(v) for v in vecs])
                rows = await self.conn.fetch(
                    _CHUNK_VECTORS + "WHERE c.content_hash = ANY($2) ON CONFLICT (chunk_id) "
                    "DO NOTHING RETURNING chunk_id, file_id", model,
                    list(hashes)) if self.vector_index else []
        (self._indexed_dims if self.vector_index else self._dims).add(dim)
        self.missing.stored(model, hashes)
        return Written(added_ids=tuple(int(r[0]) for r in rows),
                       added_files=tuple(int(r[1]) for r in rows))

    async def make_vector_indexes(self) -> None:
        """What a bulk load left out (``vector_index=False``): each chunk's vector, given
        by one statement once every vector is stored, then the HNSW indexes, each built
        once over every vector, with the memory its graph takes (far faster than growing
        it a batch at a time; a graph larger than that memory is built on disk, many times
        slower). Each step runs again whole when the server restarts meanwhile."""
        if self.missing.model is not None and not self.vector_index:
            await self.session.run(self._chunk_vectors)
        for dim in sorted(self._dims - self._indexed_dims):
            await self.session.run(partial(self._vector_index, dim))
            self._indexed_dims.add(dim)

    async def _chunk_vectors(self) -> None:
        with mapped_errors(self.where):
            await self.conn.execute(_CHUNK_VECTORS + "ON CONFLICT (chunk_id) DO NOTHING",
                                    self.missing.model)

    async def _vector_index(self, dim: int) -> None:
        with mapped_errors(self.where):
            count = int(await self.conn.fetchval("SELECT count(*) FROM chunk_vectors"))
            await self.conn.execute(f"SET maintenance_work_mem = '{hnsw_memory(count, dim)}'")
            await self.conn.execute(_HNSW.format(name=hnsw_index(dim), dim=dim))
            await self.conn.execute("RESET maintenance_work_mem")

    @retried()
    async def prune_orphan_vectors(self) -> int:
        with mapped_errors(self.where):
            status = await self.conn.execute(
                "DELETE FROM embeddings e WHERE NOT EXISTS (SELECT 1 FROM chunks c "
                "WHERE c.content_hash = e.content_hash) AND NOT EXISTS (SELECT 1 FROM "
                "commits m WHERE m.content_hash = e.content_hash)")
        return int(status.split()[-1])

    async def merge_fts(self) -> bool:
        """Nothing to do: PostgreSQL's indexes keep themselves (autovacuum)."""
        return False

    async def upkeep(self) -> None:
        """Nothing to do: pg_textsearch's BM25 index is kept by PostgreSQL itself, and
        pgvector's index holds the vectors as they are."""

    async def mend(self) -> None:
        """pg_textsearch's BM25 index built again when a server restart, a crash or a
        restore has emptied it (``bm25_index.rebuild``: on a connection of its own, writes
        going on meanwhile); nothing on a read-only open or a replica."""
        if not self._read_only:
            for index in INDEXES:  # (the chunks' and the commits')
                await rebuild(self.where, seconds=self.session.seconds, index=index)


def hnsw_memory(vectors: int, dim: int) -> str:
    """``maintenance_work_mem`` for building the HNSW graph of ``vectors`` of ``dim``: each
    node's vector and links (``_HNSW_NODE`` bytes past its floats), half again for good
    measure, at least 1 GB, at most a quarter of the machine's memory."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    want = max(1 << 30, int(vectors * (dim * 4 + _HNSW_NODE) * 1.5))
    return f"{min(want, max(memory // 4, 1 << 30)) >> 20}MB"


def indexed_texts(f: FileToWrite) -> Sequence[str]:
    """Each chunk's indexed text: as worked out ahead, else now."""
    if f.lexemes is not None:
        return f.lexemes
    return [indexed_text(c.heading_path, c.content) for c in f.chunks]


def with_lexemes(files: Sequence[FileToWrite]) -> list[FileToWrite]:
    """The files with their chunks' indexed texts worked out (``FileToWrite.lexemes``)."""
    return [replace(f, lexemes=indexed_texts(f)) for f in files]


def _file_row(f: FileToWrite, now: float) -> tuple[object, ...]:
    m = f.metadata
    return (f.rel_path, f.mtime_ns, f.size, f.sha256, m.title, json.dumps(m.tags),
            json.dumps(m.aliases), now, json.dumps(m.frontmatter, ensure_ascii=False),
            f.line_count, f.encoding, f.kind, f.langs, f.langs_pending)
