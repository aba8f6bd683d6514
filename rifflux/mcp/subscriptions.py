"""Clients told when a note they subscribed to changes: ``resources/subscribe`` and
``resources/unsubscribe``, and ``notifications/resources/updated`` sent from the index's
own events.

``NoteWatch`` follows ``Rifflux.events()``: after a commit that wrote or removed files
(or after events were lost), it looks at each subscribed note on disk (its size and
modification time, the file a ``resources/read`` returns) and tells every connection
subscribed to a note that changed, or is gone. Events that arrive while it looks are
taken together: one look per burst of commits, whatever their number. It runs in the
server's lifespan (one for every HTTP session of ``rifflux serve``); a connection that
has gone is forgotten (weakly held).
"""

from __future__ import annotations

import logging
import os
import weakref
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskStatus

from ..api import EventsLost, IndexUpdated, Rifflux
from ..errors import RiffluxError
from .resources import parse_uri, root_names

__all__ = ["NoteWatch"]

logger = logging.getLogger(__name__)

#: The most notes one server watches for its clients (each is a stat per burst).
MAX_SUBSCRIPTIONS = 1_000

_Seen = tuple[int, int] | None  # (mtime_ns, size), or None: not there


class NoteWatch:
    """The subscriptions, and the task that tells subscribers of changes."""

    def __init__(self, rf: Rifflux) -> None:
        self._rf = rf
        #: URI -> the file it is on disk, as it was last seen, and who wants to know.
        self._files: dict[str, str] = {}
        self._seen: dict[str, _Seen] = {}
        self._subscribers: dict[str, weakref.WeakSet[Any]] = {}
        self._stack = AsyncExitStack()
        self.looks = 0  # (how many looks were taken: for status and tests)

    async def __aenter__(self) -> NoteWatch:
        tg = await self._stack.enter_async_context(anyio.create_task_group())
        self._stack.callback(tg.cancel_scope.cancel)
        await tg.start(self._follow, name="rifflux.mcp.note-watch")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        return await self._stack.__aexit__(exc_type, exc, tb)

    async def subscribe(self, connection: Any, uri: str) -> None:
        """``connection`` is told when the note ``uri`` names changes (an error, saying
        what to give, for a URI that names no note)."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        ref = parse_uri(uri)
        names = root_names(await self._rf.roots())
        if ref.folder not in names:
            raise MCPError(code=INVALID_PARAMS, message=(
                f"no indexed folder is named {ref.folder!r}: subscribe to a URI that "
                "resources/list gives"))
        if uri not in self._subscribers and len(self._subscribers) >= MAX_SUBSCRIPTIONS:
            raise MCPError(code=INVALID_PARAMS, message=(
                f"this server already watches {MAX_SUBSCRIPTIONS:,} notes for its clients: "
                "unsubscribe from some first"))
        path = os.path.join(names[ref.folder], ref.path)
        if uri not in self._files:
            self._files[uri] = path
            self._seen[uri] = await anyio.to_thread.run_sync(_look, path)
        self._subscribers.setdefault(uri, weakref.WeakSet()).add(connection)

    def unsubscribe(self, connection: Any, uri: str) -> None:
        subscribers = self._subscribers.get(uri)
        if subscribers is not None:
            subscribers.discard(connection)
            if not subscribers:
                self._forget(uri)

    def _forget(self, uri: str) -> None:
        self._files.pop(uri, None)
        self._seen.pop(uri, None)
        self._subscribers.pop(uri, None)

    async def _follow(self, *, task_status: TaskStatus[None]) -> None:
        try:
            async with self._rf.events() as events:
                task_status.started()
                async for event in events:
                    if not _matters(event):
                        continue
                    while events.receive_nowait() is not None:  # (the rest of the burst)
                        pass
                    await self._look_and_tell()
        except RiffluxError as exc:  # (the index closed under it: nothing more to watch)
            logger.debug("no more note changes to watch: %s", exc)

    async def _look_and_tell(self) -> None:
        self.looks += 1
        for uri, path in list(self._files.items()):
            now = await anyio.to_thread.run_sync(_look, path)
            if now == self._seen.get(uri):
                continue
            self._seen[uri] = now
            subscribers = list(self._subscribers.get(uri, ()))
            if not subscribers:
                self._forget(uri)
                continue
            for connection in subscribers:
                try:  # (a connection that has closed drops it: the SDK's rule)
                    await connection.send_resource_updated(uri)
                except Exception:  # one client's failure must not stop the others' news
                    logger.exception("could not tell a client that %s changed", uri)
            logger.debug("%s changed: told %d subscriber(s)", uri, len(subscribers))


def _matters(event: object) -> bool:
    if isinstance(event, EventsLost):
        return True
    return isinstance(event, IndexUpdated) and bool(event.files_written
                                                    or event.files_removed)


def _look(path: str) -> _Seen:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
