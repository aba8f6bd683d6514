"""``rifflux migrate``: an SQLite index copied into PostgreSQL answers as it did,
links and vectors included, and nothing is read or embedded again."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rifflux import IndexDatabaseError, InvalidArgumentError, NotAnIndexError, Rifflux
from rifflux.store.migrate import migrate

from .helpers import CountingEmbedder, eventually, index_rows, rifflux_cli

pytestmark = pytest.mark.anyio

QUERIES = ("install windows", "hybrid search fusion", "pancakes", "garden note", "gamma tools")
NOTES = ("Home.md", "Projects/Alpha.md", "notes/Delta.md", "b/deeper/Note.md")


async def _answers(rf: Rifflux, vault: Path) -> dict[str, Any]:
    found: dict[str, Any] = {f"{mode} {q}": [(h["path"], h["chunk_index"])
                             for h in await rf.search(q, top_k=5, mode=mode)]
             for mode in ("lexical", "semantic") for q in QUERIES}
    for note in NOTES:
        links = await rf.links(str(vault / note))
        found[f"links {note}"] = json.dumps(links, sort_keys=True, default=str)
        found[f"neighbors {note}"] = sorted(
            n["path"] for n in await rf.neighbors(str(vault / note), depth=2))
    found["tags"] = await rf.list_tags()
    found["files"] = sorted((f["path"], f["chunks"]) for f in await rf.files())
    return found


async def test_a_migrated_index_answers_as_before_and_nothing_is_read_or_embedded_again(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    new_postgres_index: Callable[[], str],
) -> None:
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        await rf.reindex(linked_vault)
        before = await _answers(rf, linked_vault)
        status = await rf.status()
    url = new_postgres_index()
    copied = await migrate(db, url)
    assert (copied["roots"], copied["files"], copied["chunks"]) == (
        2, status["files"], status["chunks"])
    assert copied["vectors"] == status["embeddings"] and copied["vectors_left"] == 0
    embedder = CountingEmbedder()
    async with Rifflux(url, embedder=embedder) as rf:
        after = await _answers(rf, linked_vault)
        again = [await rf.reindex(search_docs), await rf.reindex(linked_vault)]
        moved = await rf.status()
    assert embedder.embedded == []  # every text kept its vector
    assert [r["indexed_files"] for r in again] == [0, 0]  # and every file its state
    assert (moved["files"], moved["chunks"], moved["embeddings"], moved["links"]) == (
        status["files"], status["chunks"], status["embeddings"], status["links"])
    assert moved["pending_embeddings"] == 0
    for key, answer in before.items():
        if key.startswith("lexical"):  # BM25 by FTS5, then by pg_textsearch: the same best
            assert after[key][0] == answer[0] and set(after[key]) == set(answer), key
        else:  # semantic: the same vectors, compared exactly; links, tags, files
            assert after[key] == answer, key
    with pytest.raises(IndexDatabaseError, match="holds an index already.*empty database"):
        await migrate(db, url)


def test_rifflux_migrate_copies_an_index_into_postgresql_and_back_into_a_file(
    tmp_path: Path, search_docs: Path, new_postgres_index: Callable[[], str],
) -> None:
    db, url, back = str(tmp_path / "i.db"), new_postgres_index(), str(tmp_path / "back.db")
    indexed = rifflux_cli(tmp_path, "--db", db, "--backend", "hash", "index", str(search_docs))
    assert indexed.returncode == 0, indexed.stderr
    done = rifflux_cli(tmp_path, "migrate", "--from", db, "--to", url, "--json")
    assert done.returncode == 0, done.stderr
    copied = json.loads(done.stdout)
    assert (copied["files"], copied["vectors"]) == (3, copied["chunks"])
    status = rifflux_cli(tmp_path, "--db", url, "--backend", "hash", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["pending_embeddings"] == 0
    done = rifflux_cli(tmp_path, "--db", url, "migrate", "--to", back, "--json")  # (--from: --db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) | {"seconds": 0} == copied | {"seconds": 0}
    status = rifflux_cli(tmp_path, "--db", back, "--backend", "hash", "status", "--json")
    assert status.returncode == 0, status.stderr
    moved = json.loads(status.stdout)
    assert (moved["files"], moved["embeddings"], moved["pending_embeddings"]) == (
        3, copied["vectors"], 0)
    said = rifflux_cli(tmp_path, "migrate", "--from", url, "--to", str(tmp_path / "b2.db"))
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith(f"copied {url} to {tmp_path / 'b2.db'}: 3 files in 1 folder")
    assert "building the search indexes" in said.stderr


def test_rifflux_migrate_refuses_a_target_that_holds_an_index_and_the_source_itself(
    tmp_path: Path, search_docs: Path, new_postgres_index: Callable[[], str],
) -> None:
    db, url = str(tmp_path / "i.db"), new_postgres_index()
    indexed = rifflux_cli(tmp_path, "--db", db, "--backend", "hash", "index", str(search_docs))
    assert indexed.returncode == 0, indexed.stderr
    held = rifflux_cli(tmp_path, "migrate", "--from", url, "--to", db)
    assert held.returncode == 1 and "holds an index already" in held.stderr
    for same in (db, url):
        refused = rifflux_cli(tmp_path, "migrate", "--from", same, "--to", same)
        assert refused.returncode == 2 and "are the same" in refused.stderr, refused.stderr
    missing = rifflux_cli(tmp_path, "migrate", "--from", str(tmp_path / "no.db"), "--to", url)
    assert missing.returncode == 2 and "no.db is not a file" in missing.stderr


async def test_migrate_refuses_a_file_that_is_not_an_index(
    tmp_path: Path, new_postgres_index: Callable[[], str],
) -> None:
    (tmp_path / "notes.db").write_text("not a database")
    url = new_postgres_index()
    with pytest.raises(Exception, match="not a Rifflux index"):
        await migrate(tmp_path / "notes.db", url)
    assert await index_rows(url, "SELECT count(*) FROM files") == [(0,)]


@pytest.mark.parametrize("back", [False, True], ids=["into postgresql", "back to a file"])
async def test_the_source_is_read_in_one_snapshot_whatever_is_written_meanwhile(
    tmp_path: Path, search_docs: Path, new_postgres_index: Callable[[], str], back: bool,
) -> None:
    url, db = new_postgres_index(), tmp_path / "i.db"
    source, target = (url, db) if back else (db, url)
    async with Rifflux(source, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        status = await rf.status()
    deleted: list[Any] = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "files" and not deleted:  # another process drops every vector
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # (its own loop)
                deleted.append(pool.submit(asyncio.run, index_rows(
                    source, "DELETE FROM embeddings RETURNING content_hash")).result())

    copied = await migrate(source, target, progress=progress)
    assert len(deleted[0]) == status["embeddings"]  # (gone from the source meanwhile)
    assert copied["vectors"] == status["embeddings"]  # but copied, as they were at the start
    assert await index_rows(target, "SELECT count(*) FROM embeddings") == [
        (status["embeddings"],)]


#: One vector cut short by a float, as a torn write would (its size left as it was).
_TEAR = ("UPDATE embeddings SET vector = {cut} WHERE id = (SELECT min(id) FROM embeddings) "
         "RETURNING content_hash")


@pytest.mark.parametrize("back", [False, True], ids=["into postgresql", "back to a file"])
async def test_a_vector_of_the_wrong_size_is_left_behind_and_its_text_embedded_again(
    tmp_path: Path, search_docs: Path, new_postgres_index: Callable[[], str], back: bool,
) -> None:
    url, db = new_postgres_index(), tmp_path / "i.db"
    source, target = (url, db) if back else (db, url)
    async with Rifflux(source, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        status = await rf.status()
    [(content_hash,)] = await index_rows(source, _TEAR.format(
        cut="subvector(vector, 2, dim - 1)" if back else "substr(vector, 5)"))
    [(text,)] = await index_rows(
        source, f"SELECT content FROM chunks WHERE content_hash = '{content_hash}' LIMIT 1")
    copied = await migrate(source, target)
    assert copied["chunks"] == status["chunks"]
    assert copied["vectors"] == status["embeddings"] - 1
    embedder = CountingEmbedder()
    async with Rifflux(target, embedder=embedder) as rf:
        async def embedded() -> bool:
            return (await rf.status())["pending_embeddings"] == 0

        await eventually(embedded)
        moved = await rf.status()
    assert moved["embeddings"] == status["embeddings"]
    assert len(embedder.embedded) == 1  # that text only, its body under its heading
    assert text.splitlines()[-1] in embedder.embedded[0]


@pytest.mark.parametrize("into_postgres", [False, True], ids=["file", "database"])
async def test_a_file_is_copied_into_a_file_and_a_database_into_a_database_alike(
    tmp_path: Path, linked_vault: Path, new_postgres_index: Callable[[], str],
    into_postgres: bool,
) -> None:
    source, target = ((new_postgres_index(), new_postgres_index()) if into_postgres
                      else (tmp_path / "i.db", tmp_path / "copy.db"))
    async with Rifflux(source, embedder=CountingEmbedder()) as rf:
        await rf.reindex(linked_vault)
        before = await _answers(rf, linked_vault)
    copied = await migrate(source, target)
    assert copied["files"] == len(before["files"]) and copied["vectors"] > 0
    embedder = CountingEmbedder()
    async with Rifflux(target, embedder=embedder) as rf:
        after = await _answers(rf, linked_vault)
        again = await rf.reindex(linked_vault)
    assert embedder.embedded == [] and again["indexed_files"] == 0
    assert after == before  # (one store's ranking on both sides: compared exactly)


async def test_an_index_moved_back_from_postgresql_to_a_file_answers_as_before(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    new_postgres_index: Callable[[], str],
) -> None:
    url = new_postgres_index()
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        await rf.reindex(linked_vault)
        before = await _answers(rf, linked_vault)
        status = await rf.status()
    db = tmp_path / "back" / "i.db"  # (its folder made too)
    copied = await migrate(url, db)
    assert (copied["roots"], copied["files"], copied["chunks"]) == (
        2, status["files"], status["chunks"])
    assert copied["vectors"] == status["embeddings"] and copied["vectors_left"] == 0
    embedder = CountingEmbedder()
    async with Rifflux(db, embedder=embedder) as rf:
        after = await _answers(rf, linked_vault)
        again = [await rf.reindex(search_docs), await rf.reindex(linked_vault)]
        moved = await rf.status()
    assert embedder.embedded == []  # every text kept its vector
    assert [r["indexed_files"] for r in again] == [0, 0]  # and every file its state
    assert (moved["files"], moved["chunks"], moved["embeddings"], moved["links"]) == (
        status["files"], status["chunks"], status["embeddings"], status["links"])
    assert moved["pending_embeddings"] == 0
    for key, answer in before.items():
        if key.startswith("lexical"):  # BM25 by pg_textsearch, then by FTS5: the same best
            assert after[key][0] == answer[0] and set(after[key]) == set(answer), key
        else:  # semantic: the same vectors, compared exactly; links, tags, files
            assert after[key] == answer, key


#: Every file, chunk, vector and link of an SQLite index, as a copy must keep them (by
#: path: a copy's row ids are its own).
_STORED = {
    "files": "SELECT r.path, f.rel_path, f.mtime_ns, f.size, f.sha256, f.title, f.tags, "
             "f.aliases, f.frontmatter, f.line_count, f.encoding, f.kind FROM files f "
             "JOIN roots r ON r.id = f.root_id ORDER BY 1, 2",
    "chunks": "SELECT r.path, f.rel_path, c.chunk_index, c.heading_path, c.content, "
              "c.content_hash, c.line_start, c.line_end, c.fts_heading, c.fts_content, "
              "c.cjk, c.page FROM chunks c JOIN files f ON f.id = c.file_id "
              "JOIN roots r ON r.id = f.root_id ORDER BY 1, 2, 3",
    "vectors": "SELECT e.content_hash, e.model, e.dim, e.vector, c.codes FROM embeddings e "
               "LEFT JOIN embedding_codes c ON c.id = e.id ORDER BY 1, 2",
    "links": "SELECT f.rel_path, l.kind, l.embed, l.target, l.text, l.line, l.heading, "
             "l.chunk_index, l.context, l.rel_key, l.abs_key, l.name_key, l.alias_key, "
             "t.rel_path FROM links l JOIN files f ON f.id = l.file_id "
             "LEFT JOIN files t ON t.id = l.target_file_id ORDER BY 1, 2, 3, 4, 5, 6",
    "notes": "SELECT f.rel_path, k.path_key, k.name_key, (SELECT group_concat(alias_key) "
             "FROM note_aliases a WHERE a.file_id = f.id) FROM note_keys k "
             "JOIN files f ON f.id = k.file_id ORDER BY 1",
}


async def _stored(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {name: await index_rows(db, sql) for name, sql in _STORED.items()}


async def test_a_round_trip_to_postgresql_and_back_keeps_every_file_chunk_vector_and_link(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    new_postgres_index: Callable[[], str],
) -> None:
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        await rf.reindex(linked_vault)
    with sqlite3.connect(db) as lite:  # a vector of a model no longer in use: left behind
        lite.execute("INSERT INTO embeddings(content_hash, model, dim, vector) "
                     "SELECT content_hash, 'old-model', dim, vector FROM embeddings LIMIT 1")
    kept = await _stored(db)
    url, back = new_postgres_index(), tmp_path / "back.db"
    there = await migrate(db, url)
    assert there["vectors_left"] == 1
    again = await migrate(url, back)
    assert (again["files"], again["chunks"], again["vectors"], again["vectors_left"]) == (
        there["files"], there["chunks"], there["vectors"], 0)
    copied = await _stored(back)
    assert kept["vectors"][0][1] != "old-model"  # (what is compared below is real)
    kept["vectors"] = [row for row in kept["vectors"] if row[1] != "old-model"]
    assert all(kept[name] for name in _STORED)
    assert copied == kept
    assert await index_rows(back, "SELECT value FROM meta WHERE key = 'embedding_model'") \
        == await index_rows(db, "SELECT value FROM meta WHERE key = 'embedding_model'")


async def test_a_target_that_holds_an_index_is_refused_and_left_as_it_was(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    new_postgres_index: Callable[[], str],
) -> None:
    held, url = tmp_path / "held" / "i.db", new_postgres_index()
    async with Rifflux(held, embedder=CountingEmbedder("other-v1")) as rf:
        await rf.reindex(linked_vault)
    async with Rifflux(url, embedder=CountingEmbedder("other-v1")) as rf:
        await rf.reindex(linked_vault)
    source = tmp_path / "i.db"
    async with Rifflux(source, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
    file = held.read_bytes()
    with pytest.raises(IndexDatabaseError, match=f"holds an index already .1 folders: "
                                                 f"{linked_vault}.*new file"):
        await migrate(url, held)
    assert held.read_bytes() == file  # (its -wal beside, if a reader left one, empty)
    assert all(p.stat().st_size == 0 for p in held.parent.glob("*-wal"))
    rows = ("SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM embeddings), "
            "(SELECT value FROM meta WHERE key = 'embedding_model')")
    before = await index_rows(url, rows)
    with pytest.raises(IndexDatabaseError, match="holds an index already.*empty database"):
        await migrate(source, url)
    assert await index_rows(url, rows) == before  # (its model's vectors kept, too)
    assert before[0][2] == "other-v1"


async def test_a_missing_source_is_refused_and_nothing_is_made(
    tmp_path: Path, new_postgres_index: Callable[[], str],
) -> None:
    url = new_postgres_index()
    with pytest.raises(NotAnIndexError, match="nowhere.db is not a file: give the index"):
        await migrate(tmp_path / "nowhere.db", url)
    gone = url.rsplit("/", 1)[0] + "/rifflux_no_such_database"
    with pytest.raises(NotAnIndexError, match="there is no database .* to copy: give"):
        await migrate(gone, tmp_path / "i.db")
    assert os.listdir(tmp_path) == []  # (no target made)
    with pytest.raises(InvalidArgumentError, match="are the same"):
        await migrate(url, url)
    assert await index_rows(url, "SELECT count(*) FROM roots") == [(0,)]
