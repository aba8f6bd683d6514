"""The embedder: turns chunk texts without vectors into vectors, off the event loop.

The database is its queue: once the indexer has adopted a model (``ModelAdopted``)
and whenever it says texts lack vectors (``EmbedWanted``), the embedder reads
the pending texts (newest first, a window at a time), sorts the window by
length so each batch pads little, runs the model in a worker thread and sends
each batch's vectors to the indexer, the only writer.

At most one batch is in flight: before sending a batch it waits until the
indexer has stored the previous one. While the indexer runs a job it stores
nothing, so the embedder pauses after at most one batch and the job's files
become searchable as early as the cores allow (lexical first); it also never
reads a text again that it has already embedded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypedDict

import anyio
import numpy as np
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..core.embedders import Embedder
from ..core.vectors import F32
from ..store.reader import PendingText, Reader
from .messages import EmbedderMessage, IndexerMessage, ModelAdopted, Receipt, VectorsEmbedded

logger = logging.getLogger(__name__)


class EmbedderSnapshot(TypedDict):
    texts_embedded: int
    busy: bool
    failures: int


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
        inbox: MemoryObjectReceiveStream[EmbedderMessage],
        out: MemoryObjectSendStream[IndexerMessage],
        batch_size: int,
        batch_chars: int = 8192,
        window: int = 512,
    ) -> None:
        self._reader = reader
        self._inbox = inbox
        self._out = out
        self._batch = batch_size
        self._batch_chars = batch_chars
        self._window = window
        self._embedder: Embedder | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._stats = EmbedderStats()

    def snapshot(self) -> EmbedderSnapshot:
        st = self._stats
        return {"texts_embedded": st.texts_embedded, "busy": st.busy, "failures": st.failures}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._inbox, self._out:
            task_status.started()
            async for msg in self._inbox:
                if isinstance(msg, ModelAdopted):
                    self._embedder = msg.embedder
                if self._embedder is None:
                    continue  # nothing can embed
                try:
                    await self._drain(self._embedder)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the indexer has stopped: we are shutting down
                except Exception:  # the boundary: a failure here must not stop the service
                    logger.exception("embedding stopped; it resumes at the next change")

    async def _drain(self, embedder: Embedder) -> None:
        """Embed windows of pending texts until none is left, or the indexer could not
        store a batch (a full or locked disk: the next change tries again)."""
        previous: Receipt | None = None
        self._stats.busy = True
        try:
            while pending := await self._reader.pending(embedder.label, self._window):
                pending.sort(key=lambda p: len(p.text))
                for part in batches(pending, self._batch, self._batch_chars):
                    vectors = await self._embed(embedder, [p.text for p in part])
                    if previous is not None and not await _stored(previous):
                        return
                    previous = Receipt()
                    await self._out.send(VectorsEmbedded(
                        model=embedder.label, hashes=tuple(p.content_hash for p in part),
                        vectors=vectors, receipt=previous,
                    ))
                # stored before the next window is read, so no text is embedded twice
                if previous is not None and not await _stored(previous):
                    return
        finally:
            self._stats.busy = False

    async def _embed(self, embedder: Embedder, texts: list[str]) -> F32:
        started = anyio.current_time()
        try:
            vectors = await anyio.to_thread.run_sync(
                embedder.embed_documents, texts, limiter=self._limiter
            )
        except Exception:  # a model failure on one batch must not stop the pipeline
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
                    self._stats.failures += 1
                    rows.append(np.zeros(embedder.dim, dtype=np.float32))
            vectors = np.stack(rows).astype(np.float32)
        self._stats.seconds_in_model += anyio.current_time() - started
        self._stats.texts_embedded += len(texts)
        self._stats.batches += 1
        return vectors


async def _stored(receipt: Receipt) -> bool:
    await receipt.done.wait()
    return receipt.stored


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
