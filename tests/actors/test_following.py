"""The indexer following another process's commits when reading them fails: a job that
waits on the other process still completes, and a failure that lasts is not read again
five times a second. Two writers on one real SQLite file stand for the two processes:
``a``'s indexer runs, and only it touches ``a``'s connection; the test drives ``b``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from anyio.abc import TaskGroup

from rifflux import IndexBusyError, IndexDatabaseError
from rifflux.actors.indexer import FOLLOW_TRIES, Indexer
from rifflux.actors.jobs import Job, JobHandle, JobQueue, Target
from rifflux.actors.messages import (
    EmbedderMessage,
    IndexerMessage,
    JobsQueued,
    ModelLoaded,
    QueryMessage,
    Ticked,
    VectorsReset,
)
from rifflux.config import Settings
from rifflux.store.sqlite.changes import Follow
from rifflux.store.sqlite.writer import Writer

from ..helpers import MODEL, CountingEmbedder, afile, eventually, hashes, two_processes, write

pytestmark = pytest.mark.anyio


class Processes:
    """Process ``a`` (whose indexer is under test) and process ``b`` (the other one)."""

    def __init__(self, db: Path, writers: list[Writer], follows: list[Follow]) -> None:
        self.a, self.b = writers
        self.a_follow = follows[0]
        self.inbox, inbox = anyio.create_memory_object_stream[IndexerMessage](4)
        self.jobs = JobQueue(history=10, max_queued=10, on_submit=self._nudge)
        self.query_out, self.query_in = anyio.create_memory_object_stream[QueryMessage](100)
        embed_out, self._embed_in = anyio.create_memory_object_stream[EmbedderMessage](100)
        self.indexer = Indexer(writer=self.a, settings=Settings(db_path=db), jobs=self.jobs,
                               inbox=inbox, embedder_out=embed_out, query_out=self.query_out,
                               retry_out=self.inbox.clone(), follow=self.a_follow)

    def _nudge(self) -> None:
        self.inbox.send_nowait(JobsQueued())

    async def start(self, tg: TaskGroup) -> None:
        """``a``'s indexer runs, with the model adopted (as the model loader tells it)."""
        await tg.start(self.indexer.run)
        await self.inbox.send(ModelLoaded(embedder=CountingEmbedder(MODEL)))
        with anyio.fail_after(5):
            assert isinstance(await self.query_in.receive(), VectorsReset)

    def close(self) -> None:
        for stream in (self.inbox, self.query_out, self.query_in, self._embed_in):
            stream.close()

    async def look(self) -> None:
        """One more look at the change log by ``a``'s indexer, done."""
        tick = Ticked()
        await self.inbox.send(tick)
        with anyio.fail_after(5):
            await tick.looked.wait()

    def sent_to_query(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(type(self.query_in.receive_nowait()).__name__)
            except (anyio.WouldBlock, anyio.EndOfStream):
                return out


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[Processes]:
    async with two_processes(tmp_path / "i.db") as pairs:
        processes = Processes(tmp_path / "i.db", [w for w, _ in pairs], [f for _, f in pairs])
        try:
            yield processes
        finally:
            processes.close()


def failing(monkeypatch: pytest.MonkeyPatch, error: Exception | None,
            times: int) -> list[int]:
    """Reading the other process's changes fails ``times`` times with ``error``."""
    reads: list[int] = []
    real: Callable[..., Awaitable[Any]] = Follow.read

    async def read(self: Follow, *args: Any) -> Any:
        reads.append(1)
        if error is not None and len(reads) <= times:
            raise error
        return await real(self, *args)

    monkeypatch.setattr(Follow, "read", read)
    return reads


async def a_job_waiting_for_b(two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              error: Exception, times: int) -> tuple[JobHandle, list[int]]:
    """``a`` indexes a text and waits for its vector, which ``b`` (the embedder) stores;
    reading ``b``'s changes then fails ``times`` times with ``error`` (the reads made)."""
    write(tmp_path / "docs", "one.md", "# One\n\nA text only b embeds.\n")
    job = JobHandle(two.jobs.submit(Job([Target(tmp_path / "docs")])))
    await eventually(lambda: job.info()["phase"] == "embedding")
    assert job.info()["pending_embeddings"] == 1
    # (the indexer done with what came before the next message: the file's commit and its
    # languages' notice, which may follow the phase's change on a busy machine)
    await two.look()
    two.sent_to_query()  # (the file written)
    reads = failing(monkeypatch, error, times)
    await two.b.missing.refresh()
    hashes = sorted(two.b.missing.texts or ())
    await two.b.write_vectors(MODEL, hashes, np.ones((len(hashes), 4), dtype=np.float32))
    return job, reads


async def completed(job: JobHandle) -> None:
    with anyio.fail_after(10):
        assert (await job.finished()).info["status"] == "completed"


async def test_an_unexpected_failure_reads_everything_again_and_the_job_completes(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with anyio.create_task_group() as tg:
        await two.start(tg)
        job, reads = await a_job_waiting_for_b(two, tmp_path, monkeypatch,
                                               ValueError("a bug while applying"), times=99)
        await completed(job)
        await two.look()
        tg.cancel_scope.cancel()
    assert len(reads) == 1 and not two.a.missing.texts
    assert two.sent_to_query() == [VectorsReset.__name__]
    assert two.a_follow.seen == await two.a_follow.sequence()  # not read again


async def test_a_busy_read_is_tried_again_then_everything_is_read_instead(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(two.indexer, "_settings",
                        replace(two.indexer._settings, follow_seconds=0.01))
    async with anyio.create_task_group() as tg:
        await two.start(tg)
        job, reads = await a_job_waiting_for_b(two, tmp_path, monkeypatch,
                                               IndexBusyError("the index is locked"), times=99)
        await completed(job)
        for _ in range(3):  # then no more: nothing new was committed
            await two.look()
        tg.cancel_scope.cancel()
    assert len(reads) == FOLLOW_TRIES and not two.a.missing.texts
    assert VectorsReset.__name__ in two.sent_to_query()


async def test_a_busy_read_that_clears_applies_the_changes_themselves(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(two.indexer, "_settings",
                        replace(two.indexer._settings, follow_seconds=0.01))
    async with anyio.create_task_group() as tg:
        await two.start(tg)
        job, reads = await a_job_waiting_for_b(two, tmp_path, monkeypatch,
                                               IndexBusyError("the index is locked"), times=2)
        await completed(job)
        tg.cancel_scope.cancel()
    assert len(reads) == 3 and not two.a.missing.texts
    assert VectorsReset.__name__ not in two.sent_to_query()


async def test_a_lasting_failure_is_not_read_again_at_every_tick(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = failing(monkeypatch, IndexDatabaseError("database disk image is malformed"),
                    times=10**6)
    monkeypatch.setattr(two.indexer, "_settings",  # (the looks below only)
                        replace(two.indexer._settings, follow_seconds=60))
    async with anyio.create_task_group() as tg:
        await two.start(tg)
        root = await two.b.roots.root_id(tmp_path / "docs")  # commits by the other process
        assert root is not None
        await two.b.write_files(root, [afile("one.md", "b's text")])
        await two.look()
        # (one failed read, or two when the timer's first tick fell between b's commits)
        failed = len(reads)
        assert failed >= 1
        for _ in range(5):  # each a look at the log, after the failure
            await two.look()
        tg.cancel_scope.cancel()
    assert len(reads) == failed


async def test_the_missing_texts_follow_what_the_other_process_wrote_and_only_that(
    two: Processes, tmp_path: Path,
) -> None:
    # Every commit of a process indexing a large folder used to make the others check
    # every text still lacking a vector; they now read only what its commits wrote.
    async with anyio.create_task_group() as tg:
        await two.start(tg)
        for i in range(20):
            write(tmp_path / "mine", f"n{i}.md", f"# Note {i}\n\nMy own text number {i}.\n")
        job = JobHandle(two.jobs.submit(Job([Target(tmp_path / "mine")])))
        await eventually(lambda: job.info()["phase"] == "embedding")
        ours = set(two.a.missing.texts or ())
        assert len(ours) == 20

        async def languages_told() -> bool:  # (a's languages pass, after its writes)
            return await two.a.telling.waiting() == 0

        await eventually(languages_told)
        statements: list[str] = []
        await two.a.conn.set_trace_callback(statements.append)  # (a's indexer runs them)

        async def follow() -> None:
            await two.look()
            await two.b.missing.refresh()  # what a full read finds, on b's connection
            assert two.a.missing.texts == two.b.missing.texts

        theirs = await two.b.roots.root_id(tmp_path / "docs")
        assert theirs is not None
        await two.b.write_files(theirs, [afile("x.md", "text one", "text two", "shared"),
                                         afile("y.md", "shared")])
        await follow()
        assert two.a.missing.texts == ours | hashes("text one", "text two", "shared")
        await two.b.write_vectors(MODEL, sorted(hashes("text one")),
                                  np.ones((1, 4), dtype=np.float32))
        await follow()
        await two.b.delete_files(theirs, ["y.md"])  # x.md still has "shared": it stays
        await two.b.write_files(theirs, [afile("x.md", "text one", "text four", "shared")])
        await follow()
        assert two.a.missing.texts == ours | hashes("text four", "shared")  # "two" is gone
        tg.cancel_scope.cancel()
    read = [sql for sql in statements if "chunks" in sql]
    assert read and all(" IN (" in sql for sql in read)  # by key, never all of them
    assert not [h for h in ours if any(h in sql for sql in statements)]  # nor a's own
