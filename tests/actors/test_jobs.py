from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rifflux.actors.jobs import Job, JobQueue, Target
from rifflux.errors import JobNotFoundError

pytestmark = pytest.mark.anyio
ROOT = Path("/r")


def watcher_job(upserts: set[str], deletes: set[str] | None = None) -> Job:
    return Job([Target(ROOT, paths=set(upserts), deletes=set(deletes or ()))], source="watcher")


async def test_watcher_batches_merge_into_a_queued_job_for_the_same_root() -> None:
    q = JobQueue(history=10, max_queued=10)
    first = q.submit(watcher_job({"a.md", "b.md"}))
    merged = q.submit(watcher_job({"c.md"}, {"a.md"}))
    assert merged is first and len(q) == 1
    target = first.targets[0]
    assert target.paths == {"b.md", "c.md"} and target.deletes == {"a.md"}


async def test_a_change_during_a_running_job_is_queued_after_it() -> None:
    q = JobQueue(history=10, max_queued=10)
    q.submit(watcher_job({"a.md"}))
    running = await q.next()
    assert running is not None and running.status == "running"
    later = q.submit(watcher_job({"a.md"}))
    assert later is not running and len(q) == 1
    q.indexed(running)
    assert running.status == "completed"
    nxt = await q.next()
    assert nxt is later


async def test_a_full_scan_absorbs_watcher_batches() -> None:
    q = JobQueue(history=10, max_queued=10)
    full = q.submit(Job([Target(ROOT)], source="watcher"))
    q.submit(watcher_job({"x.md"}))
    assert len(q) == 1 and full.targets[0].paths is None


async def test_job_waits_for_its_vectors() -> None:
    q = JobQueue(history=10, max_queued=10)
    q.submit(Job([Target(ROOT)]))
    job = await q.next()
    assert job is not None
    job.outstanding = {"h1", "h2"}
    q.indexed(job)
    assert job.status == "running" and job.phase == "embedding"
    q.vectors_written({"h1"})
    assert not job.done.is_set()
    q.vectors_written({"h2"})
    assert job.status == "completed" and job.done.is_set() and job.embedded == 2


async def test_history_is_bounded_and_lookups_say_what_to_do() -> None:
    q = JobQueue(history=3, max_queued=100)
    ids = []
    for i in range(6):
        q.submit(Job([Target(Path(f"/r{i}"))]))
        job = await q.next()
        assert job is not None
        q.indexed(job)
        ids.append(job.id)
    assert [j["id"] for j in q.snapshot()] == ids[:2:-1]
    with pytest.raises(JobNotFoundError, match="index_status"):
        q.get(ids[0])


async def test_close_cancels_queued_jobs_and_ends_next() -> None:
    q = JobQueue(history=10, max_queued=10)
    queued = q.submit(Job([Target(ROOT)]))
    q.close()
    assert queued.status == "cancelled" and queued.done.is_set()
    with anyio.fail_after(1):
        assert await q.next() is None
