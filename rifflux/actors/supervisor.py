"""The supervisor: opens the store (``store.opening``), makes every stream, starts
every actor in one task group, and stops them.

``async with Supervisor(settings) as service`` enters everything into an
``AsyncExitStack`` (as apscheduler v4's ``AsyncScheduler`` does) and hands out
the ``Service`` handle; leaving passes the exception information on. Consumers
start before producers (``await tg.start``): query, indexer, heartbeat, embedder,
model loader, then the watch pipeline. Shutdown runs the other way: the watcher
stops (its pipeline drains), queued jobs are cancelled, a running job gets a
bounded grace period, then the actors are cancelled and the store closed.

    watcher -> debouncer -> feeder -> JobQueue --JobsQueued--> indexer
    model loader --ModelLoaded--> indexer --ModelAdopted / EmbedWanted--> embedder
    embedder's timer --BackoffEnded--> embedder (an embedding server asked again)
    embedder --VectorsEmbedded--> indexer (the only writer)
    indexer --IndexChanged / VectorsReset--> query <--SearchRequested / ChunkRequested ...-- api
    other processes --change log--> indexer (Ticked: it looks) --IndexChanged--> query
    heartbeat (a connection of its own): this process's row among the others
    history (connections of its own): the repositories' commits, read as their refs move

Several processes may open one index: each follows the others' commits through
the change log, and only the holder of the embedding lease embeds. The actors know
the store only by its protocols (``store.protocols``): the same actors run on an
SQLite file and on a PostgreSQL database.
"""

from __future__ import annotations

import contextlib
import logging
import os
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from ..config import Settings
from ..store.opening import open_store
from ..store.protocols import PresenceStore
from .embedder import EmbedderActor
from .events import EventHub
from .heartbeat import Heartbeat
from .history import HistoryActor
from .indexer import Indexer
from .jobs import Job, JobQueue, Target
from .messages import (
    EmbedderMessage,
    EmbedWanted,
    IndexerMessage,
    JobsQueued,
    QueryMessage,
)
from .model import EmbedderSource, ModelLoader
from .query import QueryActor
from .rerank import open_reranker
from .service import Service

if TYPE_CHECKING:  # (the watch pipeline loads only where folders are watched)
    from .watch import WatchPipeline
    from .watcher import WatchFactory

logger = logging.getLogger(__name__)

#: How long the watch pipeline may take to drain at shutdown.
_DRAIN_SECONDS = 1.0


class Supervisor:
    def __init__(
        self,
        settings: Settings,
        *,
        embedder: EmbedderSource | None = None,
        watch_factory: WatchFactory | None = None,
    ) -> None:
        self._settings = settings
        self._embedder = embedder
        self._watch_factory = watch_factory
        self._roots = [Path(p).expanduser().resolve() for p in settings.watch_paths]
        self._exit: AsyncExitStack | None = None

    async def __aenter__(self) -> Service:
        s, roots = self._settings, self._roots
        async with AsyncExitStack() as stack:
            # This process among the others on the index: its changes are logged under
            # its origin, its presence kept fresh, and it embeds only with the lease.
            origin = f"{os.getpid()}-{os.urandom(6).hex()}"  # (uuid imports platform: 7 ms)
            store = await stack.enter_async_context(open_store(s, origin))

            indexer_send, indexer_recv = anyio.create_memory_object_stream[IndexerMessage](4)
            embed_send, embed_recv = anyio.create_memory_object_stream[EmbedderMessage](1)
            query_send, query_recv = anyio.create_memory_object_stream[QueryMessage](64)

            events = EventHub()
            stack.callback(events.close)  # (after the actors stop: their last events go out)
            loader = ModelLoader(backend=s.embedding_backend, model_dir=s.model_dir,
                                 out=indexer_send.clone(), given=self._embedder,
                                 warm=s.model_warmup,
                                 server=s if s.embed_url is not None else None)
            stack.push_async_callback(loader.aclose)  # (the embedding server's connections)

            def submitted() -> None:  # (a job's texts need vectors: the model loads)
                loader.want()
                _nudge(indexer_send)

            jobs = JobQueue(history=s.job_history, max_queued=s.max_queued_jobs,
                            on_submit=submitted, events=events)
            reranker = open_reranker(s)
            if reranker is not None:  # (its client closed after the actors stop)
                stack.push_async_callback(reranker.aclose)
            query = QueryActor(
                store=store, inbox=query_recv, rrf_k=s.rrf_k, feedback=s.semantic_feedback,
                feedback_weight=s.semantic_feedback_weight,
                other_language_share=s.other_language_share, want_model=loader.want,
                model_unreachable=loader.unreachable,
                reranker=reranker,
            )
            presence = store.presence
            if presence is not None:  # (before the store closes)
                stack.push_async_callback(_leave, presence)
            lease = store.lease

            def roles() -> list[str]:
                if s.read_only:
                    return ["reader"]
                return ["indexer", *(["embedder"] if lease and lease.held else []),
                        *(["watcher"] if roots else [])]

            indexer = Indexer(writer=store.writer, settings=s, jobs=jobs,
                              inbox=indexer_recv, embedder_out=embed_send,
                              query_out=query_send.clone(), retry_out=indexer_send.clone(),
                              follow=store.follow, events=events)
            embedder = EmbedderActor(reader=store.pending, inbox=embed_recv,
                                     out=indexer_send.clone(), batch_size=s.embed_batch_size,
                                     batch_chars=s.embed_batch_chars, lease=lease,
                                     wake=embed_send.clone())
            history: HistoryActor | None = None
            if s.history:
                history = HistoryActor(settings=s, events=events,
                                       model=lambda: loader.embedder,
                                       model_loaded=loader.loaded, watch=bool(roots),
                                       origin=origin,
                                       may_embed=None if lease is None else lambda: lease.held,
                                       claim=partial(_nudge_embedder, embed_send))
            pipeline: WatchPipeline | None = None
            if roots:
                from .watch import WatchPipeline

                pipeline = WatchPipeline(roots=roots, settings=s, jobs=jobs,
                                         watch_factory=self._watch_factory)
            streams: dict[str, MemoryObjectSendStream[Any]] = {
                "query": query_send, "indexer": indexer_send, "embedder": embed_send,
                **(pipeline.streams() if pipeline else {}),
            }

            tg = await stack.enter_async_context(anyio.create_task_group())

            async def stop() -> None:
                await self._stop(tg, jobs, pipeline, [indexer_send, query_send])

            stack.push_async_callback(stop)
            await tg.start(query.run, name="rifflux.query")
            await tg.start(indexer.run, name="rifflux.indexer")
            if presence is not None:
                await tg.start(Heartbeat(presence=presence, roles=roles).run,
                               name="rifflux.heartbeat")
            await tg.start(embedder.run, name="rifflux.embedder")
            await tg.start(loader.run, name="rifflux.model")
            if reranker is not None and s.model_warmup:
                tg.start_soon(reranker.warm, name="rifflux.rerank.warm")
            if history is not None:
                await tg.start(history.run, name="rifflux.history")
                stack.callback(history.close)
            if pipeline is not None:
                await tg.start(pipeline.run, name="rifflux.watch")
            if store.later is not None:  # (never a wait at shutdown: its thread is left)
                tg.start_soon(partial(anyio.to_thread.run_sync, abandon_on_cancel=True),
                              store.later, name="rifflux.check")
            recovery = store.recovery
            if recovery is not None and recovery.roots:
                # (they were indexed before, whatever their size)
                jobs.submit(Job([Target(r, requested=str(r)) for r in recovery.roots],
                                source="startup"))
            service = Service(
                settings=s, query=query_send, jobs=jobs, streams=streams, model=loader.snapshot,
                watcher=pipeline.snapshot if pipeline else None, embedder=embedder.snapshot,
                query_stats=query.snapshot, indexer=indexer.snapshot, recovery=recovery,
                origin=origin, roles=roles, model_loaded=loader.loaded, want_model=loader.want,
                where=store.where, capabilities=store.capabilities, events=events,
                counting=lambda: indexer.counting, condition=store.lexical.condition,
                check_server=loader.check_server, model_unreachable=loader.unreachable,
                reranker=reranker,
                history=history,
            )
            self._exit = stack.pop_all()
        return service

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack, self._exit = self._exit, None
        if stack is None:
            return None
        return await stack.__aexit__(exc_type, exc, tb)

    async def _stop(self, tg: TaskGroup, jobs: JobQueue, pipeline: WatchPipeline | None,
                    inboxes: list[MemoryObjectSendStream[Any]]) -> None:
        """Watcher first (its pipeline drains), then queued jobs, then a bounded wait for
        the running job; then every actor is cancelled."""
        try:
            if pipeline is not None:
                pipeline.stop()
            jobs.close()
            if pipeline is not None:
                with anyio.move_on_after(_DRAIN_SECONDS, shield=True):
                    await pipeline.stopped.wait()
            with anyio.move_on_after(self._settings.shutdown_grace_seconds, shield=True):
                await jobs.wait_idle()
        finally:
            for inbox in inboxes:
                inbox.close()
            tg.cancel_scope.cancel()


def _nudge(inbox: MemoryObjectSendStream[IndexerMessage]) -> None:
    try:
        inbox.send_nowait(JobsQueued())
    except anyio.WouldBlock:
        pass  # the inbox holds a message: the indexer looks at the queue after it
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # shutting down


def _nudge_embedder(inbox: MemoryObjectSendStream[EmbedderMessage]) -> None:
    """The embedder asked to take the embedding lease (and embed what lacks a vector)."""
    with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError,
                             anyio.BrokenResourceError):  # (a message is queued; or stopping)
        inbox.send_nowait(EmbedWanted())


async def _leave(presence: PresenceStore) -> None:
    """This process is no longer listed (a process that dies is simply no longer seen)."""
    try:
        with anyio.move_on_after(2, shield=True):
            await presence.leave()
    except Exception as exc:  # the index may be gone or locked: nothing to undo
        logger.debug("could not remove this process from the index's list: %s", exc)
