"""A PostgreSQL index through what operators do to a database: a restart, a crash (the
postmaster killed), a dump restored into a new database, and a streaming replica
searched by a read-only instance. Each time the searches answer what they answered
before, lexical ones included, of the notes and of their git history (pg_textsearch's
BM25 indexes keep nothing across a restart and nothing on a replica:
``store.postgres.bm25_index``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import IndexDatabaseError, ReadOnlyError, Rifflux, Settings
from rifflux.location import DatabaseUrl
from rifflux.store.postgres import bm25_index

from .gitrepo import commit, init
from .helpers import (
    CountingEmbedder,
    eventually,
    index_rows,
    numbered_notes,
    rifflux_cli,
    write,
)
from .postgres import PostgresServer, postmaster_pid, streaming_replica

pytestmark = pytest.mark.anyio

QUERIES = (("heron wades reeds", "lexical"), ("heron number 7", "lexical"),
           ('"the reeds"', "lexical"), ("heron", "hybrid"), ("wades", "semantic"))
#: Searches of the notes' git history (its commits' titles, best first).
HISTORY_QUERIES = ("heron reeds", "kingfisher notes", '"the reeds"')


@pytest.fixture(autouse=True)
def soon(monkeypatch: pytest.MonkeyPatch) -> None:
    """The BM25 index looked at again, and mended, within a moment (not 5 and 30 s)."""
    from rifflux.actors import care

    monkeypatch.setattr(care, "MEND_EVERY", 0.3)
    monkeypatch.setattr(bm25_index, "CHECK_AGAIN_EVERY", 0.2)


async def answers(rf: Rifflux) -> list[list[tuple[str, int]]]:
    """Each query's hits, as (path, chunk index), best first."""
    out = []
    for query, mode in QUERIES:
        hits = await rf.search(query, mode=mode, top_k=10)
        out.append([(h["path"], h["chunk_index"]) for h in hits])
    for query in HISTORY_QUERIES:
        answer = await rf.search_history(query, mode="lexical")
        out.append([(h["title"], 0) for h in answer["results"]])
    return out


async def answered(rf: Rifflux, want: list[list[tuple[str, int]]]) -> bool:
    """Whether every search answers ``want`` now (False while the server is away)."""
    try:
        return await answers(rf) == want
    except IndexDatabaseError:
        return False


async def whole(url: str) -> bool:
    """Whether the BM25 indexes hold the newest chunk and commit again
    (``bm25_index.healthy``)."""
    import asyncpg

    from rifflux.store.postgres.bm25_index import INDEXES, healthy

    conn = await asyncpg.connect(url)
    try:
        return all([await healthy(conn, index) for index in INDEXES])
    finally:
        await conn.close()


async def indexed(url: str, tmp_path: Path) -> tuple[Path, list[list[tuple[str, int]]]]:
    notes = numbered_notes(tmp_path / "notes", 40)
    write(notes, "reeds.md", "# Reeds\n\nThe reeds where a heron wades, and the reeds again.\n")
    init(notes)
    commit(notes, "Number the heron notes\n\nForty notes, each a heron in the reeds.")
    commit(notes, "Plan the kingfisher notes\n\nA kingfisher dives for a fish.")
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(notes)
        await rf.wait_for_history()
        before = await answers(rf)
    assert all(before) and before[0][0] == ("reeds.md", 0)
    assert before[-3][0] == ("Number the heron notes", 0)
    return notes, before


async def test_a_restart_keeps_every_search_the_same_and_the_bm25_index_is_built_again(
    postgres_of_its_own: PostgresServer, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    server = postgres_of_its_own
    url = server.create_database("restart")
    notes, before = await indexed(url, tmp_path)
    async with Rifflux(url, embedder=CountingEmbedder(), watch_paths=[notes]) as writer:
        assert await answers(writer) == before
        caplog.clear()
        await anyio.to_thread.run_sync(_restart, server)
        # what pg_textsearch 0.6.1 leaves after a restart: an empty index (unless the
        # writer, back first on a busy machine, found it so and has built it again)
        found_empty = "the BM25 index chunks_bm25 (pg_textsearch) is empty or behind"
        assert not await whole(url) or found_empty in caplog.text
        # the same instance, and a fresh process, answer as before at once, lexically too
        await eventually(lambda: answered(writer, before), within=30)
        async with Rifflux(url, embedder=CountingEmbedder(),
                           settings=Settings(read_only=True)) as fresh:
            assert await answers(fresh) == before
            condition = (await fresh.status())["lexical_condition"]
        # the writing instance builds the index again; the answers say how they ranked
        await eventually(lambda: whole(url), within=30)
        await eventually(lambda: _condition_gone(writer), within=30)
        assert await answers(writer) == before
    assert condition is None or "without its BM25 index" in condition


def _restart(server: PostgresServer, *, down: float = 0.0) -> None:
    """Stop the server, and start it again ``down`` seconds later."""
    server.stop("fast")
    time.sleep(down)
    server.start()


async def _condition_gone(rf: Rifflux) -> bool:
    await rf.search("heron", mode="lexical")  # (it looks again as it searches)
    return rf.search_condition() is None


async def test_a_crash_of_the_server_keeps_every_search_the_same(
    durable_postgres: PostgresServer, tmp_path: Path,
) -> None:
    server = durable_postgres
    url = server.create_database("crash")
    notes, before = await indexed(url, tmp_path)
    write(notes, "late.md", "# Late\n\nA heron came late, after the others.\n")
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        await rf.reindex(notes)
        before = await answers(rf)
    pid = postmaster_pid(server)
    os.kill(pid, signal.SIGKILL)  # the postmaster, with no shutdown at all

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    await eventually(gone, within=30)
    await eventually(lambda: _started(server), within=60)  # (its backends end on their own)
    async with Rifflux(url, embedder=CountingEmbedder()) as rf:
        assert await answers(rf) == before
        hits = await rf.search("heron came late", mode="lexical")
        assert hits[0]["path"] == "late.md"
        await eventually(lambda: whole(url), within=30)  # (mended by this instance)


def _started(server: PostgresServer) -> bool:
    from .postgres import PostgresUnavailable

    try:
        server.start()
    except PostgresUnavailable:
        return False
    return True


async def test_a_dump_restored_into_a_new_database_answers_the_same_searches(
    postgres_of_its_own: PostgresServer, tmp_path: Path,
) -> None:
    server = postgres_of_its_own
    url = server.create_database("dumped")
    _, before = await indexed(url, tmp_path)
    dump = server.folder / "index.dump"
    done = server._run(str(server.bin_dir / "pg_dump"), "-Fc", "-f", str(dump), "-h",
                       "127.0.0.1", "-p", str(server.port), "-U", "postgres", "dumped")
    assert done.returncode == 0, done.stderr
    restored = server.create_database("restored")
    done = server._run(str(server.bin_dir / "pg_restore"), "-d", "restored", "-h",
                       "127.0.0.1", "-p", str(server.port), "-U", "postgres", str(dump))
    assert done.returncode == 0, done.stderr
    async with Rifflux(restored, embedder=CountingEmbedder()) as rf:
        assert await answers(rf) == before
        status = await rf.status()
    assert status["files"] == 41 and status["pending_embeddings"] == 0


async def test_a_read_only_instance_on_a_streaming_replica_searches_and_follows_the_primary(
    postgres_of_its_own: PostgresServer, tmp_path: Path,
) -> None:
    primary = postgres_of_its_own
    url = primary.create_database("replicated")
    notes, before = await indexed(url, tmp_path)
    with streaming_replica(primary) as replica:
        on_replica = replica.database_url("replicated")
        settings = Settings(db_path=DatabaseUrl(on_replica), read_only=True)
        async with Rifflux(settings=settings, embedder=CountingEmbedder()) as reader, \
                Rifflux(url, embedder=CountingEmbedder()) as writer:
            assert await answers(reader) == before  # lexical too, without a BM25 index
            condition = reader.search_condition()
            assert condition is not None and "read replica" in condition
            said = (await reader.search_history("heron", mode="lexical"))["problems"]
            assert any("history search ranks every match without its BM25 index" in p
                       for p in said), said
            write(notes, "kingfisher.md", "# Kingfisher\n\nA kingfisher dives for a fish.\n")
            await writer.reindex(notes)  # (through the primary)

            async def found() -> bool:
                hits = await reader.search("kingfisher dives", mode="lexical")
                return bool(hits) and hits[0]["path"] == "kingfisher.md"

            await eventually(found, within=10)
            status = await reader.status()  # (a transaction replayed: it has a lag)
            assert status["replica"] is True and status["replication_lag_s"] is not None
            assert (await writer.status())["replica"] is False
            with pytest.raises(ReadOnlyError, match="read-only"):
                await reader.reindex(notes)
        # the command line's reading commands search the replica (they open it read-only)
        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            done = rifflux_cli(tmp_path, "--db", on_replica, *args)
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
            return done

        hits = json.loads((await anyio.to_thread.run_sync(
            cli, "search", "kingfisher dives", "--mode", "lexical", "--json")).stdout)
        assert hits["results"][0]["path"] == "kingfisher.md"
        assert "read-only" in (await anyio.to_thread.run_sync(cli, "status")).stdout
        # an instance that would write, on the replica: refused, saying what to do
        with pytest.raises(IndexDatabaseError, match="replica") as refused:
            async with Rifflux(on_replica, embedder=CountingEmbedder()):
                pass
        assert "--read-only" in str(refused.value) and "primary" in str(refused.value)
    rows: list[Any] = await index_rows(url, "SELECT count(*) FROM files")
    assert rows[0][0] == 42


def test_rifflux_index_waits_for_a_server_restarted_mid_run_and_finishes(
    postgres_of_its_own: PostgresServer, tmp_path: Path,
) -> None:
    # One file's parsing is held until the server has been restarted: the restart falls
    # in the middle of the job whatever the machine's speed (it exited 1 with
    # CannotConnectNowError: its progress read the counts and failed on the first error).

    from .helpers import cli_env

    server = postgres_of_its_own
    url = server.create_database("midrun")
    notes = numbered_notes(tmp_path / "notes", 120, long=True)
    write(notes, "held-back.md", "# Held\n\nThe heron held back until the restart.\n")
    restarted = tmp_path / "restarted"
    held = Path(__file__).parent / "http" / "held_parse"
    env = cli_env(tmp_path, PYTHONPATH=os.pathsep.join([str(held), cli_env(tmp_path)[
        "PYTHONPATH"]]), RIFFLUX_TEST_HOLD_PARSE="held-back.md",
        RIFFLUX_TEST_HOLD_UNTIL=str(restarted))
    with subprocess.Popen([sys.executable, "-m", "rifflux", "--db", url, "index", str(notes)],
                          cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as run:

        async def files() -> int:
            try:
                return int((await index_rows(url, "SELECT count(*) FROM files"))[0][0])
            except Exception:  # (the schema is not made yet)
                return 0

        async def most_written() -> bool:
            return await files() >= 100

        try:
            anyio.run(lambda: eventually(most_written, within=120))
            _restart(server, down=3)  # (long enough for the progress to find it away)
        finally:
            restarted.touch()
        out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    assert out.startswith("Indexed 121 files") and "the job waits for it" in err
    assert anyio.run(files) == 121
