"""Several real processes on one index (an SQLite file, or a PostgreSQL database where
the test says ``shared``): each sees what the others write, in every mode; a text is
embedded once, by the process holding the embedding lease, and another takes over
when it dies; reindexes from several processes all complete."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from .helpers import (
    REPO,
    Location,
    cli_env,
    eventually,
    index_rows,
    languages_untold,
    numbered_notes,
    write,
)

pytestmark = pytest.mark.anyio


class DriverError(Exception):
    """A command the driven process answered with an error: ``kind`` names its type."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.kind = answer.partition(":")[0]


class Driver:
    """One Rifflux process, run by ``tests.process_driver``."""

    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdout is not None and process.stdin is not None
        self._out = BufferedByteReceiveStream(process.stdout)
        self._turn = anyio.Lock()  # one command at a time (the driver answers in order)
        self.pid = 0

    async def ready(self) -> None:
        with anyio.fail_after(60):
            line = await self._out.receive_until(b"\n", 1 << 20)
        self.pid = int(json.loads(line)["ready"])

    async def __call__(self, op: str, **args: Any) -> Any:
        assert self.process.stdin is not None
        async with self._turn:
            await self.process.stdin.send((json.dumps({"op": op, **args}) + "\n").encode())
            with anyio.fail_after(120):
                line = await self._out.receive_until(b"\n", 1 << 24)
        answer = json.loads(line)
        if "error" in answer:
            raise DriverError(answer["error"])
        return answer["ok"]

    async def paths(self, query: str, mode: str = "lexical") -> set[str]:
        return {h["path"] for h in await self("search", query=query, mode=mode, top_k=20)}


@pytest.fixture(params=["sqlite", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """Where the processes' index is: an SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "i.db"
    make: Callable[[], str] = request.getfixturevalue("new_postgres_index")
    return make()


def searchable(status: dict[str, Any]) -> int:
    """How many vectors a process's searches see: those in its matrix (SQLite), or
    every vector in the database (PostgreSQL ranks them there)."""
    return int(status["vectors_in_memory"] if status["store"] == "sqlite"
               else status["embeddings"])


@asynccontextmanager
async def drivers(db: Location, *options: list[str]) -> AsyncIterator[list[Driver]]:
    """Processes on ``db``, one per list of options, all open (ready) at once."""
    async with AsyncExitStack() as stack:
        out: list[Driver] = []
        for opts in options:
            process = await stack.enter_async_context(await anyio.open_process(
                [sys.executable, "-m", "tests.process_driver", str(db), *opts], cwd=REPO,
                stderr=None))
            out.append(Driver(process))
        for d in out:
            await d.ready()
        try:
            yield out
        finally:
            for d in out:
                if d.process.returncode is None:
                    d.process.terminate()


async def test_another_process_sees_new_edited_and_deleted_files_in_every_mode(
    tmp_path: Path, shared: Location,
) -> None:
    root = numbered_notes(tmp_path / "notes", 3)
    async with drivers(shared, [], []) as (a, b):
        await a("reindex", path=str(root))
        assert await b.paths("heron") == {"n0.md", "n1.md", "n2.md"}  # at once

        async def b_has_every_vector() -> bool:
            st = await b("status")
            return bool(searchable(st) == st["embeddings"] == 3)

        await eventually(b_has_every_vector)
        assert "n1.md" in await b.paths("heron number 1", "semantic")

        write(root, "n1.md", "# Note 1\n\nkingfisher dives from the branch.\n")
        write(root, "n3.md", "# Note 3\n\nkingfisher again, a new note.\n")
        await a("reindex", path=str(root))
        assert await b.paths("kingfisher") == {"n1.md", "n3.md"}
        assert "n1.md" not in await b.paths("heron")

        async def b_follows_the_edit() -> bool:
            st = await b("status")
            hits = await b("search", query="kingfisher dives", mode="semantic", top_k=1)
            return bool(searchable(st) == st["embeddings"] == 4 and hits
                        and hits[0]["path"] == "n1.md")

        await eventually(b_follows_the_edit)

        (root / "n0.md").unlink()
        await a("reindex", path=str(root))

        async def b_forgets_it() -> bool:
            everywhere = [await b.paths("heron number 0", mode)
                          for mode in ("lexical", "semantic", "hybrid")]
            return all("n0.md" not in found for found in everywhere)

        await eventually(b_forgets_it)
        status = await b("status")
        others = {p["pid"]: p["roles"] for p in status["processes"]}
        assert others[a.pid][0] == "indexer" and status["process"]["pid"] == b.pid
        assert status["sequence"] > 0 and status["files"] == 3


async def test_three_processes_embed_each_text_once_and_all_their_reindexes_return(
    tmp_path: Path, shared: Location,
) -> None:
    root = numbered_notes(tmp_path / "notes", 60)
    async with drivers(shared, ["--slow", "0.01"], ["--slow", "0.01"],
                       ["--slow", "0.01"]) as procs:
        results: list[Any] = [None] * 3

        async def reindex(i: int) -> None:
            results[i] = await procs[i]("reindex", path=str(root))

        async with anyio.create_task_group() as tg:  # all at once, in the foreground
            for i in range(3):
                tg.start_soon(reindex, i)
        counts = [await p("embedded") for p in procs]
        # Each again, now that every write is done (another's job may have written the
        # same files again after this one returned, which it then sees a moment later:
        # until then its matrix lacks their vectors): a reindex that writes nothing
        # returns once its process has what the others wrote, so a semantic search there
        # finds every note.
        again = [await p("reindex", path=str(root)) for p in procs]
        statuses = [await p("status") for p in procs]
        found = [[f"n{i}.md" in await p.paths(f"heron number {i} wades in the reeds",
                                               "semantic") for i in range(60)] for p in procs]
    assert all(r["errors"] == [] for r in results)
    assert sum(r["indexed_files"] for r in results) >= 60
    assert sum(counts) == 60, counts  # every text once, whoever embedded it
    assert sum(1 for st in statuses if "embedder" in st["process"]["roles"]) == 1
    assert {st["embeddings"] for st in statuses} == {60}
    assert {searchable(st) for st in statuses} == {60}
    assert [r["indexed_files"] for r in again] == [0, 0, 0]
    assert found == [[True] * 60] * 3


async def test_a_reindex_returns_once_its_process_has_the_vectors_another_process_wrote(
    tmp_path: Path, shared: Location,
) -> None:
    root = numbered_notes(tmp_path / "notes", 40)
    (tmp_path / "empty").mkdir()
    db = shared
    async with drivers(db, []) as (a,):

        async def a_embeds() -> bool:
            return "embedder" in (await a("status"))["process"]["roles"]

        await eventually(a_embeds)
        # b looks at the others' commits on its own only once, as it starts: once its
        # first job has run (after that look) and a semantic search has waited for its
        # matrix, only b's reindex can bring in what a writes
        async with drivers(db, ["--follow-every", "60"]) as (b,):
            await b("reindex", path=str(tmp_path / "empty"))
            await b.paths("heron", "semantic")
            await a("reindex", path=str(root))  # a writes and embeds every note
            result = await b("reindex", path=str(root))  # nothing changed: b writes nothing
            status = await b("status")
            found = [await b.paths(f"heron number {i} wades in the reeds", "semantic")
                     for i in range(40)]
    assert result["indexed_files"] == 0 and result["errors"] == []
    assert searchable(status) == 40
    assert [f"n{i}.md" in hits for i, hits in enumerate(found)] == [True] * 40


async def test_the_survivor_finishes_the_embedding_when_its_holder_is_killed(
    tmp_path: Path, shared: Location,
) -> None:
    root = numbered_notes(tmp_path / "notes", 80)
    db = shared
    slow = ["--slow", "0.05"]
    async with drivers(db, slow, slow) as procs:
        await procs[0]("reindex", path=str(root), background=True)

        async def some_vectors() -> bool:
            return bool((await index_rows(db, "SELECT COUNT(*) FROM embeddings"))[0][0])

        await eventually(some_vectors, within=30)
        roles = [(await p("status"))["process"]["roles"] for p in procs]
        holder, survivor = (procs[0], procs[1]) if "embedder" in roles[0] else \
            (procs[1], procs[0])
        assert "embedder" in (await holder("status"))["process"]["roles"]
        assert "embedder" not in (await survivor("status"))["process"]["roles"]
        embedded_before = await survivor("embedded")
        holder.process.send_signal(signal.SIGKILL)
        await holder.process.wait()

        async def survivor_finished() -> bool:
            st = await survivor("status")
            return bool(st["pending_embeddings"] == 0 and st["embeddings"] == 80
                        and searchable(st) == 80)

        await eventually(survivor_finished, within=60)
        assert embedded_before == 0 and await survivor("embedded") > 0
        assert "embedder" in (await survivor("status"))["process"]["roles"]
    if isinstance(db, Path):
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_reindexes_from_two_processes_at_once_complete_without_errors(
    tmp_path: Path, shared: Location,
) -> None:
    one, two = numbered_notes(tmp_path / "one", 150, word="egret"), numbered_notes(
        tmp_path / "two", 150, word="ibis")
    async with drivers(shared, [], []) as (a, b):
        results: dict[str, Any] = {}

        async def reindex(name: str, d: Driver, path: Path) -> None:
            results[name] = await d("reindex", path=str(path))

        async with anyio.create_task_group() as tg:
            tg.start_soon(reindex, "a-one", a, one)
            tg.start_soon(reindex, "b-two", b, two)
            tg.start_soon(reindex, "b-one", b, one)  # the same folder from both (b: after two)
        status = await a("status")
    assert all(r["errors"] == [] for r in results.values()), results
    assert results["a-one"]["indexed_files"] + results["b-one"]["indexed_files"] >= 150
    assert status["files"] == 300 and status["pending_embeddings"] == 0
    assert status["embeddings"] == 300


async def test_two_watchers_on_one_folder_and_a_read_only_follower(
    tmp_path: Path, shared: Location,
) -> None:
    root = numbered_notes(tmp_path / "notes", 2)
    db = shared
    watch = ["--watch", str(root)]
    async with drivers(db, watch, watch) as (a, b):
        await eventually(lambda: b.paths("heron"))
        async with drivers(db, ["--read-only"]) as (reader,):
            write(root, "new.md", "# New\n\na spoonbill sweeps the shallows.\n")
            for d in (a, b, reader):
                await eventually(partial(d.paths, "spoonbill"))

            async def semantic_everywhere() -> bool:
                found = [await d.paths("spoonbill sweeps", "semantic") for d in (a, b, reader)]
                return all("new.md" in f for f in found)

            await eventually(semantic_everywhere)
            assert (await reader("status"))["process"]["roles"] == ["reader"]

        async def every_job_completed() -> bool:  # (a job ends once its process has
            # taken up the other's vectors: PostgreSQL searches find them before that)
            jobs = (await a("status"))["jobs"] + (await b("status"))["jobs"]
            return all(j["status"] == "completed" for j in jobs)

        await eventually(every_job_completed)
        embedded = await a("embedded") + await b("embedded")
    assert embedded == 3  # two notes and the new one, once each


async def test_rifflux_status_lists_the_other_processes(tmp_path: Path) -> None:
    root = numbered_notes(tmp_path / "notes", 1)
    async with drivers(tmp_path / "i.db", ["--watch", str(root)]) as (a,):
        await eventually(lambda: a.paths("heron"))
        done = await anyio.run_process(
            [sys.executable, "-m", "rifflux", "--db", str(tmp_path / "i.db"), "status"],
            cwd=REPO, env=cli_env(tmp_path), check=False)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    assert f"pid {a.pid} (indexer, " in out and "watcher)" in out


async def test_another_process_follows_links_as_they_are_made_and_resolved_again(
    tmp_path: Path,
) -> None:
    root = tmp_path / "vault"
    write(root, "a.md", "# A\n\nsee [[b]] and [[c]]\n")
    write(root, "b.md", "# B\n\nplain\n")
    async with drivers(tmp_path / "i.db", [], []) as (a, b):
        await a("reindex", path=str(root))

        async def b_sees(path: str, expected: list[str]) -> bool:
            try:
                found = await b("neighbors", path=str(root / path))
            except DriverError as exc:  # not followed yet: the folder or note is unknown to b
                if exc.kind not in ("InvalidArgumentError", "NotFoundError"):
                    raise
                return False
            return sorted(n["path"] for n in found) == expected

        await eventually(lambda: b_sees("a.md", ["b.md"]))
        write(root, "c.md", "# C\n\nnew note\n")  # [[c]] in a.md now resolves
        await a("reindex", path=str(root))
        await eventually(lambda: b_sees("a.md", ["b.md", "c.md"]))
        (root / "b.md").rename(root / "b-old.md")  # [[b]] no longer resolves
        await a("reindex", path=str(root))
        await eventually(lambda: b_sees("a.md", ["c.md"]))
        links = await b("links", path=str(root / "a.md"))
    assert [u["target"] for u in links["unresolved"]] == ["b"]


async def test_a_reader_process_sees_the_languages_a_writer_tells_after_its_commit(
    tmp_path: Path, shared: Location,
) -> None:
    root = tmp_path / "notes"
    write(root, "trip.md", "# Trip\n\n## Plan\n\nWe take the night train to Vienna on Friday "
                           "and walk through the old town on Saturday morning.\n\n## Reise\n\n"
                           "Wir nehmen am Freitag den Nachtzug nach Wien und gehen am "
                           "Samstagmorgen durch die Altstadt.\n")
    async with drivers(shared, []) as (a,):
        await a("reindex", path=str(root))
    waiting = await languages_untold(shared)  # (as a writer leaves it before its pass)
    async with drivers(shared, ["--read-only"]) as (reader,):
        assert await reader.paths("Nachtzug") == {"trip.md"}
        assert await reader("search", query="Nachtzug", mode="lexical", lang="de") == []
        assert await reader("languages_pending") == waiting  # (its catalog read: filtered)
        async with drivers(shared, []) as (writer,):  # (its pass, at start, tells them)

            async def told() -> list[str | None]:
                hits = await reader("search", query="Nachtzug", mode="lexical", lang="de")
                return [h["lang"] for h in hits]

            assert await eventually(told, 60) == ["de"]
            assert await reader("languages_pending") == 0
            await writer("status")
