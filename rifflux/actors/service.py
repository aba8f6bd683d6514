"""``Service``: the one narrow handle the facade holds on the running actors.

Searches and reads are messages to the query actor, answered on a reply stream
of their own; jobs go to the job queue; ``snapshot()`` composes the status of
every component from the snapshot each one gives of itself.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..config import Settings
from ..core.filters import NO_FILTERS, Filters
from ..errors import ClosedError, RiffluxError
from ..note_types import RecentNote
from ..query.asked import PLAIN, SearchShape
from ..store.common import Others, Recovery
from ..store.protocols import Capabilities
from ..types import (
    ChunkDetail,
    Counts,
    FileLines,
    FileRecord,
    IndexedFile,
    JobInfo,
    Mode,
    Neighbor,
    NoteLinks,
    QueueStatus,
    RootCount,
    SearchResult,
    TagCount,
    ThisProcess,
    WatcherStatus,
)
from .embedder import EmbedderSnapshot
from .events import EventHub
from .jobs import Job, JobHandle, JobQueue, Target
from .messages import (
    ChunkRequested,
    CountsRequested,
    FileRequested,
    FilesRequested,
    IndexerSnapshot,
    LinesRequested,
    LinksRequested,
    NeighborsRequested,
    ProcessesRequested,
    QueryMessage,
    RecentRequested,
    Reply,
    Request,
    RootCountsRequested,
    RootsRequested,
    SearchRequested,
    TagsRequested,
)
from .model import ModelSnapshot, until_either
from .query import QuerySnapshot

if TYPE_CHECKING:  # (the history's actor and the reranker load with the supervisor:
    # the MCP front's first search imports this module and neither)
    from .history import HistoryActor
    from .rerank import Reranker

T = TypeVar("T")

#: Longest a semantic search's answer waits for the texts without a vector to be counted
#: (the model's adoption reads them as the matrix loads: 0.5 s at a million chunks).
_COUNT_WAIT_SECONDS = 2.0

_CLOSED = ("Rifflux has been closed (or is shutting down): use it inside "
           "`async with Rifflux(...) as rf:`")


class ServiceSnapshot(TypedDict):
    model: ModelSnapshot
    jobs: list[JobInfo]
    queued_jobs: int
    watcher: WatcherStatus
    queues: dict[str, QueueStatus]
    embedder: EmbedderSnapshot
    query: QuerySnapshot
    indexer: IndexerSnapshot


def _no_watcher() -> WatcherStatus:
    return {"running": False, "paths": [], "events_seen": 0, "batches": 0, "restarts": 0,
            "last_error": None, "pending_paths": 0}


class Service:
    def __init__(
        self,
        *,
        settings: Settings,
        capabilities: Capabilities,
        query: MemoryObjectSendStream[QueryMessage],
        jobs: JobQueue,
        streams: dict[str, MemoryObjectSendStream[Any]],
        model: Callable[[], ModelSnapshot],
        watcher: Callable[[], WatcherStatus] | None,
        embedder: Callable[[], EmbedderSnapshot],
        query_stats: Callable[[], QuerySnapshot],
        indexer: Callable[[], IndexerSnapshot],
        recovery: Recovery | None = None,
        origin: str = "",
        roles: Callable[[], list[str]] = list,
        model_loaded: anyio.Event | None = None,
        want_model: Callable[[], None] | None = None,
        where: str = "",
        events: EventHub | None = None,
        counting: Callable[[], anyio.Event | None] | None = None,
        condition: Callable[[], str | None] = lambda: None,
        check_server: Callable[[], Awaitable[None]] | None = None,
        model_unreachable: anyio.Event | None = None,
        reranker: Reranker | None = None,
        history: HistoryActor | None = None,
    ) -> None:
        #: The git history's actor (None: turned off).
        self.history = history
        #: Asks the embedding server (if any) whether it answers now (for status).
        self.check_server = check_server
        self._model_unreachable = model_unreachable
        self.events = events or EventHub()
        self.recovery = recovery
        #: Where the index is, as messages and status name it (no password).
        self.where = where
        self.capabilities = capabilities
        #: What an answer should say of how the store's lexical branch ranks now.
        self.condition = condition
        #: The reranker searches may ask for (None: none is configured).
        self.reranker = reranker
        self.model_loaded = model_loaded or anyio.Event()
        #: Something needs the model: it loads now (if it is not loaded or loading).
        self.want_model: Callable[[], None] = want_model or (lambda: None)
        self._origin = origin
        self._roles = roles
        self.settings = settings
        self._query = query
        self._jobs = jobs
        self._streams = streams
        self._model = model
        self._watcher = watcher or _no_watcher
        self._embedder = embedder
        self._query_stats = query_stats
        self._indexer = indexer
        self._counting = counting or (lambda: None)

    # ------------------------------------------------------------ the query actor

    async def _ask(self, make: Callable[[Reply[T]], Request]) -> T:
        """Send the request ``make`` builds around a reply of its own; its answer, or the
        error it met, raised."""
        send, receive = anyio.create_memory_object_stream[T | RiffluxError](1)
        # (both ends closed here, whatever happens: a request the actor never served,
        # its inbox closed at shutdown, left its reply to the garbage collector)
        with send, receive:
            try:
                message = make(send)
                try:  # without a trip through the event loop while the inbox has room
                    self._query.send_nowait(message)
                except anyio.WouldBlock:
                    await self._query.send(message)
                result = await receive.receive()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError,
                    anyio.EndOfStream) as exc:
                raise ClosedError(_CLOSED) from exc
        if isinstance(result, RiffluxError):
            raise result
        return result

    async def search(self, query: str, top_k: int, mode: Mode,
                     filters: Filters = NO_FILTERS, shape: SearchShape = PLAIN, *,
                     hypothesis: str | None = None) -> list[SearchResult]:
        results: list[SearchResult] = await self._ask(
            lambda reply: SearchRequested(query=query, top_k=top_k, mode=mode, filters=filters,
                                          shape=shape, hypothesis=hypothesis, reply=reply))
        counting = self._counting()
        if mode != "lexical" and self.pending() is None and counting is not None:
            # The matrix can load before the adoption has counted the texts still without
            # a vector: the answer says how many (``pending_embeddings``), not nothing.
            with anyio.move_on_after(_COUNT_WAIT_SECONDS):
                await counting.wait()
        return results

    async def chunk(self, chunk_id: str) -> ChunkDetail | None:
        return await self._ask(lambda reply: ChunkRequested(chunk_id=chunk_id, reply=reply))

    async def file(self, path: str, root: str | None = None) -> FileRecord | None:
        return await self._ask(lambda reply: FileRequested(path=path, root=root, reply=reply))

    async def lines(self, path: str, root: str | None, start: int | None,
                    end: int | None, *, by_page: bool = False) -> FileLines | None:
        return await self._ask(lambda reply: LinesRequested(
            path=path, root=root, start=start, end=end, by_page=by_page, reply=reply))

    async def links(self, path: str, root: str | None = None) -> NoteLinks:
        return await self._ask(lambda reply: LinksRequested(path=path, root=root, reply=reply))

    async def neighbors(self, path: str, root: str | None, depth: int) -> list[Neighbor]:
        return await self._ask(lambda reply: NeighborsRequested(path=path, root=root,
                                                                depth=depth, reply=reply))

    async def tags(self, paths: tuple[str, ...]) -> list[TagCount]:
        return await self._ask(lambda reply: TagsRequested(paths=paths, reply=reply))

    async def recent(self, limit: int, filters: Filters) -> list[RecentNote]:
        return await self._ask(lambda reply: RecentRequested(limit=limit, filters=filters,
                                                             reply=reply))

    async def roots(self) -> list[str]:
        return await self._ask(lambda reply: RootsRequested(reply=reply))

    async def files(self, root: str | None) -> list[IndexedFile]:
        return await self._ask(lambda reply: FilesRequested(root=root, reply=reply))

    async def root_counts(self) -> list[RootCount]:
        return await self._ask(lambda reply: RootCountsRequested(reply=reply))

    async def processes(self) -> tuple[ThisProcess, Others]:
        """This process; the others with the index open, the change sequence number and
        whether the store reads a replica."""
        others: Others = await self._ask(
            lambda reply: ProcessesRequested(origin=self._origin, reply=reply))
        return {"pid": os.getpid(), "roles": self._roles()}, others

    async def counts(self) -> tuple[Counts, str | None]:
        """The counts, and the model whose vectors they count."""
        return await self._ask(lambda reply: CountsRequested(reply=reply))

    # ------------------------------------------------------------ jobs

    def submit(self, targets: Sequence[Target], *, force: bool = False,
               count_left_out: bool = False) -> JobHandle:
        """Queue a job for ``targets`` (see ``Rifflux.reindex`` for the flags)."""
        return JobHandle(self._jobs.submit(Job(list(targets), force=force,
                                               count_left_out=count_left_out)))

    def submit_note(self, target: Target) -> JobHandle:
        """An urgent job for a note just written: it runs before queued jobs, and cuts in
        between the transactions of a running one."""
        return JobHandle(self._jobs.submit(Job([target], source="note"),
                                           urgent=True))

    def job(self, job_id: str) -> JobHandle:
        """A job by id (``JobNotFoundError`` once it has left the history)."""
        return JobHandle(self._jobs.get(job_id))

    # ------------------------------------------------------------ status

    def model(self) -> ModelSnapshot:
        return self._model()

    async def wait_for_model(self) -> None:
        """Until the model has loaded (or failed to, or its embedding server does not
        answer: it connects later by itself); its load starts if it had not."""
        self.want_model()
        await until_either(self.model_loaded, self._model_unreachable)

    def pending(self) -> int | None:
        return self._indexer()["pending"]

    def adopt_error(self) -> str | None:
        """Why this process's model is not the index's active one (semantic search off):
        another model's vectors it may not replace, or a failure adopting it."""
        return self._indexer()["adopt_error"]

    def languages_pending(self) -> int:
        return self._query_stats()["languages_pending"]

    def snapshot(self) -> ServiceSnapshot:
        return {
            "model": self._model(),
            "jobs": self._jobs.snapshot(),
            "queued_jobs": len(self._jobs),
            "watcher": self._watcher(),
            "queues": {name: _queue(stream) for name, stream in self._streams.items()},
            "embedder": self._embedder(),
            "query": self._query_stats(),
            "indexer": self._indexer(),
        }


def _queue(stream: MemoryObjectSendStream[Any]) -> QueueStatus:
    st = stream.statistics()
    return {"buffered": st.current_buffer_used, "max_buffer": int(st.max_buffer_size),
            "waiting_senders": st.tasks_waiting_send}
