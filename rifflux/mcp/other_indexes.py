"""The other index files a search names by ``db_path``, open read-only for the server.

Opening an index costs three connections, a model load and its catalog: an index
is opened on its first search and kept for the next ones (they follow its
writers' commits, as every open index does; a file made anew at the same path is
opened anew), and all are closed with the server.
At most ``keep`` stay open; the one searched least recently is closed to make room,
once the searches using it are done. Each is opened and closed by a task of its
own, in the server's task group: a ``Rifflux`` is left by the task that entered it.
"""

from __future__ import annotations

import errno
import logging
import stat
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..api import Rifflux
from ..config import Settings
from ..errors import ClosedError
from ..location import IndexLocation

__all__ = ["FileId", "OtherIndexes", "file_id"]

logger = logging.getLogger(__name__)


#: Which file a path names: (st_dev, st_ino).
FileId = tuple[int, int]


def file_id(path: Path) -> FileId | None:
    """Which regular file ``path`` names (None: none, as ``Path.is_file`` says); it reads
    the disk: call it in a worker thread."""
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            raise
        return None
    except ValueError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


@dataclass(eq=False, slots=True)
class _Held:
    rf: Rifflux
    file: FileId
    release: anyio.Event = field(default_factory=anyio.Event)  # set: close it now
    users: int = 0  # searches using it now
    evicted: bool = False  # closed as soon as its users are done


class OtherIndexes:
    """``async with OtherIndexes(settings) as others:``, then for each search
    ``async with others.use(path, file_id(path)) as rf:`` (``file_id`` in a thread).

    ``open_index`` makes the (read-only) instance for a path's settings: ``Rifflux``
    by default, anything that opens like it in tests."""

    def __init__(self, settings: Settings, *, keep: int = 4,
                 open_index: Callable[[Settings], Rifflux] | None = None) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self._settings = settings
        self._keep = keep
        self._open_index = open_index or (lambda s: Rifflux(settings=s))
        self._held: OrderedDict[IndexLocation, _Held] = OrderedDict()  # least recently used first
        self._live: set[_Held] = set()  # open, evicted ones included
        self._opening = anyio.Lock()
        self._tg: TaskGroup | None = None
        self._closing = False
        self._exit: AsyncExitStack | None = None

    async def __aenter__(self) -> OtherIndexes:
        async with AsyncExitStack() as stack:
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self._release_all)  # (first on the way out: then the tasks end)
            self._exit = stack.pop_all()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        stack, self._exit = self._exit, None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    @asynccontextmanager
    async def use(self, db_path: IndexLocation, file: FileId) -> AsyncIterator[Rifflux]:
        """The instance open read-only on ``db_path`` (a resolved path, naming ``file``),
        opened if need be; it stays open while the caller uses it."""
        held = await self._acquire(db_path, file)
        try:
            yield held.rf
        finally:
            held.users -= 1
            if held.evicted and not held.users:
                held.release.set()

    async def _acquire(self, db_path: IndexLocation, file: FileId) -> _Held:
        if self._tg is None:
            raise RuntimeError("OtherIndexes is not open: use it as `async with`")
        if self._closing:
            raise ClosedError("the server is shutting down: search again after it restarts")
        held = self._current(db_path, file)
        if held is None:
            async with self._opening:  # (one opening at a time: never two for one path)
                held = self._current(db_path, file)
                if held is None:
                    held = await self._tg.start(self._hold, db_path, file,
                                                name=f"rifflux.mcp.other-index {db_path}")
                    self._held[db_path] = held
                held.users += 1
        else:
            held.users += 1
        self._held.move_to_end(db_path)
        while len(self._held) > self._keep:
            self._evict(self._held.popitem(last=False)[1])
        return held

    def _current(self, db_path: IndexLocation, file: FileId) -> _Held | None:
        """The instance open on ``db_path``, unless the path now names another file."""
        held = self._held.get(db_path)
        if held is not None and held.file != file:
            self._evict(self._held.pop(db_path))
            return None
        return held

    @staticmethod
    def _evict(held: _Held) -> None:
        held.evicted = True
        if not held.users:
            held.release.set()

    async def _hold(self, db_path: IndexLocation, file: FileId, *,
                    task_status: TaskStatus[_Held]) -> None:
        # read-only: searching another index must never change it (nor drop its vectors
        # when they were made by another model)
        settings = self._settings.with_overrides(db_path=db_path, watch_paths=(),
                                                 read_only=True)
        held: _Held | None = None
        try:
            async with self._open_index(settings) as rf:
                held = _Held(rf, file)
                self._live.add(held)
                if self._closing:  # (opened while the server began to close)
                    held.release.set()
                task_status.started(held)
                await held.release.wait()
        except Exception:
            if held is None:
                raise  # it did not open: the search that asked says why
            # the boundary: one broken index must not close the others
            logger.exception("the index %s, open for searches by db_path, failed", db_path)
        finally:
            if held is not None:
                self._live.discard(held)
                if self._held.get(db_path) is held:
                    del self._held[db_path]

    def _release_all(self) -> None:
        self._closing = True
        self._held.clear()
        for held in self._live:
            held.release.set()
