"""The query actor: a read connection of its own, the in-memory vector matrix, and the
catalog of files that filters are resolved against.

Requests (searches and reads) run side by side, each in its own task, at most
``concurrency`` at a time; within a hybrid search the lexical and semantic
branches run concurrently and are fused by RRF. Filters are resolved to a set of
files first and applied inside each branch before its top ``top_k * 2`` are
taken. Each request is an error boundary: whatever fails inside it is answered
to that caller as a ``RiffluxError`` and the actor keeps serving.

The catalog is loaded at start and the matrix when the indexer has adopted a
model (``VectorsReset``), each in a task of its own, on a connection of its own
for the matrix, so lexical searches and reads never wait behind them;
``IndexChanged`` messages that arrive meanwhile are replayed on what was loaded
(each is idempotent: set or drop rows). Changes are applied between awaits, so
a search always sees a consistent matrix and catalog.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypedDict

import anyio
import numpy as np
import numpy.typing as npt
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from ..core.catalog import Allowed, Catalog
from ..core.embedders import Embedder
from ..core.filters import NO_FILTERS, Filters
from ..core.fts_query import build_every, build_match
from ..core.fusion import rrf
from ..core.snippets import Snippets
from ..core.vectors import F32, VectorIndex
from ..errors import InternalError, RiffluxError
from ..store.reader import Reader
from ..store.records import Records
from ..types import ChunkRecord, HitExplain, HybridScores, ScoreBreakdown, SearchResult
from .messages import (
    PLAIN,
    IndexChanged,
    QueryMessage,
    ReadRequested,
    SearchRequested,
    SearchShape,
    VectorsReset,
)
from .reads import Reads

logger = logging.getLogger(__name__)

_HAS_WORD = re.compile(r"\w", re.UNICODE)
#: How far down each branch a search with a per-file cap reads at most.
_MAX_DEPTH = 1000
#: Row masks of filtered searches kept (per matrix version).
_MASKS = 16
#: How long a semantic search waits for the model and matrix at start-up.
_MODEL_WAIT_SECONDS = 60.0

OpenReader = Callable[[], AbstractAsyncContextManager[Reader]]


class QuerySnapshot(TypedDict):
    vectors_in_memory: int
    searches: int
    failures: int


@dataclass(slots=True)
class _Asked:
    """What one search makes once, however many passes a per-file cap reads: the FTS5
    expression (None: no lexical branch), the snippet maker, the query's vector and the
    rows read so far."""

    query: str
    match: str | None
    snippets: Snippets
    vector: F32 | None = None
    rows: dict[int, ChunkRecord] = field(default_factory=dict)


class QueryActor:
    def __init__(
        self,
        *,
        reader: Reader,
        records: Records,
        open_reader: OpenReader,
        inbox: MemoryObjectReceiveStream[QueryMessage],
        rrf_k: int,
        feedback: int = 0,
        feedback_weight: float = 1.0,
        concurrency: int = 8,
    ) -> None:
        self._reader = reader
        self._open_reader = open_reader
        self._inbox = inbox
        self._rrf_k = rrf_k
        self._feedback = feedback
        self._feedback_weight = feedback_weight
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._embed_limiter = anyio.CapacityLimiter(1)  # one query embedding at a time
        self._embedder: Embedder | None = None
        self._matrix: VectorIndex | None = None
        self._ready = anyio.Event()  # the model is adopted and the matrix loaded (or none)
        self._replay: list[IndexChanged] | None = None  # changes seen while a load runs
        self._masks: dict[tuple[int, int, str], npt.NDArray[np.bool_]] = {}
        self._catalog = Catalog()
        self._catalog_ready = anyio.Event()
        self._catalog_replay: list[IndexChanged] | None = []
        self._reads = Reads(reader=reader, records=records, catalog=self._catalog,
                            catalog_ready=self._catalog_ready)
        self._searches = 0
        self._failures = 0

    def snapshot(self) -> QuerySnapshot:
        return {
            "vectors_in_memory": len(self._matrix) if self._matrix is not None else 0,
            "searches": self._searches,
            "failures": self._failures,
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
            _catalog_update(self._catalog, msg)
        if self._replay is not None:
            self._replay.append(msg)
        if self._matrix is None:
            return  # the load that VectorsReset starts reads these from the database
        try:
            _apply(self._matrix, msg)
        except Exception:  # the boundary: a matrix in doubt is loaded again
            logger.exception("could not apply a change to the vector matrix; reloading it")
            self._reset(VectorsReset(embedder=self._embedder), tg)

    async def _load_catalog(self) -> None:
        try:
            roots, files, edges = await self._reader.catalog()
        except Exception:  # filters then match nothing; searches without them go on
            logger.exception("cannot load the catalog of files; filtered searches find "
                             "nothing until the next restart")
            roots, files, edges = {}, [], []
        self._catalog.replace(roots, files, edges)
        for change in self._catalog_replay or ():
            _catalog_update(self._catalog, change)
        self._catalog_replay = None
        self._catalog_ready.set()

    def _reset(self, msg: VectorsReset, tg: TaskGroup) -> None:
        if msg.catalog and self._catalog_replay is None:  # (a load already running reads it)
            self._catalog_replay = []
            tg.start_soon(self._load_catalog, name="rifflux.query.catalog")
        self._embedder = msg.embedder
        if msg.embedder is None:
            self._matrix = None
            self._ready.set()
            return
        self._replay = []
        tg.start_soon(self._load, msg.embedder, name="rifflux.query.load")

    async def _load(self, embedder: Embedder) -> None:
        try:
            async with self._open_reader() as reader:
                ids, files, vectors = await reader.all_vectors(embedder.label, embedder.dim)
            matrix = VectorIndex(embedder.dim, capacity=len(ids) + max(1024, len(ids) // 8))
            matrix.upsert(ids, vectors, files)
            for change in self._replay or ():
                _apply(matrix, change)
        except Exception:  # searches go on lexically; semantic stays empty
            logger.exception("cannot load the vectors of %s; semantic search is off until "
                             "the next restart", embedder.label)
            self._replay = None
            self._ready.set()
            return
        self._matrix, self._replay = matrix, None
        self._ready.set()
        logger.info("loaded %d vectors of %s", len(ids), embedder.label)

    # ------------------------------------------------------------ serving

    async def _serve(self, msg: SearchRequested | ReadRequested) -> None:
        """One request, answered whatever happens inside it."""
        async with msg.reply:
            result: Any
            try:
                if isinstance(msg, SearchRequested):
                    result = await self.search(msg.query, msg.top_k, msg.mode, msg.filters,
                                               msg.shape)
                else:
                    async with _slot(self._limiter):
                        result = await self._reads.serve(msg, self._embedder)
            except RiffluxError as exc:
                result = exc
            except Exception as exc:  # the boundary: one bad request never ends the service
                self._failures += 1
                logger.exception("%s failed unexpectedly", _describe(msg))
                result = InternalError(
                    f"{_describe(msg)} failed unexpectedly ({type(exc).__name__}: {exc}); "
                    "Rifflux keeps serving: try again, or another mode, and please report "
                    "it with the log"
                )
            try:
                msg.reply.send_nowait(result)  # (its one answer: the buffer has room)
            except anyio.BrokenResourceError:
                pass  # the caller went away (cancelled); nothing to answer

    async def search(self, query: str, top_k: int, mode: str,
                     filters: Filters = NO_FILTERS,
                     shape: SearchShape = PLAIN) -> list[SearchResult]:
        if mode != "lexical" and not self._ready.is_set():
            # before taking a slot: the model may still be loading
            with anyio.move_on_after(_MODEL_WAIT_SECONDS):
                await self._ready.wait()
        allowed: Allowed | None = None
        if filters.active:
            if not self._catalog_ready.is_set():
                await self._catalog_ready.wait()
            allowed = self._catalog.allowed(filters)
            if allowed is not None and not allowed.ids:
                return []  # no file passes: nothing to rank
        async with _slot(self._limiter):
            self._searches += 1
            return await self._search(query, top_k, mode, allowed, shape)

    async def _search(self, query: str, top_k: int, mode: str, allowed: Allowed | None,
                      shape: SearchShape) -> list[SearchResult]:
        # SPEC: each branch fetches top_k * 2. A per-file cap reads further down both
        # lists, so that capped files leave room for the next ones, and further again
        # (four times as far each time) while one long file fills them and they go on.
        asked = _Asked(query, None if mode == "semantic" else build_match(query),
                       Snippets(query, shape.snippet_chars))
        if shape.max_per_file is None:
            # a lexical search alone keeps its first top_k: reading further finds nothing
            depth = top_k if mode == "lexical" else top_k * 2
            return (await self._ranked(asked, top_k, mode, allowed, shape, depth))[0]
        depth = min(top_k * 10, _MAX_DEPTH)
        while True:
            results, exhausted = await self._ranked(asked, top_k, mode, allowed, shape, depth)
            if len(results) >= top_k or exhausted or depth >= _MAX_DEPTH:
                return results
            depth = min(depth * 4, _MAX_DEPTH)

    async def _ranked(self, asked: _Asked, top_k: int, mode: str, allowed: Allowed | None,
                      shape: SearchShape, depth: int) -> tuple[list[SearchResult], bool]:
        """The results from both branches read ``depth`` deep, and whether the branches
        hold nothing further down."""
        lexical: list[tuple[int, float]] = []
        semantic: list[tuple[int, float]] = []
        rows = asked.rows

        async def run_lexical() -> None:
            nonlocal lexical
            if asked.match is not None:
                lexical, found = await self._reader.lexical(asked.match, depth, allowed,
                                                            build_every(asked.query))
                rows.update(found)

        async def run_semantic() -> None:
            nonlocal semantic
            semantic = await self._semantic(asked, depth, allowed)

        if mode == "hybrid":
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_lexical)
                tg.start_soon(run_semantic)
        elif mode == "lexical":
            await run_lexical()
        else:
            await run_semantic()

        ranked: list[tuple[int, ScoreBreakdown]]
        if mode == "lexical":
            ranked = [(cid, {"bm25": score}) for cid, score in lexical]
        elif mode == "semantic":
            ranked = [(cid, {"cosine": score}) for cid, score in semantic]
        else:
            fused = rrf([[c for c, _ in lexical], [c for c, _ in semantic]], k=self._rrf_k)
            ranked = [(f.key, _hybrid(f.score, f.ranks)) for f in fused]
        # rows of hits beyond the lexical list are read in one go (more than top_k with a
        # cap: some of them will be passed over)
        wanted = ranked[: top_k if shape.max_per_file is None else len(ranked)]
        missing = [cid for cid, _ in wanted if cid not in rows]
        if missing:
            rows.update(await self._reader.rows(missing))
        why = _Explainer(lexical, semantic) if shape.explain else None
        snippets = asked.snippets
        per_file: Counter[tuple[str, str]] = Counter()
        results: list[SearchResult] = []
        for cid, breakdown in wanted:
            row = rows.get(cid)
            if row is None:
                continue  # deleted between ranking and reading
            if shape.max_per_file is not None:
                where = (row["root"], row["path"])
                if per_file[where] >= shape.max_per_file:
                    continue
                per_file[where] += 1
            result = _result(row, breakdown, snippets, shape, why, cid)
            if self._catalog_ready.is_set():  # until then, no count rather than a wrong one
                result["backlink_count"] = self._catalog.backlink_count(row["root"],
                                                                        row["path"])
            results.append(result)
            if len(results) == top_k:
                break
        return results, len(lexical) < depth and len(semantic) < depth

    async def _semantic(self, asked: _Asked, depth: int,
                        allowed: Allowed | None) -> list[tuple[int, float]]:
        embedder, matrix = self._embedder, self._matrix
        if not _HAS_WORD.search(asked.query) or embedder is None or matrix is None:
            return []  # no query vector can be made: semantic mode answers nothing
        vector = asked.vector
        if vector is None:
            vector = asked.vector = await anyio.to_thread.run_sync(
                embedder.embed_query, asked.query, limiter=self._embed_limiter)
        mask = None if allowed is None else self._mask(matrix, allowed)
        ranked = matrix.top_k(vector, depth, feedback=self._feedback,
                              weight=self._feedback_weight, mask=mask, ties=True)
        return await self._reader.in_stable_order(ranked, depth)  # equal cosines by path

    def _mask(self, matrix: VectorIndex, allowed: Allowed) -> npt.NDArray[np.bool_]:
        """The matrix rows of the allowed files, kept while neither changes."""
        key = (id(matrix), matrix.version, allowed.json)
        mask = self._masks.get(key)
        if mask is None:
            mask = matrix.mask(allowed.array)
            if len(self._masks) >= _MASKS:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = mask
        return mask


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


class _Explainer:
    """Each hit's rank and raw score in each branch that found it."""

    def __init__(self, lexical: list[tuple[int, float]],
                 semantic: list[tuple[int, float]]) -> None:
        self._lexical = {cid: (rank, score) for rank, (cid, score) in enumerate(lexical, 1)}
        self._semantic = {cid: (rank, score) for rank, (cid, score) in enumerate(semantic, 1)}

    def of(self, cid: int) -> HitExplain:
        out: HitExplain = {}
        if cid in self._lexical:
            out["lexical_rank"], out["bm25"] = self._lexical[cid]
        if cid in self._semantic:
            out["semantic_rank"], out["cosine"] = self._semantic[cid]
        return out


def _result(row: ChunkRecord, breakdown: ScoreBreakdown, snippets: Snippets,
            shape: SearchShape, why: _Explainer | None, cid: int) -> SearchResult:
    result: SearchResult = {
        "chunk_id": row["chunk_id"], "path": row["path"], "heading_path": row["heading_path"],
        "chunk_index": row["chunk_index"], "root": row["root"], "title": row["title"],
        "tags": row["tags"], "modified": row["modified"], "line_start": row["line_start"],
        "line_end": row["line_end"], "score_breakdown": breakdown,
        "snippet": snippets.make(row["content"]),
    }
    if shape.content == "full":
        result["content"] = row["content"]
    if why is not None:
        result["explain"] = why.of(cid)
    return result


def _catalog_update(catalog: Catalog, msg: IndexChanged) -> None:
    catalog.update(dict(msg.roots), msg.files, msg.files_removed, msg.roots_removed, msg.links)


def _apply(matrix: VectorIndex, msg: IndexChanged) -> None:
    if msg.files_replaced:
        matrix.remove_groups(msg.files_replaced)
    if msg.removed:
        matrix.remove(msg.removed)
    if msg.added_ids and msg.added_vectors is not None:
        matrix.upsert(msg.added_ids, msg.added_vectors, msg.added_files or None)


def _hybrid(score: float, ranks: tuple[int | None, ...]) -> HybridScores:
    return {"rrf": score, "lexical_rank": ranks[0], "semantic_rank": ranks[1]}


def _kind(msg: SearchRequested | ReadRequested) -> str:
    return "search" if isinstance(msg, SearchRequested) else "read"


def _describe(msg: SearchRequested | ReadRequested) -> str:
    if isinstance(msg, SearchRequested):
        return f"{msg.mode} search for {msg.query[:60]!r}"
    return f"reading {msg.what} {msg.key!r}" if msg.key else f"reading {msg.what}"
