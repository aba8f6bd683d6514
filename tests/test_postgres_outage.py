"""A running Rifflux whose PostgreSQL server goes away and comes back: while it is
away every search fails with an error that says so and what to do; once it is back
searches work again without a restart, and the work that came in meanwhile (a
watcher's job) is done, nothing lost. The embedding lease, ended by the restart, is
confirmed by its new holder only."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from rifflux import IndexUnreachableError, Rifflux, Settings
from rifflux.location import DatabaseUrl
from rifflux.store.postgres.connection import close, connect
from rifflux.store.postgres.presence import Lease
from rifflux.store.postgres.schema import ensure_schema

from .helpers import CountingEmbedder, eventually, numbered_notes, write
from .postgres import PostgresServer

pytestmark = pytest.mark.anyio

MODES = ("lexical", "semantic", "hybrid")


async def test_a_server_restarted_under_a_running_rifflux_gives_clear_errors_then_recovers(
    postgres_of_its_own: PostgresServer, tmp_path: Path,
) -> None:
    server = postgres_of_its_own
    url = server.create_database("outage")
    root = numbered_notes(tmp_path / "notes", 3)
    settings = Settings(db_path=DatabaseUrl(url), watch_paths=(root,),
                        debounce_seconds=0.05)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:

        async def found(query: str, mode: str, paths: set[str]) -> bool:
            """Whether the search finds exactly the notes that hold the words (those its
            lexical branch must rank first; every hit of a semantic one: there are few)."""
            try:
                hits = await rf.search(query, mode=mode, top_k=5)
            except IndexUnreachableError:
                return False
            return {h["path"] for h in hits[: len(paths)]} == paths

        for mode in MODES:
            await eventually(partial(found, "heron wades reeds", mode,
                                     {"n0.md", "n1.md", "n2.md"}))
        await anyio.to_thread.run_sync(server.stop)
        for mode in MODES:
            with pytest.raises(IndexUnreachableError,
                               match="cannot reach the PostgreSQL index .* check that the "
                                     "server is running"):
                await rf.search("heron", mode=mode)
        write(root, "new.md", "# New\n\na kingfisher dives from the branch.\n")  # a job
        with pytest.raises(IndexUnreachableError):
            await rf.status()
        await anyio.to_thread.run_sync(server.start)
        for mode in MODES:
            await eventually(partial(found, "kingfisher dives", mode, {"new.md"}), within=60)
        status = await rf.status()
    assert status["files"] == 4 and status["embeddings"] == 4
    assert status["pending_embeddings"] == 0
    assert [j["status"] for j in status["jobs"]] == ["completed"] * len(status["jobs"])


async def test_after_a_server_restart_the_embedding_lease_is_confirmed_by_its_new_holder_only(
    postgres_of_its_own: PostgresServer,
) -> None:
    server = postgres_of_its_own
    where = DatabaseUrl(server.create_database("lease"))
    conn = await connect(where, seconds=30, vectors=False)
    try:
        await ensure_schema(conn, where)  # (each take of the lease writes its token there)
    finally:
        await close(conn)
    first, second = Lease(where, timeout=5), Lease(where, timeout=5)
    try:
        assert await first.try_take()
        assert await first.confirm()
        assert not await second.try_take()
        await anyio.to_thread.run_sync(server.stop)
        await anyio.to_thread.run_sync(server.start)
        await eventually(second.try_take)  # the restart ended the first one's session
        assert not await first.confirm()  # (``held`` may not know yet: the server says)
        assert not first.held
        assert await second.confirm()
        assert not await first.try_take()
    finally:
        await first.give_back()
        await second.give_back()
