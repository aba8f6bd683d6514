"""``rifflux migrate``'s bulk load into PostgreSQL (``store.postgres.bulk``): the database
it leaves is the one indexing the same folders row by row leaves (the word counts, the
chunks, the vectors, the indexes, the triggers, the answers); a server restart during
the load is waited for and the load finishes; a load that died half way is refused,
saying what to do."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from rifflux import IndexDatabaseError, IndexUnreachableError, Rifflux
from rifflux.config import Settings
from rifflux.location import DatabaseUrl
from rifflux.store.migrate import migrate
from rifflux.store.postgres.bulk import stored_lexicon
from rifflux.store.postgres.connection import mapped_errors

from .helpers import CountingEmbedder, index_rows
from .postgres import PostgresServer

pytestmark = pytest.mark.anyio

QUERIES = ("install windows", "hybrid search fusion", "pancakes", "garden note",
           "gamma tools", '"search fusion"', "instal*", "note")

#: What two indexes of the same files must hold alike (ids aside: keyed by path).
_SAME = {
    "totals": "SELECT chunks, tokens FROM lexical_totals",
    "lexicon": "SELECT term, chunks FROM lexicon WHERE chunks > 0 ORDER BY term",
    "chunks": "SELECT f.rel_path, c.chunk_index, c.chunk_id, c.lexemes, c.length, "
              "c.content_hash, c.lang FROM chunks c JOIN files f ON f.id = c.file_id "
              "ORDER BY 1, 2",
    "vectors": "SELECT f.rel_path, c.chunk_index, v.embedding::text FROM chunk_vectors v "
               "JOIN chunks c ON c.id = v.chunk_id JOIN files f ON f.id = c.file_id "
               "ORDER BY 1, 2",
    "embeddings": "SELECT content_hash, model, vector::text FROM embeddings ORDER BY 1",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' "
               "ORDER BY 1",
    "triggers": "SELECT tgname, tgenabled::text FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1",
    "meta": "SELECT key, value FROM meta WHERE key NOT IN ('checked_at', 'embedding_lease') "
            "ORDER BY 1",
}


async def _database(url: str) -> dict[str, list[tuple[Any, ...]]]:
    return {name: await index_rows(url, sql) for name, sql in _SAME.items()}


async def _answers(url: str) -> dict[str, list[tuple[str, int, str]]]:
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        return {f"{mode} {q}": [(h["path"], h["chunk_index"],
                                 repr(sorted(h["score_breakdown"].items())))
                                for h in await rf.search(q, top_k=8, mode=mode)]
                for mode in ("lexical", "semantic", "hybrid") for q in QUERIES}


async def _sqlite_index(tmp_path: Path, *folders: Path) -> Path:
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        for folder in folders:
            await rf.reindex(folder)
    return db


async def _row_by_row(url: str, *folders: Path) -> None:
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        for folder in folders:
            await rf.reindex(folder)
        assert (await rf.status())["pending_embeddings"] == 0


async def _forget(url: str, folder: Path) -> None:
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.forget(folder, yes=True)


async def test_a_bulk_load_leaves_the_database_indexing_row_by_row_leaves(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    new_postgres_index: Callable[[], str],
) -> None:
    db = await _sqlite_index(tmp_path, search_docs, linked_vault)
    bulk, rows = new_postgres_index(), new_postgres_index()
    copied = await migrate(db, bulk)
    assert copied["chunks"] >= 15 and copied["vectors"] > 0
    await _row_by_row(rows, search_docs, linked_vault)
    loaded, indexed = await _database(bulk), await _database(rows)
    assert all(loaded[name] for name in _SAME)  # (what is compared is there)
    assert loaded["totals"][0][0] == copied["chunks"]
    assert any(tg[1] == "O" for tg in loaded["triggers"])  # (the triggers are on)
    assert "chunks_bm25" in {name for name, _ in loaded["indexes"]}
    graphs = [d for _, d in loaded["indexes"] if "USING hnsw" in d]  # (its measured build)
    assert graphs and all("m='12', ef_construction='40'" in d for d in graphs), graphs
    for name in _SAME:
        assert loaded[name] == indexed[name], name
    answers = await _answers(bulk)
    assert answers == await _answers(rows)
    assert all(answers[f"lexical {q}"] for q in ("pancakes", "garden note"))
    # and the triggers keep the word counts once the load is over, as they do row by row
    for url in (bulk, rows):
        await _forget(url, linked_vault)
    loaded, indexed = await _database(bulk), await _database(rows)
    assert loaded["totals"] != [(copied["chunks"], copied["chunks"])]
    for name in _SAME:
        assert loaded[name] == indexed[name], name


async def test_a_server_restart_during_a_bulk_load_is_waited_for_and_the_load_finishes(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    postgres_of_its_own: PostgresServer,
) -> None:
    server = postgres_of_its_own
    db = await _sqlite_index(tmp_path, search_docs, linked_vault)
    straight, restarted = server.create_database("straight"), server.create_database("again")
    await migrate(db, straight)
    restarts: list[str] = []

    def progress(stage: str, done: int, total: int) -> None:
        if stage in ("files", "index") and stage not in restarts:  # (in the loop: it waits)
            restarts.append(stage)
            server.stop("fast")
            server.start()

    from rifflux.store import migrate as migrating

    batch, migrating.FILE_BATCH = migrating.FILE_BATCH, 5  # (many batches: restart between)
    try:
        copied = await migrate(db, restarted, progress=progress)
    finally:
        migrating.FILE_BATCH = batch
    assert restarts == ["files", "index"]
    assert copied["files"] == (await index_rows(db, "SELECT count(*) FROM files"))[0][0]
    assert await _database(restarted) == await _database(straight)
    assert await _answers(restarted) == await _answers(straight)


async def test_the_word_counts_written_on_a_connection_just_cut_fail_leaving_no_error_behind(
    new_postgres_index: Callable[[], str],
) -> None:
    # The server's last message ("terminating connection") is read while the
    # connection is idle and its end is not yet: asyncpg's COPY, begun then, failed and
    # left a future holding the lost connection's error that nobody awaited (a CI run
    # failed on it when the server restarted just before a load wrote its words).
    url = new_postgres_index()
    where = DatabaseUrl(url)
    loop = asyncio.get_running_loop()
    left: list[dict[str, Any]] = []
    handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: left.append(context))
    cut, admin = await asyncpg.connect(url, ssl=False), await asyncpg.connect(url, ssl=False)
    try:
        await stored_lexicon(cut, {"harbour": 1})  # (its statement known: as in a load)
        await cut.execute("DELETE FROM lexicon")
        await admin.execute("SELECT pg_terminate_backend($1)", cut.get_server_pid())
        time.sleep(0.5)  # noqa: ASYNC251 (the loop held: the server's last message and end wait)
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # (the last message read; the end not yet)
        with pytest.raises(IndexUnreachableError), mapped_errors(where):
            await stored_lexicon(cut, {"harbour": 2, "ferry": 1})
        cut.terminate()
        await asyncio.sleep(0.1)
        gc.collect()
        await asyncio.sleep(0.1)
    finally:
        loop.set_exception_handler(handler)
        cut.terminate()
        await admin.close()
    assert left == []
    assert await index_rows(url, "SELECT count(*) FROM lexicon") == [(0,)]


async def test_a_bulk_load_that_died_half_way_is_refused_saying_what_to_do(
    tmp_path: Path, search_docs: Path, linked_vault: Path,
    new_postgres_index: Callable[[], str],
) -> None:
    db = await _sqlite_index(tmp_path, search_docs, linked_vault)
    url = new_postgres_index()

    class Died(Exception):
        pass

    def progress(stage: str, done: int, total: int) -> None:
        raise Died  # (after the first batch of files)

    with pytest.raises(Died):
        await migrate(db, url, progress=progress)
    said = "copy by rifflux migrate .* has not finished.*drop the database.*migrate again"
    with pytest.raises(IndexDatabaseError, match=said):
        async with Rifflux(url, embedder=CountingEmbedder()):
            pass
    with pytest.raises(IndexDatabaseError, match=said):
        await migrate(db, url)
    with pytest.raises(IndexDatabaseError, match=said):
        async with Rifflux(url, embedder=CountingEmbedder(), settings=Settings(read_only=True)):
            pass
