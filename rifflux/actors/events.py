"""What happens to the index, for whoever watches it: jobs that change state and commits.

``EventHub.publish`` never blocks and never fails: the job queue and the indexer
call it from their own loops, and a slow watcher must not hold the indexer up.
Each subscriber has a bounded buffer of its own; when it is full the oldest
event is dropped, and the subscriber's next event is an ``EventsLost`` saying
how many it missed (the broadcast-channel rule: a lagging reader loses the
oldest, never the newest). Job events carry a whole snapshot, so one that
arrives after a loss says everything its lost predecessors said.

    async with rf.events() as events:
        async for event in events:
            ...   # JobChanged | IndexUpdated | EventsLost; ends when Rifflux closes
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from ..store.written import Written
from ..types import JobInfo

__all__ = ["Event", "EventHub", "EventsLost", "IndexUpdated", "JobChanged", "Subscription"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobChanged:
    """A job was queued, started, made progress, or finished: its snapshot now."""

    job: JobInfo
    at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexUpdated:
    """A commit (this process's or another's): what it changed, and how many texts
    still lack a vector afterwards (None until the model is known)."""

    files_written: int
    files_removed: int
    chunks_removed: int
    vectors_added: int
    texts_without_vectors: int
    pending_embeddings: int | None
    at: float = field(default_factory=time.time)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventsLost:
    """The subscriber fell behind and ``count`` older events were dropped."""

    count: int
    at: float = field(default_factory=time.time)


Event = JobChanged | IndexUpdated | EventsLost

#: Events a subscriber may hold before the oldest are dropped.
DEFAULT_BUFFER = 256


class Subscription:
    """One subscriber's bounded buffer; iterate it, or ``await receive()``. It ends
    (``anyio.EndOfStream``; the loop stops) when the hub closes."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("a subscription buffers at least one event")
        self._buffer: deque[Event] = deque(maxlen=size)
        self._lost = 0
        self._wake = anyio.Event()
        self._closed = False

    def _put(self, event: Event) -> None:
        if len(self._buffer) == self._buffer.maxlen:
            self._lost += 1  # (deque drops the oldest)
        self._buffer.append(event)
        self._wake.set()

    def _close(self) -> None:
        self._closed = True
        self._wake.set()

    def receive_nowait(self) -> Event | None:
        if self._lost:
            lost, self._lost = self._lost, 0
            return EventsLost(count=lost)
        return self._buffer.popleft() if self._buffer else None

    async def receive(self) -> Event:
        while True:
            event = self.receive_nowait()
            if event is not None:
                return event
            if self._closed:
                raise anyio.EndOfStream
            await self._wake.wait()
            self._wake = anyio.Event()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _Job(Protocol):
    def snapshot(self) -> JobInfo: ...


class EventHub:
    """Fans each event out to every subscriber's buffer (all in the event loop's thread)."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self._closed = False

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    def publish(self, event: Event) -> None:
        for subscriber in self._subscribers:
            subscriber._put(event)

    def job_changed(self, job: _Job) -> None:
        if self._subscribers:  # (no snapshot made for nobody)
            self.publish(JobChanged(job=job.snapshot()))

    def committed(self, written: Written, pending: int | None) -> None:
        if self._subscribers:
            self.publish(IndexUpdated(
                files_written=len(written.files), files_removed=len(written.files_removed),
                chunks_removed=len(written.removed), vectors_added=len(written.added_ids),
                texts_without_vectors=written.lacking, pending_embeddings=pending))

    @asynccontextmanager
    async def subscribe(self, size: int = DEFAULT_BUFFER) -> AsyncIterator[Subscription]:
        subscription = Subscription(size)
        if self._closed:
            subscription._close()
        self._subscribers.add(subscription)
        try:
            yield subscription
        finally:
            self._subscribers.discard(subscription)

    def close(self) -> None:
        """Every subscription ends once it has given out what it holds."""
        self._closed = True
        for subscriber in self._subscribers:
            subscriber._close()
