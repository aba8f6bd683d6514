"""The embedder: turns chunk texts without vectors into vectors, off the event loop.

The database is its queue: when nudged it reads the pending texts (newest
first, a window at a time), sorts the window by length so each batch pads
little, runs the model in a worker thread and sends the vectors to the indexer,
the only writer. It waits for the indexer to commit a window before reading the
next one, so it never embeds the same text twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio
import numpy as np
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..core.vectors import F32
from ..errors import RiffluxError
from ..store.reader import PendingText, Reader
from .messages import EmbedWanted, VectorsReady
from .model import Gate, ModelState, PendingTracker

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class EmbedderStats:
    texts_embedded: int = 0
    batches: int = 0
    seconds_in_model: float = 0.0
    failures: int = 0
    busy: bool = False


class EmbedderActor:
    def __init__(
        self,
        *,
        reader: Reader,
        model: ModelState,
        nudges: MemoryObjectReceiveStream[EmbedWanted],
        out: MemoryObjectSendStream[VectorsReady],
        batch_size: int,
        batch_chars: int = 8192,
        window: int = 512,
        gate: Gate | None = None,
        enabled: bool = True,
        tracker: PendingTracker | None = None,
    ) -> None:
        self._tracker = tracker or PendingTracker()
        self._enabled = enabled
        self._gate = gate or Gate()
        self._reader = reader
        self._model = model
        self._nudges = nudges
        self._out = out
        self._batch = batch_size
        self._batch_chars = batch_chars
        self._window = window
        self._limiter = anyio.CapacityLimiter(1)
        self.stats = EmbedderStats()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._nudges, self._out:
            task_status.started()
            await self._model.ready.wait()
            if self._model.embedder is not None:
                await self._model.adopted.wait()
            if self._model.embedder is None or not self._enabled:
                async for _ in self._nudges:
                    pass  # nothing can embed; drain until shutdown
                return
            while True:
                generation = self._tracker.generation
                try:
                    pending = await self._reader.pending(self._model.embedder.label, self._window)
                    if not pending:
                        self._tracker.observed_empty(generation)
                except RiffluxError:
                    logger.exception("cannot read pending chunks; waiting for the next change")
                    pending = []
                if pending:
                    try:
                        await self._embed_window(pending)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return  # the indexer has stopped: we are shutting down
                    continue
                try:
                    await self._nudges.receive()
                except anyio.EndOfStream:
                    return

    async def _embed_window(self, pending: list[PendingText]) -> None:
        embedder = self._model.embedder
        assert embedder is not None
        pending.sort(key=lambda p: len(p.text))
        acks: list[anyio.Event] = []
        self.stats.busy = True
        try:
            for part in batches(pending, self._batch, self._batch_chars):
                await self._gate.wait()
                vectors = await self._embed([p.text for p in part])
                written = anyio.Event()
                await self._out.send(
                    VectorsReady(
                        model=embedder.label,
                        hashes=tuple(p.content_hash for p in part),
                        vectors=vectors,
                        written=written,
                    )
                )
                acks.append(written)
            for ack in acks:
                await ack.wait()
        finally:
            self.stats.busy = False

    async def _embed(self, texts: list[str]) -> F32:
        embedder = self._model.embedder
        assert embedder is not None
        started = anyio.current_time()
        try:
            vectors = await anyio.to_thread.run_sync(
                embedder.embed_documents, texts, limiter=self._limiter
            )
        except Exception:  # a model failure must not stop the pipeline
            logger.exception("embedding a batch of %d failed; trying one by one", len(texts))
            rows = []
            for text in texts:
                try:
                    one = await anyio.to_thread.run_sync(
                        embedder.embed_documents, [text], limiter=self._limiter
                    )
                    rows.append(one[0])
                except Exception:
                    logger.exception("cannot embed one chunk; storing a zero vector for it")
                    self.stats.failures += 1
                    rows.append(np.zeros(embedder.dim, dtype=np.float32))
            vectors = np.stack(rows).astype(np.float32)
        self.stats.seconds_in_model += anyio.current_time() - started
        self.stats.texts_embedded += len(texts)
        self.stats.batches += 1
        return vectors


#: A text counts for at most this many characters in a batch's budget: the model
#: cuts at 256 tokens, about 1,000 characters of English.
_TEXT_CHARS_CAP = 1024


def batches(
    pending: list[PendingText], size: int, chars: int
) -> list[list[PendingText]]:
    """Consecutive batches of at most ``size`` texts and ``chars`` characters (each text
    counted up to ``_TEXT_CHARS_CAP``; a batch always takes at least one text)."""
    out: list[list[PendingText]] = []
    current: list[PendingText] = []
    used = 0
    for item in pending:
        cost = min(len(item.text), _TEXT_CHARS_CAP)
        if current and (len(current) >= size or used + cost > chars):
            out.append(current)
            current, used = [], 0
        current.append(item)
        used += cost
    if current:
        out.append(current)
    return out
