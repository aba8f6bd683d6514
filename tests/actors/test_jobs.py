from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rifflux.actors.jobs import Job, JobQueue, Target
from rifflux.errors import JobNotFoundError, RiffluxError

pytestmark = pytest.mark.anyio
ROOT = Path("/r")


def queue(**kw: int) -> JobQueue:
    return JobQueue(history=kw.get("history", 10), max_queued=kw.get("max_queued", 10))


def written(q: JobQueue, texts: set[str] | None = None) -> Job:
    """Submit, run and write a job; it then waits for ``texts`` (unknown when None)."""
    job = q.submit(Job([Target(ROOT)]))
    assert q.start_next() is job
    q.mark_written(job)
    if texts is not None:
        q.wait_for(job, texts)
    return job


async def test_jobs_run_one_at_a_time_in_order_and_are_never_merged() -> None:
    nudges: list[int] = []
    q = JobQueue(history=10, max_queued=10, on_submit=lambda: nudges.append(1))
    first = q.submit(Job([Target(ROOT, paths=frozenset({"a.md"}))], source="watcher"))
    second = q.submit(Job([Target(ROOT, paths=frozenset({"b.md"}))], source="watcher"))
    assert len(q) == 2 and len(nudges) == 2
    assert q.start_next() is first and first.status == "running" and first.dequeued.is_set()
    assert q.start_next() is None  # one job runs at a time
    assert not second.dequeued.is_set()
    q.mark_written(first)
    assert q.start_next() is second


async def test_a_job_completes_once_none_of_its_texts_is_missing() -> None:
    q = queue()
    job = written(q, {"h1", "h2"})
    assert job.phase == "embedding" and job.snapshot()["pending_embeddings"] == 2
    q.settle(missing={"h1", "h2", "other"}, stored=frozenset())
    assert not job.done.is_set()
    q.settle(missing={"h2", "other"}, left={"h1"}, stored=frozenset({"h1"}))
    assert not job.done.is_set() and job.embedded == 1
    q.settle(missing={"other"}, left={"h2"}, stored=frozenset({"h2"}))
    assert job.status == "completed" and job.done.is_set() and job.embedded == 2


async def test_jobs_waiting_for_one_text_complete_together_when_its_vector_is_stored() -> None:
    q = queue()
    first = written(q, {"shared", "h1"})
    second = written(q, {"shared"})
    q.settle(missing={"shared", "h1"})
    q.settle(missing={"h1"}, left={"shared"}, stored=frozenset({"shared"}))
    assert second.status == "completed" and second.embedded == 1
    assert not first.done.is_set() and first.snapshot()["pending_embeddings"] == 1
    q.settle(missing=set(), left={"h1"})  # replaced by an edit: never embedded
    assert first.status == "completed" and first.embedded == 1


async def test_a_text_replaced_before_it_was_embedded_does_not_hold_the_job() -> None:
    q = queue()
    job = written(q, {"old"})
    q.settle(missing={"new"})  # an edit replaced "old" by "new": no chunk has "old"
    assert job.status == "completed" and job.embedded == 0


async def test_a_job_waits_while_the_model_is_unknown() -> None:
    q = queue()
    job = written(q)  # its texts are unknown until the model is adopted
    q.settle(missing=None)
    q.settle(missing=set())
    assert not job.done.is_set() and q.awaiting_texts() == [job]
    q.wait_for(job, set())
    q.settle(missing=set())
    assert job.status == "completed"


async def test_failed_and_retried_jobs_report_their_state() -> None:
    q = queue()
    job = q.submit(Job([Target(ROOT)]))
    assert q.start_next() is job
    q.retry_later(job, "database is locked")
    assert (job.status, job.error) == ("retry_wait", "database is locked")
    q.retry_now(job)
    assert (job.status, job.attempts, job.error) == ("running", 2, None)
    q.fail(job, "gave up")
    assert job.status == "failed" and job.done.is_set() and q.running is None


async def test_history_is_bounded_and_lookups_say_what_to_do() -> None:
    q = queue(history=3, max_queued=100)
    ids = []
    for i in range(6):
        job = q.submit(Job([Target(Path(f"/r{i}"))]))
        assert q.start_next() is job
        q.mark_written(job)
        q.wait_for(job, set())
        q.settle(missing=set())
        ids.append(job.id)
    assert [j["id"] for j in q.snapshot()] == ids[:2:-1]
    with pytest.raises(JobNotFoundError, match="index_status"):
        q.get(ids[0])


async def test_close_cancels_queued_and_embedding_jobs_and_refuses_new_ones() -> None:
    q = queue()
    embedding = written(q, {"h"})
    queued = q.submit(Job([Target(ROOT)]))
    q.close()
    assert queued.status == "cancelled" and queued.done.is_set() and queued.dequeued.is_set()
    assert embedding.status == "cancelled"
    assert q.start_next() is None
    with pytest.raises(RiffluxError, match="shutting down"):
        q.submit(Job([Target(ROOT)]))


async def test_wait_idle_returns_when_the_running_job_has_run() -> None:
    q = queue()
    job = q.submit(Job([Target(ROOT)]))
    assert q.start_next() is job
    returned = anyio.Event()

    async def wait() -> None:
        await q.wait_idle()
        returned.set()

    with anyio.fail_after(5):  # a wait_idle that never returns fails, not hangs
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            assert not returned.is_set()  # the job still runs: not idle
            q.abandon(job)
    assert returned.is_set() and job.status == "cancelled"
