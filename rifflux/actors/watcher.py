"""The watcher: watchfiles over the watch paths -> ``FilesChanged`` / ``RescanRequested``.

watchfiles hands over what it saw every ``step_ms`` (its own debounce window is
set no longer than that step): coalescing bursts is the debouncer's job, done
once. The watcher restarts after a crash with exponential backoff up to a cap
(counted in its stats), and survives a watched folder being deleted and
recreated: it notices the folder is gone, waits for it to come back, and asks
for a rescan, since events were missed meanwhile. ``stop()`` ends it, and so
closes the first stream of the watch pipeline.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from ..core.ignore import IGNORE_FILES
from ..core.scan import Globs
from ..types import WatcherStatus
from .messages import ChangeKind, FilesChanged, RescanRequested

logger = logging.getLogger(__name__)

WatchFactory = Callable[..., AsyncIterator[set[tuple[Any, str]]]]

_KINDS: dict[int, ChangeKind] = {1: "added", 2: "modified", 3: "deleted"}


def _default_factory() -> WatchFactory:
    from watchfiles import awatch

    factory: WatchFactory = awatch
    return factory


@dataclass(slots=True)
class WatcherStats:
    running: bool = False
    paths: list[str] = field(default_factory=list)
    events_seen: int = 0
    batches: int = 0
    restarts: int = 0
    last_error: str | None = None

    def snapshot(self) -> WatcherStatus:
        return {
            "running": self.running,
            "paths": list(self.paths),
            "events_seen": self.events_seen,
            "batches": self.batches,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "pending_paths": 0,
        }


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


class Watcher:
    def __init__(
        self,
        *,
        roots: list[Path],
        globs: Globs,
        out: MemoryObjectSendStream[FilesChanged | RescanRequested],
        max_backoff: float,
        step_ms: int = 20,
        check_seconds: float = 1.0,
        watch_factory: WatchFactory | None = None,
    ) -> None:
        self._roots = sorted(roots, key=lambda p: len(str(p)), reverse=True)
        self._globs = globs
        self._out = out
        self._max_backoff = max_backoff
        self._step_ms = step_ms
        self._check_ms = int(check_seconds * 1000)
        self._factory = watch_factory or _default_factory()
        self._stop = anyio.Event()
        self.stats = WatcherStats(paths=[str(r) for r in roots])

    def stop(self) -> None:
        """End the watch (the output stream closes once the current batch is sent)."""
        self._stop.set()

    async def _pause(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self._stop.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._out:
            task_status.started()
            backoff = 0.5
            first = True
            while not self._stop.is_set():
                live = [r for r in self._roots if r.is_dir()]
                if not live:
                    self.stats.running = False
                    self.stats.last_error = "no watched folder exists; waiting for one to appear"
                    await self._pause(min(backoff, 1.0))
                    continue
                if not first:
                    for root in live:  # events may have been missed while not watching
                        await self._out.send(RescanRequested(root=root))
                first = False
                try:
                    await self._watch(live)
                    continue  # the iterator ended: stopped on purpose (or watched again)
                except _RootsChanged as exc:
                    self.stats.last_error = str(exc)
                    logger.info("%s; restarting the watcher", exc)
                    backoff = 0.5
                except Exception as exc:  # the boundary: the watcher restarts, never crashes
                    self.stats.last_error = f"{type(exc).__name__}: {exc}"
                    if (name := _undecodable(exc)) is not None:  # (said, not a traceback)
                        self.stats.last_error = (
                            f"cannot watch {name}: its name is not valid UTF-8, which the "
                            "watcher (watchfiles) cannot decode; rename it (convmv -f latin1 "
                            "-t utf8). Meanwhile the folders are scanned again at each of "
                            "the watcher's restarts")
                        logger.warning("%s; restarting in %.1fs", self.stats.last_error,
                                       backoff)
                    else:
                        logger.exception("watcher crashed; restarting in %.1fs", backoff)
                    await self._pause(backoff)
                    backoff = min(backoff * 2, self._max_backoff)
                finally:
                    self.stats.running = False
                self.stats.restarts += 1

    async def _watch(self, live: list[Path]) -> None:
        identities = {r: _identity(r) for r in live}
        missing = [r for r in self._roots if r not in identities]
        stream = self._factory(
            *live,
            watch_filter=None,
            debounce=self._step_ms,  # no window of its own beyond one step
            step=self._step_ms,
            stop_event=self._stop,
            rust_timeout=self._check_ms,
            yield_on_timeout=True,
            recursive=True,
        )
        async with contextlib.aclosing(stream):  # type: ignore[type-var]
            self.stats.running = True
            self.stats.last_error = None
            async for changes in stream:
                if changes:
                    await self._dispatch(changes)
                for root, ident in identities.items():
                    if _identity(root) != ident:
                        raise _RootsChanged(f"watched folder {root} was removed or replaced")
                for root in missing:
                    if root.is_dir():
                        raise _RootsChanged(f"watched folder {root} appeared")

    async def _dispatch(self, changes: set[tuple[Any, str]]) -> None:
        self.stats.events_seen += len(changes)
        per_root: dict[Path, list[tuple[ChangeKind, str]]] = {}
        rescans: set[Path] = set()
        for change, raw in changes:
            kind = _KINDS.get(int(change), "modified")
            path = Path(raw)
            root = next((r for r in self._roots if path == r or r in path.parents), None)
            if root is None or path == root:
                continue
            rel = path.relative_to(root).as_posix()
            if path.name in IGNORE_FILES:  # what is left out changed: look at it all again
                rescans.add(root)
            elif self._globs.wanted(rel):
                per_root.setdefault(root, []).append((kind, rel))
            elif self._is_directory_event(kind, path, rel):
                rescans.add(root)
        for root, items in per_root.items():
            self.stats.batches += 1
            await self._out.send(FilesChanged(root=root, changes=tuple(items)))
        for root in rescans:
            await self._out.send(RescanRequested(root=root))

    def _is_directory_event(self, kind: ChangeKind, path: Path, rel: str) -> bool:
        """A folder moved in or out (its files get no events of their own)."""
        if self._globs.wanted(rel + "/x.md") is False and any(
            self._globs.excluded_dir("/".join(rel.split("/")[: i + 1]))
            for i in range(rel.count("/") + 1)
        ):
            return False
        if kind == "deleted":
            return "." not in path.name
        return os.path.isdir(path)


class _RootsChanged(Exception):
    pass


def _undecodable(exc: BaseException) -> str | None:
    """The path watchfiles could not decode (a name not in UTF-8: its Rust side fails on
    any event about it, such as its own walk opening that folder), when that is what
    ``exc``, or an error in its group, is."""
    seen: list[BaseException] = [exc]
    while seen:
        error = seen.pop()
        text = str(error)
        if "Unable to decode path" in text:
            name = text.split("Unable to decode path", 1)[1].strip()
            return name.removesuffix("to string").strip()
        if isinstance(error, BaseExceptionGroup):
            seen += error.exceptions
    return None
