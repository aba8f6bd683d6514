"""Index jobs and the queue that owns their state.

Lifecycle: queued -> running -> completed | failed (| cancelled at shutdown), with
retry_wait between attempts after a transient SQLite busy/locked error. Every change of
a job's state goes through a ``JobQueue`` command; the indexer only fills in the job's
``progress`` while it runs it.

Completion is one rule (``settle``): a job whose files are written is complete once none
of the texts it waits for (those its scope lacked vectors for when its files were
written) still lacks a vector of the active model. The store keeps the set of texts
that lack vectors exact, so a text an edit replaced, or that another job embedded, stops
holding the job up. Its cost follows what each commit changed: the texts that stopped
lacking a vector are looked up in an index of which jobs wait for them.

Coalescing of file events happens once, in the debouncer: jobs are never merged here.
Urgent jobs (a note an agent wrote) run before queued ones, and cut in between a running
job's transactions (``cut_in``): a note never waits for a whole reindex. ``Job`` is
private to the actors: callers outside them hold a ``JobHandle``.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from ..core.plan import Scope
from ..errors import JobNotFoundError, RiffluxError
from ..types import FileWarning, JobInfo, JobSource, JobStatus, Problem, ReindexResult
from .events import EventHub


@dataclass(frozen=True, slots=True)
class Target:
    """One root to bring up to date: all of it (``paths is None``, optionally only
    below ``prefix``) or just the named relative paths."""

    root: Path
    paths: frozenset[str] | None = None
    deletes: frozenset[str] = frozenset()
    prefix: str = ""
    requested: str = ""  # the path as the caller gave it, for reporting
    missing: str | None = None  # why this location cannot be indexed
    forget: bool = False  # remove it (all of the root, or what is below prefix)
    limited: bool = False  # a new folder nobody named: refused over max_root_files files


@dataclass(slots=True)
class Progress:
    """What the running attempt has done so far; written by the indexer only."""

    planned: int = 0  # files found new or changed
    indexed: set[tuple[str, str]] = field(default_factory=set)  # (root, rel_path)
    skipped: set[tuple[str, str]] = field(default_factory=set)
    removed: int = 0
    removed_paths: list[str] = field(default_factory=list)  # (the first ones, for reports)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[FileWarning] = field(default_factory=list)  # indexed anyway, or skipped
    scopes: list[Scope] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # files the globs left out, by why

    def result(self, targets: list[Target]) -> ReindexResult:
        result: ReindexResult = {
            "indexed_files": len(self.indexed), "skipped_files": len(self.skipped - self.indexed),
            "removed_files": self.removed, "errors": list(self.problems),
            "warnings": list(self.warnings)}
        if self.left_out:
            result["left_out"] = [{"files": n, "reason": why} for why, n in
                                  sorted(self.left_out.items(), key=lambda kv: -kv[1])]
        if len(targets) > 1:  # (a location that could not be indexed is in errors)
            result["indexed_paths"] = [t.requested or str(t.root) for t in targets
                                       if not t.missing]
        if self.indexed or self.removed_paths:
            result["changed"] = {"indexed": sorted(rel for _, rel in self.indexed)[:_NAMED],
                                 "removed": self.removed_paths[:_NAMED]}
        return result


#: How many changed files a result names (it counts them all).
_NAMED = 50

_ids = itertools.count(1)


@dataclass(eq=False, slots=True)
class Job:
    targets: list[Target]
    force: bool = False
    source: JobSource = "api"
    count_left_out: bool = False  # report the files the globs leave out (walks excluded dirs)
    id: str = field(default_factory=lambda: f"job-{next(_ids)}")
    status: JobStatus = "queued"
    phase: str = "queued"
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    error: str | None = None
    progress: Progress = field(default_factory=Progress)
    #: Texts (content hashes) still without a vector; None until the model is known.
    waiting: set[str] | None = None
    embedded: int = 0
    result: ReindexResult | None = None
    #: Set when the job leaves the queue: taken by the indexer, or cancelled.
    dequeued: anyio.Event = field(default_factory=anyio.Event)
    #: Set once its files are committed and it knows what it waits for (or it ended).
    written: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)

    def snapshot(self) -> JobInfo:
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
            "planned_files": self.progress.planned,
            "indexed_files": len(self.progress.indexed),
            "pending_embeddings": len(self.waiting or ()),
            "error": self.error,
            "result": self.result,
        }


def _each(jobs: Job | list[Job] | None) -> list[Job] | tuple[Job, ...]:
    """The jobs waiting for one text, as ``JobQueue._waiters`` holds them."""
    return () if jobs is None else jobs if isinstance(jobs, list) else (jobs,)


@dataclass(frozen=True, slots=True)
class Finished:
    """A job at its end: its state, and what it did when it completed (with ``job_id``
    and ``embedded_chunks``; None when it failed or was cancelled)."""

    info: JobInfo
    result: ReindexResult | None


class JobHandle:
    """What a caller holds of one job: its id, its state now and its end. The job itself
    stays inside the actors, where only ``JobQueue`` changes it."""

    __slots__ = ("_job",)

    def __init__(self, job: Job) -> None:
        self._job = job

    @property
    def id(self) -> str:
        return self._job.id

    @property
    def done(self) -> bool:
        """Whether the job has ended (completed, failed or cancelled)."""
        return self._job.done.is_set()

    def info(self) -> JobInfo:
        """The job's state now (``result`` once its files are written)."""
        return self._job.snapshot()

    async def written(self) -> None:
        """Until its files are committed and it knows what it waits for (or it ended)."""
        await self._job.written.wait()

    async def finished(self) -> Finished:
        """Once the job has ended: its state, and its result if it completed."""
        job = self._job
        await job.done.wait()
        if job.status != "completed":
            return Finished(job.snapshot(), None)
        result: ReindexResult = {**(job.result or job.progress.result(job.targets))}
        result["job_id"] = job.id
        result["embedded_chunks"] = job.embedded
        return Finished(job.snapshot(), result)


class JobQueue:
    """Queued jobs, the running one, those whose vectors are being made, and a bounded
    history. ``on_submit`` is called after each submission (it nudges the indexer)."""

    def __init__(
        self, *, history: int, max_queued: int, on_submit: Callable[[], None] = lambda: None,
        events: EventHub | None = None,
    ) -> None:
        self._events = events or EventHub()  # (told of every change of a job's state)
        self._queued: deque[Job] = deque()
        self._urgent: deque[Job] = deque()  # run first, and cut in between transactions
        self._cutting_in: Job | None = None
        self._max_queued = max_queued
        self._on_submit = on_submit
        self._running: Job | None = None
        self._embedding: list[Job] = []  # written, waiting for vectors
        #: Each text the written jobs wait for, with the job that waits for it (a list when
        #: several do: one job alone is the rule, and a million lists weigh 90 MB).
        self._waiters: dict[str, Job | list[Job]] = {}
        self._fresh: list[Job] = []  # waiting since the last settle: not checked yet
        self._history: deque[Job] = deque(maxlen=history)
        self._closed = False
        self._idle = anyio.Event()  # no job running
        self._idle.set()

    def __len__(self) -> int:
        return len(self._queued) + len(self._urgent)

    # ------------------------------------------------------------ commands

    def submit(self, job: Job, *, urgent: bool = False) -> Job:
        if self._closed:
            raise RiffluxError("Rifflux is shutting down; no new index jobs are accepted")
        if len(self) >= self._max_queued:
            raise RiffluxError(
                f"{len(self)} index jobs are already queued; wait for some to finish"
            )
        (self._urgent if urgent else self._queued).append(job)
        self._events.job_changed(job)
        self._on_submit()
        return job

    def start_next(self) -> Job | None:
        """Take the next queued job and mark it running (None when none is queued)."""
        if self._closed or not len(self) or self._running is not None:
            return None
        job = _started((self._urgent or self._queued).popleft())
        self._running = job
        self._idle = anyio.Event()
        self._events.job_changed(job)
        return job

    def cut_in(self) -> Job | None:
        """An urgent job to run between two transactions of the running one, or None."""
        if self._closed or not self._urgent or self._running is None \
                or self._cutting_in is not None:
            return None
        self._cutting_in = _started(self._urgent.popleft())
        self._events.job_changed(self._cutting_in)
        return self._cutting_in

    def retry_later(self, job: Job, error: str) -> None:
        """The running job hit a transient error; it runs again after a pause."""
        job.status, job.phase, job.error = "retry_wait", "retry_wait", error
        self._events.job_changed(job)

    def retry_now(self, job: Job) -> None:
        job.status, job.phase, job.error = "running", "indexing", None
        job.attempts += 1
        job.progress = Progress()  # a retry reports afresh

    def fail(self, job: Job, error: str) -> None:
        self._ran(job)
        self._finish(job, "failed", error)

    def abandon(self, job: Job) -> None:
        """Shutdown cancelled the running job (its unfinished files keep their old index)."""
        self._ran(job)
        self._finish(job, "cancelled", "Rifflux shut down while this job ran; files it had "
                                       "not written keep their previous index")

    def mark_written(self, job: Job) -> None:
        """The running job's files are written; it completes once its vectors exist (a
        caller waiting for the commit may go: ``wait_for`` said what it waits for)."""
        self._ran(job)
        job.result = job.progress.result(job.targets)
        job.phase = "embedding"
        self._embedding.append(job)
        job.written.set()
        self._events.job_changed(job)

    def awaiting_texts(self) -> list[Job]:
        """Written jobs that do not know yet which texts they wait for (model not known)."""
        return [job for job in self._embedding if job.waiting is None]

    def wait_for(self, job: Job, texts: Set[str]) -> None:
        """The written ``job`` waits for ``texts`` (those its scope lacks vectors for)."""
        job.waiting = set(texts)
        shared = job.waiting & self._waiters.keys()
        self._waiters.update(dict.fromkeys(job.waiting - shared, job))
        for text in shared:
            jobs = self._waiters[text]
            self._waiters[text] = [*jobs, job] if isinstance(jobs, list) else [jobs, job]
        self._fresh.append(job)

    def settle(self, missing: Set[str] | None, left: Set[str] = frozenset(),
               stored: Set[str] = frozenset()) -> None:
        """The completion rule, checked after every commit: a written job is complete
        once none of its texts is ``missing`` (lacks a vector). ``left`` are the texts
        that stopped lacking one since the last check, ``stored`` those whose vectors
        were just written (counted as embedded by the jobs that wait for them). The
        cost follows them, and the jobs that began waiting since (checked once, whole),
        never the size of the jobs still waiting."""
        if self._running is not None:  # (called after every commit: the job's progress)
            self._events.job_changed(self._running)
        if missing is None:
            return  # the model is not known yet: nobody knows what lacks a vector
        for text in stored:
            for job in _each(self._waiters.get(text)):
                job.embedded += 1
        ended: list[Job] = []
        moved: set[Job] = set()  # (jobs whose pending count changed: told once each)
        for text in left:
            for job in _each(self._waiters.pop(text, None)):
                assert job.waiting is not None
                job.waiting.discard(text)
                moved.add(job)
                if not job.waiting:
                    ended.append(job)
        fresh, self._fresh = self._fresh, []
        for job in fresh:
            if job.waiting is None or job.done.is_set():
                continue  # (cancelled meanwhile)
            for text in job.waiting - missing:  # left before this check began
                job.waiting.discard(text)
                self._unwait(text, job)
            if not job.waiting:
                ended.append(job)
        for job in moved.difference(ended):
            self._events.job_changed(job)
        if ended:
            finished = set(ended)
            for job in self._embedding:
                if job in finished:
                    self._finish(job, "completed")
            self._embedding = [job for job in self._embedding if job not in finished]

    def _unwait(self, text: str, job: Job) -> None:
        jobs = self._waiters.get(text)
        if jobs is job or jobs == [job]:
            del self._waiters[text]
        elif isinstance(jobs, list) and job in jobs:
            jobs.remove(job)

    def close(self) -> None:
        """Cancel queued jobs and those waiting for vectors; accept no new ones."""
        self._closed = True
        for queue in (self._urgent, self._queued):
            while queue:
                self._finish(queue.popleft(), "cancelled",
                             "Rifflux shut down before this job ran")
        for job in self._embedding:
            self._finish(job, "cancelled", "Rifflux shut down before its embeddings were written")
        self._embedding = []
        self._waiters, self._fresh = {}, []

    def _ran(self, job: Job) -> None:
        if self._cutting_in is job:
            self._cutting_in = None
        if self._running is job:
            self._running = None
            self._idle.set()

    # ------------------------------------------------------------ queries

    async def wait_idle(self) -> None:
        """Until no job is running (after ``close``, none starts again)."""
        await self._idle.wait()

    @property
    def running(self) -> Job | None:
        return self._running

    def get(self, job_id: str) -> Job:
        for job in self._all():
            if job.id == job_id:
                return job
        raise JobNotFoundError(f"no job {job_id!r}; index_status lists the recent jobs")

    def snapshot(self) -> list[JobInfo]:
        return [j.snapshot() for j in self._all()]

    def _all(self) -> list[Job]:
        running = [j for j in (self._cutting_in, self._running) if j is not None]
        return (running + list(self._urgent) + list(self._queued) + self._embedding
                + list(reversed(self._history)))

    def _finish(self, job: Job, status: JobStatus, error: str | None = None) -> None:
        job.status, job.phase, job.error = status, status, error
        job.finished_at = time.time()
        if job.result is None and status == "completed":
            job.result = job.progress.result(job.targets)
        self._history.append(job)
        job.dequeued.set()
        job.written.set()
        job.done.set()
        self._events.job_changed(job)


def _started(job: Job) -> Job:
    job.status, job.phase, job.started_at = "running", "indexing", time.time()
    job.attempts = 1
    job.dequeued.set()
    return job
