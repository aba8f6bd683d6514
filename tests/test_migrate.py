"""``rifflux migrate``: an SQLite index copied into PostgreSQL answers as it did,
links and vectors included, and nothing is read or embedded again."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rifflux import IndexDatabaseError, Rifflux
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


def test_rifflux_migrate_copies_the_index_given_with_from_into_the_url_given_with_to(
    tmp_path: Path, search_docs: Path, new_postgres_index: Callable[[], str],
) -> None:
    db, url = str(tmp_path / "i.db"), new_postgres_index()
    indexed = rifflux_cli(tmp_path, "--db", db, "--backend", "hash", "index", str(search_docs))
    assert indexed.returncode == 0, indexed.stderr
    done = rifflux_cli(tmp_path, "migrate", "--from", db, "--to", url, "--json")
    assert done.returncode == 0, done.stderr
    copied = json.loads(done.stdout)
    assert (copied["files"], copied["vectors"]) == (3, copied["chunks"])
    status = rifflux_cli(tmp_path, "--db", url, "--backend", "hash", "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["pending_embeddings"] == 0
    refused = rifflux_cli(tmp_path, "migrate", "--from", url, "--to", url)
    assert refused.returncode == 2 and "not a URL" in refused.stderr


async def test_migrate_refuses_a_file_that_is_not_an_index(
    tmp_path: Path, new_postgres_index: Callable[[], str],
) -> None:
    (tmp_path / "notes.db").write_text("not a database")
    url = new_postgres_index()
    with pytest.raises(Exception, match="not a Rifflux index"):
        await migrate(tmp_path / "notes.db", url)
    assert await index_rows(url, "SELECT count(*) FROM files") == [(0,)]


async def test_a_vector_of_the_wrong_size_is_left_behind_and_its_text_embedded_again(
    tmp_path: Path, search_docs: Path, new_postgres_index: Callable[[], str],
) -> None:
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        status = await rf.status()
    with sqlite3.connect(db) as lite:  # one vector cut short by a float, as a torn write would
        content_hash, text = lite.execute(
            "SELECT e.content_hash, c.content FROM embeddings e JOIN chunks c "
            "ON c.content_hash = e.content_hash ORDER BY e.id LIMIT 1").fetchone()
        lite.execute("UPDATE embeddings SET vector = substr(vector, 5) WHERE content_hash = ?",
                     (content_hash,))
    url = new_postgres_index()
    copied = await migrate(db, url)
    assert copied["chunks"] == status["chunks"]
    assert copied["vectors"] == status["embeddings"] - 1
    embedder = CountingEmbedder()
    async with Rifflux(url, embedder=embedder) as rf:
        async def embedded() -> bool:
            return (await rf.status())["pending_embeddings"] == 0

        await eventually(embedded)
        moved = await rf.status()
    assert moved["embeddings"] == status["embeddings"]
    assert len(embedder.embedded) == 1  # that text only, its body under its heading
    assert text.splitlines()[-1] in embedder.embedded[0]
