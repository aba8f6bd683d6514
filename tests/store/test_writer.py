"""The writer on a real SQLite file: whole-file transactions, the exact set of texts that
lack vectors, scope queries, and the schema version check."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import numpy as np
import pytest

from rifflux import IndexDatabaseError, SchemaVersionError
from rifflux.core.chunker import FileMetadata
from rifflux.core.plan import Scope
from rifflux.store.sqlite import schema, sql
from rifflux.store.sqlite.reader import Reader
from rifflux.store.sqlite.schema import connect
from rifflux.store.sqlite.writer import FileToWrite, Writer

from ..helpers import MODEL, afile, hashes, root_of

pytestmark = pytest.mark.anyio


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[Writer]:
    conn = await connect(tmp_path / "i.db", busy_timeout_ms=1000)
    try:
        yield Writer(conn, tmp_path / "i.db")
    finally:
        await conn.close()


def vectors(n: int) -> np.ndarray:
    return np.ones((n, 4), dtype=np.float32)


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_a_write_that_fails_mid_transaction_leaves_no_partial_file(
    writer: Writer, tmp_path: Path
) -> None:
    await writer.missing.adopt(MODEL)
    root = await root_of(writer, tmp_path / "docs")
    await writer.write_files(root, [afile("kept.md", "kept text")])
    good = afile("good.md", "good text")
    # two chunks with the same index and text get the same chunk_id: the UNIQUE
    # constraint fails after the files rows and the first chunks were inserted
    bad = afile("bad.md", "same text", "other")
    bad = FileToWrite(bad.rel_path, 1, 10, "sha", FileMetadata(),
                      [bad.chunks[0], bad.chunks[0]])
    with pytest.raises(IndexDatabaseError):
        await writer.write_files(root, [good, bad])
    db = tmp_path / "i.db"
    assert rows(db, "SELECT rel_path FROM files ORDER BY rel_path") == [("kept.md",)]
    assert rows(db, "SELECT COUNT(*) FROM chunks") == [(1,)]
    assert rows(db, "SELECT COUNT(*) FROM chunks_fts WHERE chunks_fts MATCH 'good'") == [(0,)]
    assert writer.missing.texts == hashes("kept text")  # unchanged by the failed write


async def _refuse_root_deletes(writer: Writer) -> None:
    """A database that fails at the last step of forgetting or absorbing a root."""
    await writer.conn.execute(
        "CREATE TEMP TRIGGER keep_roots BEFORE DELETE ON main.roots "
        "BEGIN SELECT RAISE(ABORT, 'roots are kept'); END")


async def test_forgetting_a_root_that_fails_at_the_end_keeps_all_of_it(
    writer: Writer, tmp_path: Path
) -> None:
    await writer.missing.adopt(MODEL)
    root = await root_of(writer, tmp_path / "docs")
    await writer.write_files(root, [afile("a.md", "alpha"), afile("b.md", "beta")])
    await _refuse_root_deletes(writer)
    with pytest.raises(IndexDatabaseError, match="roots are kept"):
        await writer.roots.forget_root(root)
    db = tmp_path / "i.db"
    assert rows(db, "SELECT rel_path FROM files ORDER BY rel_path") == [("a.md",), ("b.md",)]
    assert rows(db, "SELECT COUNT(*) FROM chunks") == [(2,)]
    assert writer.missing.texts == hashes("alpha", "beta")
    assert writer.roots.paths == {root: str(tmp_path / "docs")}


async def test_absorbing_a_root_that_fails_at_the_end_leaves_both_as_they_were(
    writer: Writer, tmp_path: Path
) -> None:
    await writer.missing.adopt(MODEL)
    child = await root_of(writer, tmp_path / "docs" / "child")
    await writer.write_files(child, [afile("c.md", "child text")])
    parent = writer.roots.find_root(tmp_path / "docs")
    assert parent is None  # roots never overlap: the parent is made by moving the child
    await writer.conn.execute("INSERT INTO roots(path) VALUES (?)", (str(tmp_path / "docs"),))
    await writer.roots.load()
    parent = writer.roots.find_root(tmp_path / "docs")
    assert parent is not None
    await _refuse_root_deletes(writer)
    with pytest.raises(IndexDatabaseError, match="roots are kept"):
        await writer.roots.absorb(parent, child, "child/")
    assert rows(tmp_path / "i.db", "SELECT root_id, rel_path FROM files") == [(child, "c.md")]
    await writer.conn.execute("DROP TRIGGER temp.keep_roots")
    moved = await writer.roots.absorb(parent, child, "child/")
    assert [f.rel_path for f in moved.files] == ["child/c.md"]
    assert rows(tmp_path / "i.db", "SELECT root_id, rel_path FROM files") == [
        (parent, "child/c.md")]
    assert rows(tmp_path / "i.db", "SELECT COUNT(*) FROM roots") == [(1,)]


async def test_a_write_cancelled_while_another_process_holds_the_lock_leaves_no_transaction(
    writer: Writer, tmp_path: Path
) -> None:
    # Cancelled while BEGIN waits for the lock, aiosqlite still runs that BEGIN on its
    # thread once the lock is free: the connection must not be left inside it.
    await writer.missing.adopt(MODEL)
    root = await root_of(writer, tmp_path / "docs")
    other = await connect(tmp_path / "i.db", busy_timeout_ms=1000)
    try:
        await other.execute("BEGIN IMMEDIATE")  # another process writes
        async with anyio.create_task_group() as tg:
            scope = anyio.CancelScope()

            async def write() -> None:
                with scope:
                    await writer.write_files(root, [afile("a.md", "alpha")])

            tg.start_soon(write)
            await anyio.wait_all_tasks_blocked()  # its BEGIN waits for the lock
            scope.cancel()
            await anyio.wait_all_tasks_blocked()  # its ROLLBACK is queued behind it
            await other.execute("COMMIT")  # the lock is free: the BEGIN runs, then that
    finally:
        await other.close()
    await writer.write_files(root, [afile("b.md", "beta")])  # "within a transaction"?
    assert not writer.conn.in_transaction
    assert rows(tmp_path / "i.db", "SELECT rel_path FROM files") == [("b.md",)]


async def test_missing_texts_follow_writes_edits_vectors_and_deletes(
    writer: Writer, tmp_path: Path
) -> None:
    assert writer.missing.texts is None  # no model adopted yet
    await writer.missing.adopt(MODEL)
    assert writer.missing.texts == set()
    root = await root_of(writer, tmp_path / "docs")
    written = await writer.write_files(root, [afile("a.md", "alpha"), afile("b.md", "alpha")])
    assert writer.missing.texts == hashes("alpha") and written.lacking == 1
    await writer.write_files(root, [afile("a.md", "beta")])  # edited before it was embedded
    assert writer.missing.texts == hashes("alpha", "beta")  # b.md still has "alpha"
    await writer.delete_files(root, ["b.md"])
    assert writer.missing.texts == hashes("beta")  # no chunk has "alpha" any more
    (beta,) = hashes("beta")
    stored = await writer.write_vectors(MODEL, [beta], vectors(1))
    assert writer.missing.texts == set() and len(stored.added_ids) == 1
    again = await writer.write_files(root, [afile("c.md", "beta")])  # a known text
    assert writer.missing.texts == set() and again.lacking == 0 and len(again.added_ids) == 1


async def test_the_embedder_takes_the_newest_missing_texts_first_read_by_their_hash(
    writer: Writer, tmp_path: Path
) -> None:
    await writer.missing.adopt(MODEL)
    root = await root_of(writer, tmp_path / "docs")
    for name in ("one", "two", "three", "four"):
        await writer.write_files(root, [afile(f"{name}.md", name)])
    one, two, three, four = (next(iter(hashes(t))) for t in ("one", "two", "three", "four"))
    assert writer.missing.newest(2) == [four, three]
    await writer.write_vectors(MODEL, [four], vectors(1))
    await writer.write_files(root, [afile("one.md", "one", "five")])  # one, kept; five, new
    (five,) = hashes("five")
    assert writer.missing.newest(9) == [five, three, two, one]  # one: missing since first
    await writer.missing.refresh()  # read again: by each text's newest chunk
    assert writer.missing.newest(9) == [five, one, three, two]
    reader = Reader(writer.conn, tmp_path / "i.db")
    texts = await reader.texts_of([three, "not-a-text", one])
    assert [(t.content_hash, t.text) for t in texts] == [(three, "Title\nthree"),
                                                         (one, "Title\none")]
    plan = rows(tmp_path / "i.db", "EXPLAIN QUERY PLAN SELECT content_hash, heading_path, "
                "content FROM chunks WHERE content_hash IN ('a', 'b') GROUP BY content_hash")
    assert "INDEX chunks_hash_file" in str(plan)  # a window costs what it holds


async def test_adopting_a_model_reads_what_lacks_its_vectors_and_drops_other_models(
    writer: Writer, tmp_path: Path
) -> None:
    await writer.missing.adopt("old-model")
    root = await root_of(writer, tmp_path / "docs")
    await writer.write_files(root, [afile("a.md", "alpha", "beta")])
    await writer.write_vectors("old-model", sorted(hashes("alpha", "beta")), vectors(2))
    assert writer.missing.texts == set()
    assert await writer.missing.adopt(MODEL) == 2  # vectors of the old model dropped
    assert writer.missing.texts == hashes("alpha", "beta")
    assert rows(tmp_path / "i.db", "SELECT value FROM meta WHERE key = 'embedding_model'") \
        == [(MODEL,)]


async def test_scope_queries_take_underscore_and_percent_in_paths_literally(
    writer: Writer, tmp_path: Path
) -> None:
    await writer.missing.adopt(MODEL)
    root = await root_of(writer, tmp_path / "docs")
    await writer.write_files(root, [
        afile("a_b/x.md", "under"), afile("axb/y.md", "lookalike"),
        afile("100%/z.md", "percent"), afile("1000/w.md", "digits"),
    ])
    assert await writer.missing.in_scopes([Scope(root, prefix="a_b/")]) == hashes("under")
    assert await writer.missing.in_scopes([Scope(root, prefix="100%/")]) == hashes("percent")
    assert await writer.missing.in_scopes([Scope(root, paths=("axb/y.md",))]) == hashes("lookalike")
    assert await writer.missing.in_scopes([Scope(root)]) == hashes(
        "under", "lookalike", "percent", "digits")


async def test_another_schema_version_is_refused_with_what_to_do(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = await connect(db, busy_timeout_ms=1000)
    await conn.close()
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    for readonly in (False, True):
        with pytest.raises(SchemaVersionError, match="schema version 999.*delete the file"):
            await connect(db, busy_timeout_ms=1000, readonly=readonly)


async def test_opening_a_new_index_waits_for_the_switch_to_wal_another_process_holds_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two processes opening a new index at once: one writes it still in rollback-journal
    # mode while the other asks for WAL, which SQLite refuses at once ("database is
    # locked") instead of waiting out the busy timeout. The open waits for it instead.
    db = tmp_path / "new.db"
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("CREATE TABLE held(x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO held VALUES (1)")  # a reserved lock, held
    refused = anyio.Event()
    is_busy = sql.is_busy

    def seen_busy(exc: sqlite3.Error) -> bool:
        refused.set()  # the open was told "locked": it is waiting now
        return is_busy(exc)

    monkeypatch.setattr(schema, "is_busy", seen_busy)

    async def release_once_refused() -> None:
        try:
            with anyio.fail_after(5):
                await refused.wait()
            other.execute("COMMIT")
        finally:
            other.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(release_once_refused)
        conn = await connect(db, busy_timeout_ms=5000)
    try:
        row = await (await conn.execute("PRAGMA journal_mode")).fetchone()
        assert row is not None and row[0] == "wal"
    finally:
        await conn.close()


async def test_the_full_text_index_is_merged_once_writes_leave_it_in_pieces(
    writer: Writer, tmp_path: Path
) -> None:
    # Each write transaction adds an FTS5 segment; a search reads every segment, so a
    # writer merges them once there are enough. Matches (and bm25) stay as they were.
    db = tmp_path / "i.db"
    await writer.missing.adopt(MODEL)
    root = await root_of(writer, tmp_path / "docs")
    segments = "SELECT COUNT(DISTINCT segid) FROM chunks_fts_idx"
    ranked = ("SELECT rowid, round(bm25(chunks_fts), 9) FROM chunks_fts "
              "WHERE chunks_fts MATCH 'otter' ORDER BY 2, 1")
    await writer.write_files(root, [afile("a.md", "otter one")])
    assert rows(db, segments) == [(1,)]
    assert not await writer.merge_fts()  # one segment: nothing to merge
    for n in range(2, 6):
        await writer.write_files(root, [afile(f"n{n}.md", "otter " * n, "river")])
    await writer.delete_files(root, ["n3.md"])
    before = rows(db, ranked)
    ((pieces,),) = rows(db, segments)
    assert isinstance(pieces, int) and pieces >= 4
    assert await writer.merge_fts()
    assert rows(db, segments) == [(1,)]
    assert rows(db, ranked) == before and len(before) == 4


async def test_opening_an_index_makes_what_its_schema_lacks_and_writes_nothing_else(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    await (await connect(db, busy_timeout_ms=1000)).close()
    made = sqlite3.connect(db)
    everything = set(made.execute("SELECT type, name FROM sqlite_master"))
    # every object the schema makes (a view, an index, a trigger: any) is made again
    for kind, name in (("VIEW", "chunks_fts_text"), ("INDEX", "links_name"),
                       ("TRIGGER", "lexicon_au")):
        made.execute(f"DROP {kind} {name}")
        made.commit()
        await (await connect(db, busy_timeout_ms=1000)).close()
        assert set(made.execute("SELECT type, name FROM sqlite_master")) == everything, name
    # and a whole one is opened without a write: another process's lock holds up nothing
    made.execute("BEGIN IMMEDIATE")
    try:
        await (await connect(db, busy_timeout_ms=100)).close()
    finally:
        made.execute("ROLLBACK")
        made.close()
