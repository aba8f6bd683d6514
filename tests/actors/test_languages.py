"""The languages pass on a real SQLite writer and the real parse workers: a file is
written (lexically searchable) with its chunks waiting for their languages, told
afterwards; a file rewritten meanwhile is not told from its old texts."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from rifflux.actors.languages import tell_languages
from rifflux.actors.parse_pool import ParsePool
from rifflux.core.packing import ChunkLimits
from rifflux.store.sqlite.schema import connect
from rifflux.store.sqlite.writer import Writer
from rifflux.store.written import Written

from ..helpers import afile, root_of

pytestmark = pytest.mark.anyio

ENGLISH = "The night train leaves for Vienna on Friday evening, and we walk the old town."
GERMAN = "Der Nachtzug fährt am Freitagabend nach Wien, und wir gehen durch die Altstadt."


@pytest.fixture
async def writer(tmp_path: Path) -> AsyncIterator[Writer]:
    conn = await connect(tmp_path / "i.db", busy_timeout_ms=1000)
    try:
        yield Writer(conn, tmp_path / "i.db")
    finally:
        await conn.close()


def rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


async def test_a_written_file_is_searchable_and_its_languages_are_told_after(
        writer: Writer, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    root = await root_of(writer, tmp_path / "notes")
    written = await writer.write_files(root, [afile("trip.md", ENGLISH, GERMAN, "2026 1234")])
    assert [e.langs_pending for e in written.files] == [3]  # (the catalog knows they wait)
    assert rows(db, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'Nachtzug'") \
        == [(1,)]  # searchable now
    assert rows(db, "SELECT count(*) FROM chunks WHERE lang IS NOT NULL") == [(0,)]
    assert await writer.telling.waiting() == 3
    committed: list[Written] = []

    async def on_commit(w: Written) -> None:
        committed.append(w)

    pool = ParsePool(size=2)
    try:
        assert await tell_languages(writer.telling, pool, on_commit) == 1
        assert not pool.started  # (three chunks: told in a thread)
    finally:
        await pool.aclose()
    assert rows(db, "SELECT chunk_index, lang FROM chunks ORDER BY chunk_index") == [
        (0, "en"), (1, "de"), (2, None)]  # (the last: too few letters to tell)
    assert rows(db, "SELECT langs, langs_pending FROM files") == [('["de", "en"]', 0)]
    assert [(e.langs, e.langs_pending) for w in committed for e in w.files] == [
        (frozenset({"en", "de"}), 0)]
    assert await writer.telling.waiting() == 0
    # (telling rewrote no full-text row: the index holds each chunk once)
    assert rows(db, "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'Nachtzug'") \
        == [(1,)]


async def test_a_file_rewritten_after_it_was_read_is_not_told_from_its_old_texts(
        writer: Writer, tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    root = await root_of(writer, tmp_path / "notes")
    await writer.write_files(root, [afile("trip.md", ENGLISH)])
    [untold] = await writer.telling.untold(100)
    rewritten = replace(afile("trip.md", GERMAN), sha256="sha-new")  # (another process)
    await writer.write_files(root, [rewritten])
    assert not (await writer.telling.tell([(untold, ["en"])])).files
    assert rows(db, "SELECT lang FROM chunks") == [(None,)]
    assert rows(db, "SELECT langs_pending FROM files") == [(1,)]  # told by the next pass
    [again] = await writer.telling.untold(100)
    assert again.chunks[0][2] == GERMAN
    await writer.telling.tell([(again, ["de"])])
    assert rows(db, "SELECT lang FROM chunks") == [("de",)]


async def test_many_chunks_are_told_in_the_parse_workers_once_they_run(
        writer: Writer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "i.db"
    root = await root_of(writer, tmp_path / "notes")
    texts = [f"{ENGLISH} ({i})" if i % 2 else f"{GERMAN} ({i})" for i in range(100)]
    await writer.write_files(root, [afile("long.md", *texts)])
    note = tmp_path / "notes" / "a.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# A\n\nA note.\n")
    pool = ParsePool(size=2)
    try:  # (a job large enough to be parsed in the workers started them)
        await pool.run(tmp_path / "notes", [("a.md", None)], False, ChunkLimits())
        assert pool.started
        assert await tell_languages(writer.telling, pool, _nothing) == 1
    finally:
        await pool.aclose()
    assert [lang for (lang,) in rows(db, "SELECT lang FROM chunks ORDER BY chunk_index")] \
        == ["en" if i % 2 else "de" for i in range(100)]
    assert "language worker failed" not in caplog.text  # (told there, not in a thread)


async def _nothing(_: Written) -> None:
    pass
