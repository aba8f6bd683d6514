"""``rifflux migrate``: an index copied from one store into another, vectors included,
so that nothing is parsed or embedded again: an SQLite file into a PostgreSQL
database, or back into a new SQLite file (a file into a file, or a database into a
database, is copied the same way).

The source is read in one snapshot and never written (``migrate_sources``: the same
reads of either store). The copy goes through the target store's own writer, as an
indexing run would write the same files: the folders, then each folder's files a
batch at a time (their chunks, front matter and links, which the writer resolves as
it goes), then the vectors of the model in use, a batch at a time. What only makes
searches faster is built once at the end, which is much faster than growing it with
every batch: PostgreSQL's HNSW index; SQLite's full-text index merged and the lexical
search's lists (its lexicon, for a large index).

The target must hold no index yet (a file that does not exist, or a database or file
holding an empty index): a copy never mixes into another index, and a target that
holds one is refused before anything in it changes. Vectors of other models (which
SQLite keeps to switch back to) are left behind and counted. A vector whose bytes are
not as many as its size says (torn: not expected) is left behind too, and its text is
embedded again once the copy is opened.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

import anyio

from ..config import Settings
from ..errors import IndexDatabaseError, InvalidArgumentError
from ..location import DatabaseUrl, IndexLocation, index_location
from .migrate_sources import Source, open_source
from .opening import open_store
from .protocols import WriterStore
from .sqlite.recovery import read_uri
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


async def migrate(source: str | os.PathLike[str] | DatabaseUrl,
                  target: str | os.PathLike[str] | DatabaseUrl, *,
                  progress: Progress | None = None) -> Migrated:
    """Copy the index at ``source`` (an SQLite file, or a PostgreSQL URL) into
    ``target`` (either), which holds no index yet: a file that does not exist, or an
    empty database. ``progress`` is told what is copied as it goes."""
    frm, into = index_location(source), index_location(target)
    if await anyio.to_thread.run_sync(_same, frm, into):
        raise InvalidArgumentError(
            f"the index to copy and the place to copy it to are the same ({frm}): copy "
            "it into a new file or an empty database")
    started = time.perf_counter()
    tell = progress or (lambda stage, done, total: None)
    async with open_source(frm) as read, _target(into) as write:
        return await _copy(read, write, tell, started)


async def _copy(source: Source, target: _Target, tell: Progress,
                started: float) -> Migrated:
    writer = target.writer
    await writer.roots.load()  # (before anything is written: a refused target is unchanged)
    if writer.roots.paths:
        raise _holds_an_index(target.where, writer.roots.paths.values())
    model = await source.value("embedding_model")
    await writer.missing.adopt(model)
    roots = await source.roots()
    files = chunks = 0
    total = await source.count_files()
    folders: list[tuple[int, int]] = []
    for root_id, path in roots:
        into = await writer.roots.root_id(Path(path))
        if into is None:  # (roots never overlap in an index: never happens)
            raise IndexDatabaseError(f"cannot copy the folder {path}: it overlaps "
                                     f"another folder already in {target.where}")
        folders.append((root_id, into))
    send, receive = anyio.create_memory_object_stream[tuple[int, list[FileToWrite]]](1)

    async def read() -> None:
        """The next batch read (and made ready) while the one before is written."""
        async with send:
            for root_id, into in folders:
                rows = await source.file_rows(root_id)
                for i in range(0, len(rows), FILE_BATCH):
                    batch = await source.files(rows[i:i + FILE_BATCH])
                    if target.ready is not None:
                        batch = await anyio.to_thread.run_sync(target.ready, batch)
                    await send.send((into, batch))

    try:
        async with anyio.create_task_group() as tg, receive:
            tg.start_soon(read)
            async for into, batch in receive:
                await writer.write_files(into, batch)
                if target.written is not None:
                    target.written()
                files += len(batch)
                chunks += sum(len(f.chunks) for f in batch)
                tell("files", files, total)
    except ExceptionGroup as group:  # (the reader's or the writer's error, as it was raised)
        raise _first(group) from group
    total, left = await source.count_vectors(model)
    vectors = 0
    try:
        async with anyio.create_task_group() as tg:
            if target.chunks_written is not None:  # (beside the vectors' copy and index)
                tg.start_soon(target.chunks_written)
            if model is not None:
                upto = 0
                while (block := await source.vectors(model, after=upto,
                                                     limit=VECTOR_BATCH)).rows:
                    for hashes, vecs in block.sizes:  # (a vector torn short: left out)
                        await writer.write_vectors(model, hashes, vecs)
                        vectors += len(hashes)
                    upto = block.upto
                    tell("vectors", vectors, total)
            tell("index", 0, 1)
            await target.finish()
    except ExceptionGroup as group:
        raise _first(group) from group
    if target.done is not None:  # (once everything is built)
        await target.done()
    tell("index", 1, 1)
    return Migrated(roots=len(roots), files=files, chunks=chunks, vectors=vectors,
                    model=model, vectors_left=left,
                    seconds=round(time.perf_counter() - started, 2))


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first error inside ``group`` (groups within it opened)."""
    first = group.exceptions[0]
    return _first(first) if isinstance(first, BaseExceptionGroup) else first


def _same(a: IndexLocation, b: IndexLocation) -> bool:
    """Whether the two locations name one index (a path as resolved, a URL as given)."""
    if isinstance(a, DatabaseUrl) or isinstance(b, DatabaseUrl):
        return a == b
    return a.resolve() == b.resolve()


def _holds_an_index(where: str, folders: Collection[str]) -> IndexDatabaseError:
    return IndexDatabaseError(
        f"{where} holds an index already ({len(folders)} folders: {', '.join(folders)}): "
        "migrate into a new file or a new, empty database (createdb NAME), or forget its "
        "folders first")


# ---------------------------------------------------------------- the targets


@dataclass(frozen=True, slots=True)
class _Target:
    """An index open to be written: its store's own writer, and what is built once the
    copy is written."""

    where: str
    writer: WriterStore
    finish: Callable[[], Awaitable[object]]
    #: What makes a batch of files ready to be written, in a worker thread while the
    #: batch before is written (PostgreSQL: the chunks' indexed texts, ``with_lexemes``).
    ready: Callable[[Sequence[FileToWrite]], list[FileToWrite]] | None = None
    #: Told when a batch made ready has been written (PostgreSQL: its words counted).
    written: Callable[[], None] | None = None
    #: Run once every chunk is written, beside the vectors' copy and ``finish``
    #: (PostgreSQL: the word counts and the lexical indexes).
    chunks_written: Callable[[], Coroutine[Any, Any, None]] | None = None
    #: Run once ``finish`` and ``chunks_written`` are done (PostgreSQL: the load over).
    done: Callable[[], Awaitable[object]] | None = None


@asynccontextmanager
async def _target(where: IndexLocation) -> AsyncIterator[_Target]:
    if isinstance(where, DatabaseUrl):
        async with _postgres(where) as target:
            yield target
    else:
        async with _sqlite(where) as target:
            yield target


@asynccontextmanager
async def _postgres(where: DatabaseUrl) -> AsyncIterator[_Target]:
    """The database, its schema made (or checked), through a writer that builds the
    HNSW index once, at the end (``make_vector_indexes``)."""
    from .postgres import bulk  # (asyncpg: only for a URL)
    from .postgres.connection import close, connect
    from .postgres.schema import ensure_schema
    from .postgres.session import Session
    from .postgres.writer import Writer

    conn = await connect(where, seconds=30.0, vectors=False)
    try:
        await ensure_schema(conn, where)
        await bulk.check(conn, where)
    finally:
        await close(conn)
    session = Session(where, seconds=30.0, wait=bulk.session_wait(30.0))
    try:
        await session.open()
        writer = Writer(session, vector_index=False)
        await writer.roots.load()  # (a target holding an index is refused before the load)
        if not writer.roots.paths:
            await bulk.begin(session)

        words = bulk.Words()

        yield _Target(where=str(where), writer=writer, finish=writer.make_vector_indexes,
                      ready=words.ready, written=words.written,
                      chunks_written=partial(bulk.finish_words, where, words, seconds=30.0),
                      done=partial(bulk.done, session))
    finally:
        await session.close()


@asynccontextmanager
async def _sqlite(path: Path) -> AsyncIterator[_Target]:
    """The file, opened as any process opens an index (``open_store``: a new file
    made, an empty index checked), once a look that writes nothing found no index in
    it; then the full-text index merged and the lexicon built once, at the end."""
    db = await anyio.to_thread.run_sync(lambda: path.expanduser().resolve())
    folders = await anyio.to_thread.run_sync(_folders, db)
    if folders:
        raise _holds_an_index(str(db), folders)
    settings = Settings(db_path=db)
    async with open_store(settings, f"{os.getpid()}-migrate") as store:
        writer = store.writer

        async def finish() -> None:
            await writer.merge_fts()
            await writer.upkeep()

        yield _Target(where=str(db), writer=writer, finish=finish)


def _folders(db: Path) -> list[str]:
    """The folders of the index in ``db``, read on a connection that cannot write; none
    when there is no file, or no index in it (whether it is someone else's file, or a
    damaged index, is the opening's to say)."""
    if not db.is_file():
        return []
    try:
        conn = sqlite3.connect(read_uri(db), uri=True)
        try:
            return [str(r[0]) for r in conn.execute("SELECT path FROM roots ORDER BY id")]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return []
