"""The embedder: turns chunk texts without vectors into vectors, off the event loop.

The database is its queue: once the indexer has adopted a model (``ModelAdopted``)
and whenever it says texts lack vectors (``EmbedWanted``), the embedder reads
the pending texts (newest first, a window at a time), sorts the window by
length so each batch pads little, runs the model in a worker thread and sends
each batch's vectors to the indexer, the only writer. A window costs what it
holds, whatever the index's size (the SQLite store takes it from the exact set of
missing texts its writer keeps, and reads those texts by their hashes).

At most one batch is in flight: before sending a batch it waits until the
indexer has stored the previous one. While the indexer runs a job it stores
nothing, so the embedder pauses after at most one batch and the job's files
become searchable as early as the cores allow (lexical first); it also never
reads a text again that it has already embedded.

An embedding server (``server_embedder``) is awaited rather than run in a thread, a
window of its batches a call; when it does not answer (``EmbeddingUnavailableError``)
nothing is stored for the texts it was asked for: they stay pending, and the embedder
asks again after a backoff (0.5 s, doubled each time, at most a minute), by itself.

Of all the processes on one index, only the one holding the embedding lease
(``store.protocols.LeaseStore``) embeds: the others leave the pending texts to it and try to
take the lease every second, so when its holder dies another finishes the work.
Each batch is sent with the lease's token (``LeaseStore.token``), and the writer stores
its vectors only in a transaction that confirms that take of the lease is still the
last: a lease lost while the batch was embedded (a server restart ends it unseen, and
another process may have taken it and embedded the same texts) stores nothing, and this
process stops embedding until it holds the lease again.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..errors import EmbeddingUnavailableError
from ..store.common import PendingText
from ..store.protocols import LeaseStore, PendingStore
from .messages import (
    BackoffEnded,
    EmbedderMessage,
    EmbedWanted,
    IndexerMessage,
    ModelAdopted,
    Receipt,
    VectorsEmbedded,
)
from .server_embedder import ServerEmbedder
from .server_health import backoff, wait_or_answer

if TYPE_CHECKING:  # (numpy and the model are loaded with the model)
    from ..core.embedders import Embedder
    from ..core.vectors import F32

logger = logging.getLogger(__name__)

#: How often a process without the embedding lease tries to take it, in seconds.
LEASE_RETRY = 1.0


class EmbedderSnapshot(TypedDict):
    texts_embedded: int
    busy: bool
    failures: int
    waiting: str | None  # why embedding waits (the embedding server does not answer)
    retry_in: float | None  # seconds until it asks again


@dataclass(slots=True)
class EmbedderStats:
    texts_embedded: int = 0
    batches: int = 0
    seconds_in_model: float = 0.0
    failures: int = 0
    busy: bool = False
    #: The embedding server's failures in a row, why it failed last, and when (the
    #: event loop's clock) the embedder asks it again.
    unanswered: int = 0
    waiting: str | None = None
    retry_at: float | None = None


class EmbedderActor:
    def __init__(
        self,
        *,
        reader: PendingStore,
        inbox: MemoryObjectReceiveStream[EmbedderMessage],
        out: MemoryObjectSendStream[IndexerMessage],
        batch_size: int,
        batch_chars: int = 8192,
        window: int = 512,
        lease: LeaseStore | None = None,
        wake: MemoryObjectSendStream[EmbedderMessage] | None = None,
    ) -> None:
        self.lease = lease
        self._wake = wake
        self._waiting = False
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
        retry_in = None if st.retry_at is None else max(
            0.0, round(st.retry_at - anyio.current_time(), 1))
        return {"texts_embedded": st.texts_embedded, "busy": st.busy, "failures": st.failures,
                "waiting": st.waiting, "retry_in": retry_in}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with self._inbox, self._out, anyio.create_task_group() as tg:
                task_status.started()
                async for msg in self._inbox:
                    if isinstance(msg, ModelAdopted):
                        self._embedder = msg.embedder
                    if self._embedder is None or not await self._claim(tg):
                        continue  # nothing can embed, or another process embeds
                    if self._stats.retry_at is not None and not isinstance(msg, BackoffEnded):
                        continue  # the server is asked again when its backoff ends
                    self._stats.retry_at = None
                    try:
                        await self._drain(self._embedder)
                        self._answered()
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        break  # the indexer has stopped: we are shutting down
                    except EmbeddingUnavailableError as exc:  # (stored: nothing of it)
                        self._unanswered(exc, tg)
                    except Exception:  # the boundary: a failure must not stop the service
                        logger.exception("embedding stopped; it resumes at the next change")
                tg.cancel_scope.cancel()
        finally:
            if self._wake is not None:
                self._wake.close()
            if self.lease is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await self.lease.give_back()

    def _answered(self) -> None:
        if self._stats.unanswered:
            logger.warning("the embedding server answers again: embedding resumed")
        self._stats.unanswered, self._stats.waiting = 0, None

    def _unanswered(self, exc: EmbeddingUnavailableError, tg: TaskGroup) -> None:
        """The server did not answer: ask it again after a backoff, by itself."""
        st = self._stats
        st.unanswered += 1
        st.waiting = str(exc)
        delay = backoff(st.unanswered, exc.retry_after)
        st.retry_at = anyio.current_time() + delay
        logger.log(logging.WARNING if st.unanswered == 1 else logging.DEBUG,
                   "embedding waits: %s; asking again in %.1f s", exc, delay)
        tg.start_soon(self._retry, delay, name="rifflux.embedder.retry")

    async def _retry(self, delay: float) -> None:
        """After ``delay``, or as soon as another request finds the server answering."""
        if isinstance(self._embedder, ServerEmbedder):
            await wait_or_answer(self._embedder.health, delay)
        else:
            await anyio.sleep(delay)
        if self._wake is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._wake.send(BackoffEnded())

    async def _claim(self, tg: TaskGroup) -> bool:
        """Whether this process embeds: it holds the lease, or takes it now; if not, a
        task tries again every second and wakes the embedder once it has it."""
        if self.lease is None or await self.lease.try_take():
            return True
        if not self._waiting:
            self._waiting = True
            tg.start_soon(self._wait_for_lease, name="rifflux.embedder.lease")
        return False

    async def _wait_for_lease(self) -> None:
        assert self.lease is not None
        while not await self.lease.try_take():  # noqa: ASYNC110 - another process's lock
            await anyio.sleep(LEASE_RETRY)
        self._waiting = False
        logger.info("this process now embeds for the index (it holds %s)", self.lease.where)
        if self._wake is not None:
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError,
                                     anyio.BrokenResourceError):
                self._wake.send_nowait(EmbedWanted())

    async def _drain(self, embedder: Embedder) -> None:
        """Embed windows of pending texts until none is left, or the indexer could not
        store a batch (a full or locked disk: the next change tries again)."""
        previous: Receipt | None = None
        self._stats.busy = True
        try:
            # a window at a time while the lease is held (lost with its database
            # connection, another process may hold it now: that one embeds the rest;
            # each batch asks first)
            while (self.lease is None or self.lease.held) and (
                    pending := await self._reader.pending(embedder.label, self._window)):
                pending.sort(key=lambda p: len(p.text))
                size, chars = self._batch, self._batch_chars
                if isinstance(embedder, ServerEmbedder):  # (its requests, all at once)
                    size = embedder.batch_texts
                    chars = size * _TEXT_CHARS_CAP
                for part in batches(pending, size, chars):
                    # the lease confirmed by its keeper before each batch (a server
                    # restart ends it unseen: another process may embed these now), and
                    # again by the writer in the transaction that stores the batch
                    if self.lease is not None and not await self.lease.confirm():
                        logger.info("the embedding lease (%s) was lost: another process "
                                    "embeds the rest", self.lease.where)
                        self._ask_again()
                        return
                    token = None if self.lease is None else self.lease.token
                    try:
                        vectors = await self._embed(embedder, [p.text for p in part])
                    except EmbeddingUnavailableError:
                        if previous is not None:  # (read again only once it is stored)
                            await self._stored(previous)
                        raise
                    if previous is not None and not await self._stored(previous):
                        return
                    previous = Receipt()
                    await self._out.send(VectorsEmbedded(
                        model=embedder.label, hashes=tuple(p.content_hash for p in part),
                        vectors=vectors, receipt=previous, lease=token,
                    ))
                # stored before the next window is read, so no text is embedded twice
                if previous is not None and not await self._stored(previous):
                    return
        finally:
            self._stats.busy = False

    async def _stored(self, receipt: Receipt) -> bool:
        """Whether the batch was stored; one refused for a lease lost meanwhile gives
        the lease back (its new holder embeds the rest; this process tries to take it
        again, every second, as any process without it)."""
        await receipt.done.wait()
        if receipt.lost and self.lease is not None:
            logger.info("the embedding lease (%s) was lost while a batch was embedded: "
                        "nothing of it was stored, another process embeds the rest",
                        self.lease.where)
            await self.lease.give_back()
            self._ask_again()
        return receipt.stored

    def _ask_again(self) -> None:
        """The lease lost: the embedder tries to take it again (now, then every second
        while another process holds it)."""
        if self._wake is not None:
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError,
                                     anyio.BrokenResourceError):
                self._wake.send_nowait(EmbedWanted())

    async def _documents(self, embedder: Embedder, texts: list[str]) -> F32:
        if isinstance(embedder, ServerEmbedder):
            return await embedder.aembed_documents(texts)
        return await anyio.to_thread.run_sync(embedder.embed_documents, texts,
                                              limiter=self._limiter)

    async def _embed(self, embedder: Embedder, texts: list[str]) -> F32:
        """The texts' vectors; a text the model cannot embed gets a zero vector (counted
        in ``failures``), but when the embedding server does not answer, nothing does:
        ``EmbeddingUnavailableError``."""
        started = anyio.current_time()
        try:
            vectors = await self._documents(embedder, texts)
        except EmbeddingUnavailableError:
            raise
        except Exception:  # a model failure on one batch must not stop the pipeline
            import numpy as np

            logger.exception("embedding a batch of %d failed; trying one by one", len(texts))
            rows = []
            for text in texts:
                try:
                    one = await self._documents(embedder, [text])
                    rows.append(one[0])
                except EmbeddingUnavailableError:
                    raise
                except Exception:
                    logger.exception("cannot embed one chunk; storing a zero vector for it")
                    self._stats.failures += 1
                    rows.append(np.zeros(embedder.dim, dtype=np.float32))
            vectors = np.stack(rows).astype(np.float32)
        self._stats.seconds_in_model += anyio.current_time() - started
        self._stats.texts_embedded += len(texts)
        self._stats.batches += 1
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
