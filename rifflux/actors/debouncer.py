"""The debouncer: the one place where bursts of file events are coalesced.

Events are held until no new event has arrived for ``quiet`` seconds (or the
oldest has waited ``max_delay``, so a steady stream cannot starve the index),
then sent as one ``IndexBatch`` per root. Its output stream has no buffer and
the job feeder takes a batch only once the previous one's job has started,
so while the indexer is busy, new events keep coalescing here. For each path the last event wins:
delete-then-create is an upsert, create-then-delete is a delete, and an
editor's write-temp-then-rename shows up as one change to the target (the
temporary name is filtered out by the include globs before it gets here).
"""

from __future__ import annotations

from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .messages import DebouncedMessage, IndexBatch, RescanRequested, WatchMessage


class Debouncer:
    def __init__(
        self,
        *,
        inbox: MemoryObjectReceiveStream[WatchMessage],
        out: MemoryObjectSendStream[DebouncedMessage],
        quiet: float,
        max_delay: float = 1.0,
        max_paths: int = 5000,
    ) -> None:
        self._inbox = inbox
        self._out = out
        self._quiet = quiet
        self._max_delay = max_delay
        self._max_paths = max_paths
        # root -> rel path -> "upsert" | "delete"; dicts keep first-seen order
        self._pending: dict[Path, dict[str, str]] = {}
        self._rescans: set[Path] = set()
        self._oldest: float | None = None
        self._last = 0.0
        self._wake = anyio.Event()
        self._urgent = False
        self._closing = False
        self.batches_sent = 0

    @property
    def pending_paths(self) -> int:
        """Paths held, waiting for their quiet window (or for the indexer to take them)."""
        return sum(len(p) for p in self._pending.values())

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # Receiving and flushing are two tasks so that no receive is ever cancelled
        # by a timer (an item delivered to a cancelled receive would be lost).
        async with self._inbox, self._out:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._flusher, name="rifflux.debouncer.flush")
                task_status.started()
                async for msg in self._inbox:
                    self._add(msg)
                    if self.pending_paths >= self._max_paths:
                        self._urgent = True
                    self._wake.set()
                self._closing = True  # the flusher sends what is left, then ends
                self._wake.set()

    async def _flusher(self) -> None:
        while True:
            if self._oldest is None:
                if self._closing:
                    return
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            now = anyio.current_time()
            deadline = min(self._last + self._quiet, self._oldest + self._max_delay)
            if self._closing or self._urgent or now >= deadline:
                try:
                    await self._flush()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # nobody takes batches any more: shutting down
                continue
            with anyio.move_on_after(deadline - now):
                await self._wake.wait()
            self._wake = anyio.Event()

    def _add(self, msg: WatchMessage) -> None:
        self._last = anyio.current_time()
        if self._oldest is None:
            self._oldest = self._last
        if isinstance(msg, RescanRequested):
            self._rescans.add(msg.root)
            self._pending.pop(msg.root, None)  # the rescan covers them
            return
        if msg.root in self._rescans:
            return
        paths = self._pending.setdefault(msg.root, {})
        for kind, rel in msg.changes:
            paths.pop(rel, None)  # re-insert: last event wins, and keeps recency order
            paths[rel] = "delete" if kind == "deleted" else "upsert"

    async def _flush(self) -> None:
        pending, rescans = self._pending, self._rescans
        self._pending, self._rescans, self._oldest = {}, set(), None
        self._urgent = False
        for root in sorted(rescans):
            await self._out.send(RescanRequested(root=root))
            self.batches_sent += 1
        for root, paths in pending.items():
            if not paths:
                continue
            await self._out.send(
                IndexBatch(
                    root=root,
                    upserts=frozenset(p for p, k in paths.items() if k == "upsert"),
                    deletes=frozenset(p for p, k in paths.items() if k == "delete"),
                )
            )
            self.batches_sent += 1
