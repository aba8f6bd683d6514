"""The supervisor: makes every stream, starts every actor in one task group, stops them.

Consumers start before producers (``await tg.start``): query, then indexer and
embedder, then the job feeder, debouncer and watcher. Shutdown runs the other
way: the watcher stops first, queued jobs are cancelled, a running job gets a
bounded grace period, then everything is cancelled and the connections closed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..config import Settings
from ..core.embedders import Embedder
from ..core.scan import Globs
from ..errors import RiffluxError
from ..store.reader import Reader
from ..store.schema import connect
from ..store.writer import Writer
from .debouncer import Debouncer
from .embedder import EmbedderActor
from .indexer import Indexer
from .jobs import Job, JobQueue, Target
from .messages import (
    DebouncedMessage,
    EmbedWanted,
    IndexBatch,
    QueryMessage,
    RescanRequested,
    VectorsReady,
    WatchMessage,
)
from .model import Gate, ModelState, PendingTracker
from .query import QueryActor
from .watcher import Watcher, WatchFactory

logger = logging.getLogger(__name__)


async def feed_jobs(
    inbox: MemoryObjectReceiveStream[DebouncedMessage], jobs: JobQueue,
    *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Debounced batches -> watcher jobs (merged into a queued job for the same root)."""
    async with inbox:
        task_status.started()
        async for msg in inbox:
            if isinstance(msg, RescanRequested):
                job = Job([Target(msg.root)], source="watcher")
            else:
                assert isinstance(msg, IndexBatch)
                job = Job(
                    [Target(msg.root, paths=set(msg.upserts), deletes=set(msg.deletes))],
                    source="watcher",
                )
            try:
                jobs.submit(job)
            except RiffluxError:
                logger.exception("could not queue a watcher batch for %s", msg.root)


class Supervisor:
    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        watch_factory: WatchFactory | None = None,
    ) -> None:
        self.settings = settings
        self.model = ModelState(settings.embedding_backend, settings.model_dir, embedder)
        self.jobs = JobQueue(history=settings.job_history, max_queued=settings.max_queued_jobs)
        self._watch_factory = watch_factory
        self._conns: list[aiosqlite.Connection] = []
        self._tg: TaskGroup | None = None
        self._watch_scope: anyio.CancelScope | None = None
        self._indexer_done = anyio.Event()
        self.query_send: MemoryObjectSendStream[QueryMessage] | None = None
        self.indexer: Indexer | None = None
        self.embedder: EmbedderActor | None = None
        self.query: QueryActor | None = None
        self.debouncer: Debouncer | None = None
        self.watcher: Watcher | None = None
        self.streams: dict[str, MemoryObjectSendStream[Any]] = {}
        self.watch_roots = [Path(p).expanduser().resolve() for p in settings.watch_paths]

    async def start(self) -> None:
        s = self.settings
        db = s.db_path.expanduser().resolve()
        try:
            self._conns.append(await connect(db, busy_timeout_ms=s.busy_timeout_ms))
            for _ in range(2):
                self._conns.append(
                    await connect(db, busy_timeout_ms=s.busy_timeout_ms, readonly=True))
        except BaseException:
            await self._close_connections()
            raise
        writer_conn = self._conns[0]
        query_reader = Reader(self._conns[1], db)
        embed_reader = Reader(self._conns[2], db)

        query_send, query_recv = anyio.create_memory_object_stream[QueryMessage](64)
        vec_send, vec_recv = anyio.create_memory_object_stream[VectorsReady](4)
        nudge_send, nudge_recv = anyio.create_memory_object_stream[EmbedWanted](1)
        self.streams = {"query": query_send, "vectors": vec_send, "embed_nudge": nudge_send}

        self.query = QueryActor(reader=query_reader, model=self.model, inbox=query_recv,
                                rrf_k=s.rrf_k, feedback=s.semantic_feedback,
                                feedback_weight=s.semantic_feedback_weight)
        gate, tracker = Gate(), PendingTracker()
        self.embedder = EmbedderActor(reader=embed_reader, model=self.model, nudges=nudge_recv,
                                      out=vec_send, batch_size=s.embed_batch_size,
                                      batch_chars=s.embed_batch_chars, gate=gate,
                                      enabled=not s.read_only, tracker=tracker)
        self.indexer = Indexer(writer=Writer(writer_conn, db), settings=s, jobs=self.jobs,
                               model=self.model, vectors_in=vec_recv, embed_nudge=nudge_send,
                               query_out=query_send.clone(), bulk_gate=gate, tracker=tracker)
        self.query_send = query_send

        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        try:
            await tg.start(self.query.run, name="rifflux.query")
            await tg.start(self.embedder.run, name="rifflux.embedder")
            await tg.start(self._run_indexer, name="rifflux.indexer")
            await tg.start(self.model.load, name="rifflux.model")
            if self.watch_roots:
                await tg.start(self._run_watch_pipeline, name="rifflux.watch")
        except BaseException:
            await self.stop()
            raise

    async def _run_indexer(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        assert self.indexer is not None
        try:
            await self.indexer.run(task_status=task_status)
        finally:
            self._indexer_done.set()

    async def _run_watch_pipeline(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        s = self.settings
        watch_send, watch_recv = anyio.create_memory_object_stream[WatchMessage](64)
        deb_send, deb_recv = anyio.create_memory_object_stream[DebouncedMessage](16)
        self.streams.update({"watch_events": watch_send, "debounced": deb_send})
        self.debouncer = Debouncer(inbox=watch_recv, out=deb_send, quiet=s.debounce_seconds)
        self.watcher = Watcher(
            roots=self.watch_roots,
            globs=Globs(s.include, s.exclude),
            out=watch_send,
            max_backoff=s.watcher_max_backoff,
            watch_factory=self._watch_factory,
        )
        with anyio.CancelScope() as scope:
            self._watch_scope = scope
            async with anyio.create_task_group() as tg:
                await tg.start(feed_jobs, deb_recv, self.jobs, name="rifflux.jobs.feed")
                await tg.start(self.debouncer.run, name="rifflux.debouncer")
                await tg.start(self.watcher.run, name="rifflux.watcher")
                # What is already in the folders is indexed at start, in the background.
                self.jobs.submit(Job([Target(r, requested=str(r)) for r in self.watch_roots],
                                     source="startup"))
                task_status.started()

    async def stop(self) -> None:
        """Watcher first, then queued jobs, then a bounded wait for the running job."""
        if self._watch_scope is not None:
            self._watch_scope.cancel()
        self.jobs.close()
        with anyio.move_on_after(self.settings.shutdown_grace_seconds, shield=True):
            await self._indexer_done.wait()
        try:
            if self._tg is not None:
                tg, self._tg = self._tg, None
                # Shielded: when the caller is itself being cancelled (Ctrl-C), an
                # unshielded exit would re-raise that cancellation before the actors
                # have finished. (The task group's own scope is shielded: a new scope
                # around its exit would not be the current one when it exits.)
                tg.cancel_scope.shield = True
                tg.cancel_scope.cancel()
                if self.query_send is not None:
                    self.query_send.close()
                await tg.__aexit__(None, None, None)
        finally:
            await self._close_connections()

    async def _close_connections(self) -> None:
        """Close every connection (each within 2 s, also when cancelled): an open one
        keeps a non-daemon thread, and so the process, alive."""
        conns, self._conns = self._conns, []
        for conn in conns:
            with anyio.move_on_after(2, shield=True):
                await conn.close()

    def stream_stats(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for name, stream in self.streams.items():
            st = stream.statistics()
            out[name] = {
                "buffered": st.current_buffer_used,
                "max_buffer": int(st.max_buffer_size),
                "waiting_senders": st.tasks_waiting_send,
            }
        return out
