"""The indexer following another process's commits when reading them fails: a job that
waits on the other process still completes, and a failure that lasts is not read again
five times a second. Two writers on one real SQLite file stand for the two processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from rifflux import IndexBusyError, IndexDatabaseError
from rifflux.actors import indexer as indexer_module
from rifflux.actors.indexer import FOLLOW_TRIES, Indexer
from rifflux.actors.jobs import Job, JobQueue, Target
from rifflux.actors.messages import VectorsReset
from rifflux.config import Settings
from rifflux.store.changes import Follow
from rifflux.store.writer import Writer

from ..helpers import MODEL, afile, eventually, hashes, two_processes

pytestmark = pytest.mark.anyio


class Processes:
    """Process ``a`` (whose indexer is under test) and process ``b`` (the other one)."""

    def __init__(self, db: Path, writers: list[Writer], follows: list[Follow]) -> None:
        self.a, self.b = writers
        self.a_follow = follows[0]
        self.jobs = JobQueue(history=10, max_queued=10)
        self.query_out, self.query_in = anyio.create_memory_object_stream[Any](100)
        self._embed_out, self._embed_in = anyio.create_memory_object_stream[Any](100)
        self.retry_out, self._inbox = anyio.create_memory_object_stream[Any](4)
        self.indexer = Indexer(writer=self.a, settings=Settings(db_path=db), jobs=self.jobs,
                               inbox=self._inbox, embedder_out=self._embed_out,
                               query_out=self.query_out, retry_out=self.retry_out,
                               follow=self.a_follow)
        self.indexer._model = MODEL

    def close(self) -> None:
        for stream in (self.query_out, self.query_in, self._embed_out, self._embed_in,
                       self.retry_out, self._inbox):
            stream.close()

    def sent_to_query(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(type(self.query_in.receive_nowait()).__name__)
            except anyio.WouldBlock:
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
    real: Callable[..., Awaitable[Any]] = Follow._gather

    async def gather(self: Follow, *args: Any) -> Any:
        reads.append(1)
        if error is not None and len(reads) <= times:
            raise error
        return await real(self, *args)

    monkeypatch.setattr(Follow, "_gather", gather)
    return reads


async def a_job_waiting_for_b(two: Processes, tmp_path: Path) -> Job:
    """``a`` wrote a text and waits for its vector, which ``b`` (the embedder) stores."""
    root = await two.a.root_id(tmp_path / "docs")
    assert root is not None
    await two.a.write_files(root, [afile("one.md", "a text only b embeds")])
    job = two.jobs.submit(Job([Target(tmp_path / "docs")]))
    two.jobs.start_next()
    two.jobs.mark_written(job)
    assert two.a.missing is not None
    two.jobs.wait_for(job, set(two.a.missing))
    await two.b.refresh_missing()
    assert two.b.missing is not None
    hashes = sorted(two.b.missing)
    await two.b.write_vectors(MODEL, hashes, np.ones((len(hashes), 4), dtype=np.float32))
    return job


async def test_an_unexpected_failure_reads_everything_again_and_the_job_completes(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = await a_job_waiting_for_b(two, tmp_path)
    reads = failing(monkeypatch, ValueError("a bug while applying"), times=99)
    assert await two.a_follow.others_wrote()
    await two.indexer._others_wrote()
    assert len(reads) == 1
    assert job.status == "completed" and not two.a.missing
    assert two.sent_to_query() == [VectorsReset.__name__]
    assert two.a_follow.seen == await two.a_follow.sequence()  # not read again


async def test_a_busy_read_is_tried_again_then_everything_is_read_instead(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = await a_job_waiting_for_b(two, tmp_path)
    reads = failing(monkeypatch, IndexBusyError("the index is locked"), times=99)
    for _ in range(FOLLOW_TRIES * 2):
        if await two.a_follow.others_wrote():
            await two.indexer._others_wrote()
    assert len(reads) == FOLLOW_TRIES  # then no more: nothing new was committed
    assert job.status == "completed" and not two.a.missing
    assert VectorsReset.__name__ in two.sent_to_query()


async def test_a_busy_read_that_clears_applies_the_changes_themselves(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = await a_job_waiting_for_b(two, tmp_path)
    reads = failing(monkeypatch, IndexBusyError("the index is locked"), times=2)
    for _ in range(4):
        if await two.a_follow.others_wrote():
            await two.indexer._others_wrote()
    assert len(reads) == 3
    assert job.status == "completed" and not two.a.missing
    assert VectorsReset.__name__ not in two.sent_to_query()


async def test_a_lasting_failure_is_not_read_again_at_every_tick(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads = failing(monkeypatch, IndexDatabaseError("database disk image is malformed"),
                    times=10**6)
    monkeypatch.setattr(indexer_module, "FOLLOW_EVERY", 0.01)
    looks = 0
    look = two.a_follow.others_wrote

    async def counted() -> bool:
        nonlocal looks
        looks += 1
        return await look()

    monkeypatch.setattr(two.a_follow, "others_wrote", counted)
    async with anyio.create_task_group() as tg:
        tg.start_soon(two.indexer.run)
        root = await two.b.root_id(tmp_path / "docs")  # one commit by the other process
        assert root is not None
        await two.b.write_files(root, [afile("one.md", "b's text")])
        await eventually(lambda: reads)  # (the indexer's ticker, in this process)
        after = looks
        await eventually(lambda: looks >= after + 50)  # fifty more ticks
        tg.cancel_scope.cancel()
    assert len(reads) == 1


async def test_missing_texts_follow_the_other_processes_files_without_a_full_read(
    two: Processes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every commit of a process indexing a large folder used to make the others read
    # every chunk again for the texts lacking vectors; they now read the files it wrote.
    full_reads: list[str] = []
    lacking = two.a._lacking

    async def counted(model: str) -> set[str]:
        full_reads.append(model)
        return await lacking(model)

    monkeypatch.setattr(two.a, "_lacking", counted)
    ours = await two.a.root_id(tmp_path / "mine")
    theirs = await two.b.root_id(tmp_path / "docs")
    assert ours is not None and theirs is not None
    await two.a.write_files(ours, [afile("kept.md", "shared text")])  # a's own, lacking too

    async def follow() -> None:
        assert await two.a_follow.others_wrote()
        await two.indexer._others_wrote()
        assert two.a.missing == await lacking(MODEL)  # what a full read would find

    await two.b.write_files(theirs, [afile("x.md", "text one", "text two"),
                                     afile("y.md", "shared text")])
    await follow()
    assert two.a.missing == hashes("text one", "text two", "shared text")
    await two.b.write_vectors(MODEL, sorted(hashes("text one")),
                              np.ones((1, 4), dtype=np.float32))
    await follow()
    await two.b.delete_files(theirs, ["y.md"])  # a still has "shared text": it stays
    await two.b.write_files(theirs, [afile("x.md", "text one", "text four")])
    await follow()
    assert two.a.missing == hashes("text four", "shared text")  # "text two" is gone
    assert full_reads == []
