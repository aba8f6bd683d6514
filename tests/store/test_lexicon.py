"""The lexicon's behaviour around its builds: when it is built, kept, dropped or left
unused, and that lexical ranking stays exactly FTS5's through all of it."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.from_thread
import pytest

from rifflux import Rifflux
from rifflux.core.fts_query import build_match
from rifflux.store.sqlite import lexicon_build
from rifflux.store.sqlite.lexicon_build import LexiconLimits
from rifflux.store.sqlite.schema import connect
from rifflux.store.sqlite.writer import Writer

from ..helpers import eventually
from .lexicon_corpus import ALWAYS, EVERY_TERM, Index, afile, assert_same_ranking, open_index

pytestmark = pytest.mark.anyio

NOTES = {
    "guide.md": [("Testing > Unit tests", "test the code with unit tests"),
                 ("Testing > Data", "test data for the model")],
    "search.md": [("Search", "the search index ranks code by score"),
                  ("Search > Vectors", "vector search of the code")],
    "notes.md": [("Notes", "a note on the code"), ("Notes > Run", "run the tests daily")],
}
QUERIES = ["code", "test code", "search index", '"unit tests"', "tes*", "vector omega"]


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[Index]:
    index = await open_index(tmp_path)
    await index.write(NOTES)
    try:
        yield index
    finally:
        await index.close()


def lexicon_row(db: Path) -> tuple[int, int, int | None] | None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT build, upto, fresh_from FROM lexicon").fetchone()
    return None if row is None else (int(row[0]), int(row[1]), row[2])


async def ranks_as_fts5(index: Index, limit: int = 10) -> None:
    for query in QUERIES:
        match = build_match(query)
        assert match is not None
        ranked, _ = await index.reader.lexical(match, limit)
        assert_same_ranking(ranked, index.db, match, limit)


async def test_a_small_index_gets_no_lexicon_and_is_ranked_by_fts5(index: Index) -> None:
    assert not await index.build(LexiconLimits(min_chunks=1_000))
    assert lexicon_row(index.db) is None
    await ranks_as_fts5(index)


def overstate(db: Path, term: str | None = None) -> None:
    """Lists that say every chunk holds their term four times over."""
    with sqlite3.connect(db) as conn:
        for found, rows in conn.execute("SELECT term, rows FROM lexicon_terms").fetchall():
            if term is None or found == term:
                conn.execute("UPDATE lexicon_terms SET counts = ? WHERE term = ?",
                             (bytes([1] + [4] * rows), found))


async def test_searches_rank_from_the_stored_lists(index: Index) -> None:
    assert await index.build()
    overstate(index.db, "search")  # the scores change: the lists, not FTS5, ranked
    match = build_match("search note")
    assert match is not None
    ranked, _ = await index.reader.lexical(match, 3)
    with sqlite3.connect(index.db) as conn:
        reference = conn.execute(
            "SELECT rowid, bm25(chunks_fts, 2.0, 1.0, 1.0) AS s FROM chunks_fts "
            "WHERE chunks_fts MATCH ? ORDER BY s, rowid LIMIT 3", (match,)).fetchall()
    assert ranked != [(int(r[0]), float(r[1])) for r in reference]


async def test_lists_built_with_other_weights_are_not_used(index: Index) -> None:
    assert await index.build()
    overstate(index.db)
    with sqlite3.connect(index.db) as conn:
        conn.execute("UPDATE lexicon SET weights = '3.0,1.0,1.0'")
    await ranks_as_fts5(index)
    assert await index.build(EVERY_TERM)  # and the next refresh builds them again
    await ranks_as_fts5(index)


async def test_files_written_and_deleted_after_the_build_rank_in_place(index: Index) -> None:
    assert await index.build()
    await index.write({"late.md": [("Late > Code", "late code about search and tests")]})
    await index.delete(["search.md"])
    await ranks_as_fts5(index)
    row = lexicon_row(index.db)
    assert row is not None and row[2] is None  # no id reused: ranked above the watermark


async def test_ids_handed_out_again_below_the_watermark_rank_in_place(index: Index) -> None:
    assert await index.build()
    newest = index.newest()
    assert newest is not None
    # the newest file's chunks hold the highest ids: written again, SQLite reuses them
    await index.write({newest: [("Rewritten", "code code code omega")]}, version=1)
    row = lexicon_row(index.db)
    assert row is not None and row[2] is not None and row[2] <= row[1]
    await ranks_as_fts5(index)


async def test_equal_scores_rank_by_path_whichever_side_of_the_watermark_they_are(
    index: Index,
) -> None:
    same = [("Zebra", "zebra stripes")]
    await index.write({"m.md": same})
    assert await index.build()
    for rel in ("z.md", "y.md", "b.md", "a.md"):  # row ids in the reverse of path order
        await index.write({rel: same})
    match = build_match("zebra")
    assert match is not None
    with sqlite3.connect(index.db) as conn:
        path = dict(conn.execute("SELECT c.id, f.rel_path FROM chunks c JOIN files f "
                                 "ON f.id = c.file_id WHERE c.content = 'zebra stripes'"))
    for limit in range(1, 7):
        ranked, rows = await index.reader.lexical(match, limit)
        assert_same_ranking(ranked, index.db, match, limit)
        assert [path[c] for c, _ in ranked] == sorted(path.values())[:limit]
        assert set(rows) == {c for c, _ in ranked}
        # ordered by path without the tied chunks' rows: only the first ones' are read
        fewer, first = await index.reader.lexical(match, limit, rows=1)
        assert fewer == ranked and set(first) == {ranked[0][0]}
        assert first[ranked[0][0]] == rows[ranked[0][0]]


async def test_the_lexicon_is_built_again_once_enough_chunks_changed(index: Index) -> None:
    patient = LexiconLimits(min_chunks=0, term_share=0.0, min_rows=2, stale_share=0.0,
                            min_stale=2)
    assert await index.build(patient)
    first = lexicon_row(index.db)
    await index.write({"one.md": [("One", "code")]})
    assert not await index.build(patient)  # one chunk changed: kept
    await index.delete(["guide.md"])
    assert await index.build(patient)  # three, more than two: built again, log emptied
    again = lexicon_row(index.db)
    assert first is not None and again is not None and again[0] != first[0]
    with sqlite3.connect(index.db) as conn:
        assert conn.execute("SELECT count(*) FROM lexicon_gone").fetchone() == (0,)
    await ranks_as_fts5(index)


async def test_an_index_shrunk_well_below_the_minimum_drops_its_lexicon(index: Index) -> None:
    assert await index.build()
    await index.delete(["guide.md", "search.md"])
    assert not await index.build(LexiconLimits(min_chunks=10))
    assert lexicon_row(index.db) is None
    await ranks_as_fts5(index)


async def test_a_build_read_while_another_process_wrote_is_not_stored(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = lexicon_build._read

    def read_then_write(*args: object) -> object:
        collected = read(*args)  # type: ignore[arg-type]
        with sqlite3.connect(index.db) as other:  # another process, meanwhile
            other.execute("DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
        return collected

    monkeypatch.setattr(lexicon_build, "_read", read_then_write)
    assert not await index.build(ALWAYS)
    assert lexicon_row(index.db) is None
    monkeypatch.undo()
    assert await index.build(ALWAYS)  # the next refresh reads it again
    await ranks_as_fts5(index)


async def test_a_refresh_asked_for_during_a_build_is_done_after_it(
    index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A job's upkeep asks while an earlier upkeep builds from what it read before the job
    # wrote: that build is not stored, and the one asked for is not lost but done after.
    builder = lexicon_build.LexiconBuilder(index.db, limits=ALWAYS)
    read, asked = lexicon_build._read, list[bool]()

    def read_while_a_job_writes(*args: object) -> object:
        collected = read(*args)  # type: ignore[arg-type]
        if not asked:
            with sqlite3.connect(index.db) as job:
                job.execute("DELETE FROM chunks WHERE id = (SELECT max(id) FROM chunks)")
            asked.append(anyio.from_thread.run(builder.refresh))
        return collected

    monkeypatch.setattr(lexicon_build, "_read", read_while_a_job_writes)
    assert await builder.refresh()
    assert asked == [False]  # (the build under way took it on)
    assert lexicon_row(index.db) is not None
    await ranks_as_fts5(index)


async def test_another_process_writing_the_index_keeps_the_lexicon_exact(
    index: Index, tmp_path: Path
) -> None:
    assert await index.build()
    other = Writer(await connect(index.db, busy_timeout_ms=5000), index.db)
    try:
        await other.missing.adopt("test-model")
        await other.write_files(index.root, [afile("guide.md", [("Code", "code search")])])
        await other.delete_files(index.root, ["notes.md"])
    finally:
        await other.conn.close()
    await ranks_as_fts5(index)


async def test_an_index_made_before_the_lexicon_is_ranked_by_fts5(tmp_path: Path) -> None:
    index = await open_index(tmp_path)
    try:
        await index.write(NOTES)
        with sqlite3.connect(index.db) as conn:  # as an older Rifflux left it
            conn.executescript("DROP TRIGGER lexicon_ai; DROP TRIGGER lexicon_ad; "
                               "DROP TRIGGER lexicon_au; DROP TABLE lexicon; "
                               "DROP TABLE lexicon_terms; DROP TABLE lexicon_gone;")
        await ranks_as_fts5(index)
    finally:
        await index.close()
    again = await open_index(tmp_path)  # a writer of this version adds the tables
    try:
        assert await again.build()
        await ranks_as_fts5(again)
    finally:
        await again.close()


async def test_an_index_job_builds_the_lexicon(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon_build, "DEFAULT_LIMITS", EVERY_TERM)
    docs = tmp_path / "docs"
    docs.mkdir()
    for rel, chunks in NOTES.items():
        (docs / rel).write_text("\n\n".join(f"# {h.split(' > ')[-1]}\n\n{t}"
                                            for h, t in chunks), encoding="utf-8")
    db = tmp_path / "index.db"
    async with Rifflux(db, embedding_backend="hash") as rf:
        await rf.reindex(docs)
        await eventually(lambda: lexicon_row(db) is not None)  # after the job, by itself
        found = await rf.search("code tests", mode="lexical", top_k=5)
    match = build_match("code tests")
    assert match is not None
    with sqlite3.connect(db) as conn:
        rowid = dict(conn.execute("SELECT chunk_id, id FROM chunks").fetchall())
    ranked = [(rowid[r["chunk_id"]], s["bm25"]) for r in found
              if "bm25" in (s := r["score_breakdown"])]
    assert_same_ranking(ranked, db, match, 5)
    assert len(found) == 5
