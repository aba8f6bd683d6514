"""The query actor: a read connection of its own plus the in-memory vector matrix.

Searches run side by side (each in its own task); within a hybrid search the
lexical and semantic branches run concurrently and are fused by RRF. The matrix
is loaded once and then kept current by the indexer's ``IndexChanged``
messages, which are applied between awaits, so a search always scores a
consistent matrix.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from ..core.fts_query import build_match
from ..core.fusion import rrf
from ..core.vectors import VectorIndex
from ..errors import RiffluxError
from ..store.reader import Reader
from .messages import (
    IndexChanged,
    QueryMessage,
    ReadRequested,
    SearchRequested,
    VectorsReset,
)
from .model import ModelState

logger = logging.getLogger(__name__)

_HAS_WORD = re.compile(r"\w", re.UNICODE)
#: How long a semantic search waits for the model and matrix at start-up.
_MODEL_WAIT_SECONDS = 60.0


class QueryActor:
    def __init__(
        self,
        *,
        reader: Reader,
        model: ModelState,
        inbox: MemoryObjectReceiveStream[QueryMessage],
        rrf_k: int,
        feedback: int = 0,
        feedback_weight: float = 1.0,
    ) -> None:
        self._feedback = feedback
        self._feedback_weight = feedback_weight
        self._reader = reader
        self._model = model
        self._inbox = inbox
        self._rrf_k = rrf_k
        self._matrix: VectorIndex | None = None
        self._loaded = anyio.Event()
        self._limiter = anyio.CapacityLimiter(1)  # one query embedding at a time
        self.searches = 0

    @property
    def vectors_in_memory(self) -> int:
        return len(self._matrix) if self._matrix is not None else 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._inbox, anyio.create_task_group() as tg:
            task_status.started()
            async for msg in self._inbox:
                if isinstance(msg, IndexChanged):
                    self._apply(msg)
                elif isinstance(msg, VectorsReset):
                    await self._reset(msg.model)
                elif isinstance(msg, SearchRequested):
                    tg.start_soon(self._serve_search, msg, name="rifflux.query.search")
                else:
                    tg.start_soon(self._serve_read, msg, name="rifflux.query.read")
            tg.cancel_scope.cancel()

    # ------------------------------------------------------------ matrix

    def _apply(self, msg: IndexChanged) -> None:
        if self._matrix is None:
            return  # the reset that loads the matrix will read these from the database
        if msg.removed:
            self._matrix.remove(msg.removed)
        if msg.added_ids and msg.added_vectors is not None:
            self._matrix.upsert(msg.added_ids, msg.added_vectors)

    async def _reset(self, model: str) -> None:
        embedder = self._model.embedder
        dim = embedder.dim if embedder else 384
        ids, vectors = await self._reader.all_vectors(model, dim)
        matrix = VectorIndex(dim, capacity=len(ids) + max(1024, len(ids) // 8))
        matrix.upsert(ids, vectors)
        self._matrix = matrix
        self._loaded.set()
        logger.info("loaded %d vectors of %s", len(ids), model)

    # ------------------------------------------------------------ serving

    async def _serve_search(self, msg: SearchRequested) -> None:
        async with msg.reply:
            try:
                result: list[dict[str, Any]] | BaseException = await self.search(
                    msg.query, msg.top_k, msg.mode
                )
            except RiffluxError as exc:
                result = exc
            try:
                await msg.reply.send(result)
            except anyio.BrokenResourceError:
                pass  # the caller went away (cancelled); nothing to answer

    async def _serve_read(self, msg: ReadRequested) -> None:
        async with msg.reply:
            result: Any
            try:
                if msg.what == "chunk":
                    result = await self._reader.chunk(msg.key)
                elif msg.what == "file":
                    result = await self._reader.file(msg.key)
                elif msg.what == "roots":
                    result = await self._reader.roots()
                else:
                    result = await self._reader.counts(msg.key)
            except RiffluxError as exc:
                result = exc
            try:
                await msg.reply.send(result)
            except anyio.BrokenResourceError:
                pass

    async def search(self, query: str, top_k: int, mode: str) -> list[dict[str, Any]]:
        self.searches += 1
        depth = top_k * 2
        lexical: list[tuple[int, float]] = []
        semantic: list[tuple[int, float]] = []
        rows: dict[int, dict[str, Any]] = {}

        async def run_lexical() -> None:
            nonlocal lexical
            match = build_match(query)
            if match is not None:
                lexical, found = await self._reader.lexical(match, depth)
                rows.update(found)

        async def run_semantic() -> None:
            nonlocal semantic
            semantic = await self._semantic(query, depth)

        if mode == "hybrid":
            async with anyio.create_task_group() as tg:
                tg.start_soon(run_lexical)
                tg.start_soon(run_semantic)
        elif mode == "lexical":
            await run_lexical()
        else:
            await run_semantic()

        picked: list[tuple[int, dict[str, float | int | None]]]
        if mode == "lexical":
            picked = [(cid, {"bm25": score}) for cid, score in lexical[:top_k]]
        elif mode == "semantic":
            picked = [(cid, {"cosine": score}) for cid, score in semantic[:top_k]]
        else:
            fused = rrf([[c for c, _ in lexical], [c for c, _ in semantic]], k=self._rrf_k)
            picked = [
                (f.key, {"rrf": f.score, "lexical_rank": f.ranks[0], "semantic_rank": f.ranks[1]})
                for f in fused[:top_k]
            ]
        missing = [cid for cid, _ in picked if cid not in rows]
        if missing:
            rows.update(await self._reader.rows(missing))
        results: list[dict[str, Any]] = []
        for cid, breakdown in picked:
            row = rows.get(cid)
            if row is None:
                continue  # deleted between ranking and reading
            results.append({**row, "score_breakdown": breakdown})
        return results

    async def _semantic(self, query: str, depth: int) -> list[tuple[int, float]]:
        if not _HAS_WORD.search(query):
            return []
        with anyio.move_on_after(_MODEL_WAIT_SECONDS):
            await self._model.ready.wait()
            if self._model.embedder is not None:
                await self._loaded.wait()
        embedder = self._model.embedder
        matrix = self._matrix
        if embedder is None or matrix is None:
            return []  # no query vector can be made: semantic mode answers nothing
        vector = await anyio.to_thread.run_sync(
            embedder.embed_query, query, limiter=self._limiter
        )
        return matrix.top_k(
            vector, depth, feedback=self._feedback, weight=self._feedback_weight
        )
