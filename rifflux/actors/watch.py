"""The watch pipeline: watcher -> debouncer -> job feeder -> the job queue.

Each stage owns the receiving end of its inbox and closes its output when the
inbox ends, so ``stop()`` (which stops the watcher) drains the whole pipeline:
the debouncer flushes what it holds, the feeder submits it, and ``run``
returns. The feeder takes a batch only when the previous batch's job has left
the queue, so while the indexer is busy the events keep coalescing in the
debouncer (the one place where that happens).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..config import Settings
from ..core.scan import Globs
from ..errors import RiffluxError
from ..types import WatcherStatus
from .debouncer import Debouncer
from .jobs import Job, JobQueue, Target
from .messages import DebouncedMessage, IndexBatch, WatchMessage
from .watcher import Watcher, WatchFactory

logger = logging.getLogger(__name__)


async def feed_jobs(
    inbox: MemoryObjectReceiveStream[DebouncedMessage], jobs: JobQueue,
    *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Debounced batches -> watcher jobs, one queued at a time."""
    async with inbox:
        task_status.started()
        async for msg in inbox:
            if isinstance(msg, IndexBatch):
                target = Target(msg.root, paths=msg.upserts, deletes=msg.deletes)
            else:
                target = Target(msg.root)
            try:
                job = jobs.submit(Job([target], source="watcher"))
            except RiffluxError as exc:  # shutting down, or the queue is full
                logger.info("watcher batch for %s not queued: %s", msg.root, exc)
                continue
            await job.dequeued.wait()


class WatchPipeline:
    def __init__(
        self, *, roots: list[Path], settings: Settings, jobs: JobQueue,
        watch_factory: WatchFactory | None = None,
    ) -> None:
        self._roots = roots
        self._jobs = jobs
        self._watch_send, self._watch_recv = anyio.create_memory_object_stream[WatchMessage](64)
        self._batch_send, self._batch_recv = anyio.create_memory_object_stream[
            DebouncedMessage](0)
        self._watcher = Watcher(
            roots=roots, globs=Globs(settings.include, settings.exclude), out=self._watch_send,
            max_backoff=settings.watcher_max_backoff, watch_factory=watch_factory,
        )
        self._debouncer = Debouncer(inbox=self._watch_recv, out=self._batch_send,
                                    quiet=settings.debounce_seconds)
        self.stopped = anyio.Event()

    def streams(self) -> dict[str, MemoryObjectSendStream[Any]]:
        return {"watch_events": self._watch_send, "debounced": self._batch_send}

    def snapshot(self) -> WatcherStatus:
        status = self._watcher.stats.snapshot()
        status["pending_paths"] = self._debouncer.pending_paths
        return status

    def stop(self) -> None:
        self._watcher.stop()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(feed_jobs, self._batch_recv, self._jobs, name="rifflux.jobs.feed")
                await tg.start(self._debouncer.run, name="rifflux.debouncer")
                await tg.start(self._watcher.run, name="rifflux.watcher")
                # What is already in the folders is indexed at start, in the background
                # (whatever their size: watched folders are named on purpose).
                self._jobs.submit(Job([Target(r, requested=str(r)) for r in self._roots],
                                      source="startup"))
                task_status.started()
        finally:
            self.stopped.set()
