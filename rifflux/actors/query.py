"""The query actor: the store's reads, the in-memory vector matrix (for a store that
keeps its vectors in memory: ``Capabilities.vectors_in_memory``), and the catalog
of files that filters are resolved against.

Requests (searches and reads) run side by side, each in its own task, at most
``concurrency`` at a time. Filters are resolved to a set of files first and
applied inside each branch before its top ``top_k * 2`` are taken; the ranking
itself (both branches side by side, fused) is ``rifflux.query``'s. Each
request is an error boundary: whatever fails inside it is answered to that caller
as a ``RiffluxError`` and the actor keeps serving.

The catalog is loaded at start and the matrix when the indexer has adopted a
model (``VectorsReset``), each in a task and on a connection of its own, so
lexical searches and reads never wait behind them;
``IndexChanged`` messages that arrive meanwhile are replayed on what was loaded
(each is idempotent: set or drop rows). Changes are applied between awaits, so
a search always sees a consistent matrix and catalog. Applying them is inside the
boundary too: a matrix or catalog that a change failed on is read again whole.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Literal, TypedDict

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from ..core.catalog import Allowed, Catalog
from ..core.filters import NO_FILTERS, Filters
from ..errors import InternalError, RiffluxError
from ..query.asked import PLAIN, SearchShape
from ..query.loaded import Loaded
from ..query.ranking import Ranking
from ..store.protocols import OpenStore
from ..types import SearchResult
from .messages import (
    ChunkRequested,
    CountsRequested,
    FileRequested,
    FilesRequested,
    IndexChanged,
    LinesRequested,
    LinksRequested,
    NeighborsRequested,
    ProcessesRequested,
    QueryMessage,
    Request,
    RootCountsRequested,
    RootsRequested,
    SearchRequested,
    TagsRequested,
    VectorsReset,
    give,
)
from .model import until_either
from .reads import Reads
from .rerank import Reranker

if TYPE_CHECKING:  # (numpy and the model load with the semantic path: _load)
    from ..core.embedders import Embedder
    from ..core.vectors import VectorIndex

logger = logging.getLogger(__name__)

#: How long a semantic search waits for the model and matrix at start-up.
_MODEL_WAIT_SECONDS = 60.0
#: Reads of the catalog when building it from them fails.
_CATALOG_TRIES = 2

class QuerySnapshot(TypedDict):
    vectors_in_memory: int
    catalog_state: Literal["loading", "ready"]  # (the catalog of files that filters use)
    searches: int
    failures: int
    #: Chunks whose language is not told yet (the catalog's count; 0 while it loads).
    languages_pending: int


class QueryActor:
    def __init__(
        self,
        *,
        store: OpenStore,
        inbox: MemoryObjectReceiveStream[QueryMessage],
        rrf_k: int,
        feedback: int = 0,
        feedback_weight: float = 1.0,
        other_language_share: float = 1.0,
        concurrency: int = 8,
        want_model: Callable[[], None] = lambda: None,
        model_unreachable: anyio.Event | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self._want_model = want_model
        self._model_unreachable = model_unreachable
        self._store = store
        self._inbox = inbox
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._catalog_ready = anyio.Event()
        self._loaded = Loaded(catalog_ready=self._catalog_ready)
        self._ready = anyio.Event()  # the model is adopted and the matrix loaded (or none)
        self._replay: list[IndexChanged] | None = None  # changes seen while a load runs
        self._loads = 0  # loads begun: a load ends without effect when a later one began
        self._catalog = self._loaded.catalog
        self._catalog_replay: list[IndexChanged] | None = []
        self._reads = Reads(reads=store.reads, records=store.records, links=store.links,
                            catalog=self._catalog, catalog_ready=self._catalog_ready)
        self._ranking = Ranking(rows=store.reads, copies=store.copies, lexical=store.lexical,
                                loaded=self._loaded, rrf_k=rrf_k, semantic=store.semantic,
                                matrix=store.matrix, feedback=feedback,
                                feedback_weight=feedback_weight, reranker=reranker,
                                languages=store.languages,
                                other_language_share=other_language_share)
        self._searches = 0
        self._failures = 0

    def snapshot(self) -> QuerySnapshot:
        matrix = self._loaded.matrix
        return {
            "vectors_in_memory": 0 if matrix is None else len(matrix),
            "catalog_state": "ready" if self._catalog_ready.is_set() else "loading",
            "searches": self._searches,
            "failures": self._failures,
            "languages_pending": self._catalog.languages_pending(),
        }

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._inbox, anyio.create_task_group() as tg:
            tg.start_soon(self._load_catalog, name="rifflux.query.catalog")
            task_status.started()
            async for msg in self._inbox:
                if isinstance(msg, IndexChanged):
                    self._changed(msg, tg)
                elif isinstance(msg, VectorsReset):
                    self._reset(msg, tg)
                else:
                    tg.start_soon(self._serve, msg, name=f"rifflux.query.{_kind(msg)}")
            tg.cancel_scope.cancel()

    # ------------------------------------------------------------ matrix and catalog

    def _changed(self, msg: IndexChanged, tg: TaskGroup) -> None:
        if self._catalog_replay is not None:
            self._catalog_replay.append(msg)
        else:
            try:
                _catalog_update(self._catalog, msg)
            except Exception:  # the boundary: a catalog in doubt is read again
                logger.exception("could not apply a change to the catalog of files; "
                                 "reading it again")
                self._reload_catalog(tg)
        if self._replay is not None:
            self._replay.append(msg)
        if self._loaded.matrix is None:
            return  # the load that VectorsReset starts reads these from the database
        try:
            _apply(self._loaded.matrix, msg)
        except Exception:  # the boundary: a matrix in doubt is loaded again
            logger.exception("could not apply a change to the vector matrix; reloading it")
            self._reset(VectorsReset(embedder=self._loaded.embedder), tg)

    def _reload_catalog(self, tg: TaskGroup) -> None:
        if self._catalog_replay is None:  # (a load already running reads it all)
            self._catalog_replay = []
            tg.start_soon(self._load_catalog, name="rifflux.query.catalog")

    async def _load_catalog(self) -> None:
        """Read the catalog of files, then apply the changes seen meanwhile. Each change
        arrives after its commit, so one seen before the read began is in what is read.
        The boundary: what fails while building it is logged and the catalog read again
        (without the change that failed, which the read holds); a second failure leaves
        filters matching what the catalog holds until the next reload."""
        for attempt in range(1, _CATALOG_TRIES + 1):
            self._catalog_replay = []
            try:
                # (a connection of its own where the store has one to give: 1.4 s at a
                # million chunks, which a search on the actor's connection waited behind)
                if self._store.open_reads is not None:
                    async with self._store.open_reads() as reader:
                        roots, files, edges = await reader.catalog()
                else:
                    roots, files, edges = await self._store.reads.catalog()
            except Exception:  # filters then match nothing; searches without them go on
                logger.exception("cannot load the catalog of files; filtered searches find "
                                 "nothing until the next restart")
                roots, files, edges = {}, [], []
            try:
                self._catalog.replace(roots, files, edges)
                for change in self._catalog_replay:
                    _catalog_update(self._catalog, change)
                break
            except Exception:  # the boundary: never the end of the instance
                logger.exception("could not build the catalog of files (attempt %d of %d)",
                                 attempt, _CATALOG_TRIES)
        self._catalog_replay = None
        self._catalog_ready.set()

    def _reset(self, msg: VectorsReset, tg: TaskGroup) -> None:
        if msg.catalog:
            self._reload_catalog(tg)
        self._loaded.embedder = msg.embedder
        self._loads += 1  # (a load still running is superseded)
        if msg.embedder is None or self._store.open_matrix is None:
            self._loaded.matrix = self._replay = None  # (or the store ranks vectors itself)
            self._ready.set()
            return
        self._replay = []
        tg.start_soon(self._load, msg.embedder, self._loads, name="rifflux.query.load")

    async def _load(self, embedder: Embedder, load: int) -> None:
        assert self._store.open_matrix is not None
        try:
            from ..core.vectors import VectorIndex

            async with self._store.open_matrix() as reader:
                rows = await reader.vector_capacity()
                matrix = VectorIndex(embedder.dim, capacity=rows + max(1024, rows // 8))
                # a block at a time, straight into the compact matrix (the chunks each
                # row serves found beside the read: a change committed between the two
                # is among those replayed below), its pages faulted in meanwhile by a
                # worker thread (core.pages: not a trap per page on this one)
                try:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(partial(anyio.to_thread.run_sync, matrix.populate, rows),
                                      name="rifflux.query.pages")
                        count = await reader.stream_vectors(
                            embedder.label, embedder.dim, matrix.append, matrix.append_codes,
                            matrix.assign)
                except ExceptionGroup as group:  # the load's own error, as it was raised
                    raise group.exceptions[0] from None
            matrix.seal()
            if load != self._loads:
                return  # superseded: the later reset's answer stands
            for change in self._replay or ():
                _apply(matrix, change)
        except Exception:  # searches go on lexically; semantic stays empty
            if load != self._loads:
                return
            logger.exception("cannot load the vectors of %s; semantic search is off until "
                             "the next restart", embedder.label)
            self._replay = None
            self._ready.set()
            return
        self._loaded.matrix, self._replay = matrix, None
        self._ready.set()
        logger.info("loaded %d vectors of %s (%.0f MiB)", count, embedder.label,
                    matrix.nbytes / 2**20)

    # ------------------------------------------------------------ serving

    async def _serve(self, msg: Request) -> None:
        """One request, answered whatever happens inside it."""
        async with msg.reply:
            error: RiffluxError
            try:
                if isinstance(msg, SearchRequested):
                    give(msg.reply, await self.search(msg.query, msg.top_k, msg.mode,
                                                      msg.filters, msg.shape,
                                                      hypothesis=msg.hypothesis))
                else:
                    async with _slot(self._limiter):
                        await self._reads.answer(msg, self._loaded.embedder)
                return
            except RiffluxError as exc:
                error = exc
            except Exception as exc:  # the boundary: one bad request never ends the service
                self._failures += 1
                logger.exception("%s failed unexpectedly", _describe(msg))
                error = InternalError(
                    f"{_describe(msg)} failed unexpectedly ({type(exc).__name__}: {exc}); "
                    "Rifflux keeps serving: try again, or another mode, and please report "
                    "it with the log"
                )
            try:
                msg.reply.send_nowait(error)  # (its one answer: the buffer has room)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the caller went away (cancelled); nothing to answer

    async def search(self, query: str, top_k: int, mode: str,
                     filters: Filters = NO_FILTERS, shape: SearchShape = PLAIN, *,
                     hypothesis: str | None = None) -> list[SearchResult]:
        if mode != "lexical" and not self._ready.is_set():
            # before taking a slot: the model may still be loading (or not started yet)
            self._want_model()
            await self._until_ready()
        allowed: Allowed | None = None
        if filters.active:
            if not self._catalog_ready.is_set():
                await self._catalog_ready.wait()
            allowed = self._catalog.allowed(filters)
        async with _slot(self._limiter):
            self._searches += 1
            return await self._ranking.search(query, top_k, mode, allowed, shape,
                                              hypothesis=hypothesis)

    async def _until_ready(self) -> None:
        """Until the model is adopted and its matrix loaded, or an embedding server it
        connects to does not answer (the search goes on without a semantic branch, and
        its answer says why), at most ``_MODEL_WAIT_SECONDS``."""
        with anyio.move_on_after(_MODEL_WAIT_SECONDS):
            await until_either(self._ready, self._model_unreachable)


@asynccontextmanager
async def _slot(limiter: anyio.CapacityLimiter) -> AsyncIterator[None]:
    """A slot of ``limiter``, taken without a trip through the event loop when one is free
    (a search is a few milliseconds: every checkpoint shows)."""
    try:
        limiter.acquire_nowait()
    except anyio.WouldBlock:
        await limiter.acquire()
    try:
        yield
    finally:
        limiter.release()


def _catalog_update(catalog: Catalog, msg: IndexChanged) -> None:
    catalog.update(dict(msg.roots), msg.files, msg.files_removed, msg.roots_removed, msg.links)


def _apply(matrix: VectorIndex, msg: IndexChanged) -> None:
    if msg.files_replaced:
        matrix.remove_groups(msg.files_replaced)
    if msg.removed:
        matrix.remove(msg.removed)
    if msg.added_ids and msg.added_vectors is not None:
        matrix.upsert(msg.added_ids, msg.added_vectors, msg.added_files or None)


def _kind(msg: Request) -> str:
    return "search" if isinstance(msg, SearchRequested) else "read"


def _describe(msg: Request) -> str:
    match msg:
        case SearchRequested():
            return f"{msg.mode} search for {msg.query[:60]!r}"
        case ChunkRequested():
            key = msg.chunk_id
        case FileRequested() | LinesRequested() | LinksRequested() | NeighborsRequested():
            key = msg.path
        case _:
            key = ""
    what = _READS[type(msg)]
    return f"reading {what} {key!r}" if key else f"reading {what}"


#: Each read as logs and errors name it.
_READS: dict[type[Request], str] = {
    ChunkRequested: "chunk", FileRequested: "file", LinesRequested: "lines",
    CountsRequested: "counts", RootsRequested: "roots", RootCountsRequested: "root_counts",
    TagsRequested: "tags", LinksRequested: "links", NeighborsRequested: "neighbors",
    ProcessesRequested: "processes", FilesRequested: "files",
}
