"""Index jobs: what the indexer works through, one at a time.

Lifecycle: queued -> running -> completed | failed (| cancelled at shutdown),
with retry_wait between attempts after a transient SQLite busy/locked error.
A job is completed only when every chunk it wrote has its vector.

Watcher batches for a location that already has a queued job merge into it; a
change that arrives while a job runs becomes (or joins) a queued job after it,
so nothing is lost. Finished jobs are kept in a bounded history.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from ..errors import JobNotFoundError, RiffluxError

JobStatus = Literal["queued", "running", "retry_wait", "completed", "failed", "cancelled"]
JobSource = Literal["api", "watcher", "startup", "auto"]
#: The statuses a job ends in.
FINISHED: tuple[JobStatus, ...] = ("completed", "failed", "cancelled")


@dataclass(slots=True)
class Target:
    """One root to bring up to date: all of it (``paths is None``, optionally only
    below ``prefix``) or just the named relative paths."""

    root: Path
    paths: set[str] | None = None
    deletes: set[str] = field(default_factory=set)
    prefix: str = ""
    requested: str = ""  # the path as the caller gave it, for reporting
    missing: str | None = None  # why this location could not be indexed

    def merge(self, other: Target) -> None:
        """Fold a later watcher batch in: the last event for a path wins."""
        if self.paths is None:
            return  # a full scan already covers it
        if other.paths is None:
            self.paths, self.deletes, self.prefix = None, set(), other.prefix
            return
        self.paths = (self.paths - other.deletes) | other.paths
        self.deletes = (self.deletes - other.paths) | other.deletes


_ids = itertools.count(1)


@dataclass(eq=False, slots=True)
class Job:
    targets: list[Target]
    force: bool = False
    source: JobSource = "api"
    id: str = field(default_factory=lambda: f"job-{next(_ids)}")
    status: JobStatus = "queued"
    phase: str = "queued"
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    error: str | None = None
    indexed: set[tuple[str, str]] = field(default_factory=set)
    skipped: set[tuple[str, str]] = field(default_factory=set)
    removed: int = 0
    planned: int = 0  # files found new or changed, to be (re)indexed by this attempt
    problems: list[dict[str, str]] = field(default_factory=list)
    outstanding: set[str] = field(default_factory=set)  # content hashes awaiting vectors
    embedded: int = 0
    result: dict[str, Any] | None = None
    done: anyio.Event = field(default_factory=anyio.Event)

    def snapshot(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "phase": self.phase,
            "source": self.source,
            "paths": [t.requested or str(t.root) for t in self.targets],
            "force": self.force,
            "attempts": self.attempts,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "planned_files": self.planned,
            "indexed_files": len(self.indexed),
            "pending_embeddings": len(self.outstanding),
            "error": self.error,
            "result": self.result,
        }

    def finish(self, status: JobStatus, error: str | None = None) -> None:
        self.status, self.phase, self.error = status, status, error
        self.finished_at = time.time()
        self.done.set()


class JobQueue:
    def __init__(self, *, history: int, max_queued: int) -> None:
        self._queued: deque[Job] = deque()
        self._max_queued = max_queued
        self.running: Job | None = None
        self._waiting: list[Job] = []  # indexed, awaiting vectors
        self._history: deque[Job] = deque(maxlen=history)
        self._wakeup = anyio.Event()
        self._closed = False

    def __len__(self) -> int:
        return len(self._queued)

    @property
    def waiting(self) -> list[Job]:
        return self._waiting

    def submit(self, job: Job) -> Job:
        """Queue ``job``, or merge a watcher job into a queued job for the same root."""
        if self._closed:
            raise RiffluxError("Rifflux is shutting down; no new index jobs are accepted")
        if job.source == "watcher" and len(job.targets) == 1:
            target = job.targets[0]
            for queued in self._queued:
                if (
                    len(queued.targets) == 1
                    and queued.targets[0].root == target.root
                    and queued.targets[0].prefix == ""
                ):
                    queued.targets[0].merge(target)
                    return queued
        if len(self._queued) >= self._max_queued:
            raise RiffluxError(
                f"{len(self._queued)} index jobs are already queued; wait for some to finish"
            )
        self._queued.append(job)
        self._wakeup.set()
        return job

    async def next(self) -> Job | None:
        """The next queued job, now running; None once the queue is closed."""
        while not self._queued:
            if self._closed:
                return None
            await self._wakeup.wait()
            self._wakeup = anyio.Event()
        job = self._queued.popleft()
        job.status, job.phase, job.started_at = "running", "indexing", time.time()
        self.running = job
        return job

    def indexed(self, job: Job) -> None:
        """The running job has written its files; it completes when its vectors exist."""
        self.running = None
        if job.done.is_set():
            self._history.append(job)
        elif job.outstanding:
            job.phase = "embedding"
            self._waiting.append(job)
        else:
            job.finish("completed")
            self._history.append(job)

    def open_jobs(self) -> list[Job]:
        """Jobs whose vectors may still be outstanding: the running one and the waiting."""
        return ([self.running] if self.running else []) + self._waiting

    def vectors_written(self, hashes: set[str]) -> None:
        self._settle(hashes, embedded=True)

    def outstanding(self) -> set[str]:
        """Every content hash an open job still waits for."""
        return set().union(*(job.outstanding for job in self.open_jobs()))

    def forget(self, hashes: set[str]) -> None:
        """Texts no chunk has any more (an edit or delete replaced them before they were
        embedded): no vector will ever be made for them, so no job waits for one."""
        if hashes:
            self._settle(hashes, embedded=False)

    def _settle(self, hashes: set[str], *, embedded: bool) -> None:
        for job in self.open_jobs():
            before = len(job.outstanding)
            job.outstanding -= hashes
            if embedded:
                job.embedded += before - len(job.outstanding)
        for job in self._waiting:
            if not job.outstanding:
                job.finish("completed")
                self._history.append(job)
        self._waiting = [job for job in self._waiting if job.outstanding]

    def release_waiting(self, reason: str) -> None:
        """No embedder will ever come: complete the waiting jobs, saying why."""
        for job in self._waiting:
            job.outstanding.clear()
            job.finish("completed", reason)
            self._history.append(job)
        self._waiting = []

    def close(self) -> None:
        """Cancel queued jobs and wake the indexer so it can end."""
        self._closed = True
        while self._queued:
            job = self._queued.popleft()
            job.finish("cancelled", "Rifflux shut down before this job ran")
            self._history.append(job)
        for job in self._waiting:
            job.finish("cancelled", "Rifflux shut down before its embeddings were written")
            self._history.append(job)
        self._waiting = []
        self._wakeup.set()

    def get(self, job_id: str) -> Job:
        for job in self._all():
            if job.id == job_id:
                return job
        raise JobNotFoundError(f"no job {job_id!r}; index_status lists the recent jobs")

    def _all(self) -> list[Job]:
        active = ([self.running] if self.running else []) + list(self._queued) + self._waiting
        return active + list(reversed(self._history))

    def snapshot(self) -> list[dict[str, Any]]:
        return [j.snapshot() for j in self._all()]
