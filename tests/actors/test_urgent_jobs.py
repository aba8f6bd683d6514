"""Urgent jobs (a note an agent wrote, issue 26): they run before queued jobs and cut in
between the transactions of a running one; whoever waits for one is let go once its
files are committed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux.actors.jobs import Job, JobHandle, JobQueue, Target

pytestmark = pytest.mark.anyio
ROOT = Path("/r")


def job(name: str) -> Job:
    return Job([Target(ROOT, paths=frozenset({name}))])


async def test_an_urgent_job_runs_before_queued_ones_and_cuts_in_once_at_a_time() -> None:
    q = JobQueue(history=10, max_queued=10)
    big, later = q.submit(job("big.md")), q.submit(job("later.md"))
    assert q.start_next() is big
    assert q.cut_in() is None  # nothing urgent
    note, other = q.submit(job("n1.md"), urgent=True), q.submit(job("n2.md"), urgent=True)
    assert len(q) == 3
    assert q.cut_in() is note and note.status == "running"
    assert q.cut_in() is None  # one cuts in at a time
    q.mark_written(note)
    assert q.cut_in() is other
    q.mark_written(other)
    q.mark_written(big)
    assert q.start_next() is later and q.cut_in() is None


async def test_an_urgent_job_waits_for_no_queued_job() -> None:
    q = JobQueue(history=10, max_queued=10)
    queued = q.submit(job("a.md"))
    note = q.submit(job("n.md"), urgent=True)
    assert q.start_next() is note and not queued.dequeued.is_set()


async def test_written_lets_the_caller_go_once_marked_written_or_ended() -> None:
    q = JobQueue(history=10, max_queued=10)
    handle = JobHandle(q.submit(job("n.md"), urgent=True))
    running = q.start_next()
    assert running is not None
    assert not running.written.is_set()
    q.wait_for(running, {"h1"})  # (what it waits for, known before it is marked written)
    q.mark_written(running)
    await handle.written()
    assert handle.info()["status"] == "running"  # (written; its vectors are still owed)
    cancelled = JobHandle(q.submit(job("m.md"), urgent=True))
    q.close()
    await cancelled.written()  # ended: nobody waits forever
    assert cancelled.info()["status"] == "cancelled"
