"""The indexer: the only writer to the index, an actor with one inbox.

It handles one message at a time (``IndexerMessage``): it adopts a loaded model, stores
embedded vectors, and after every message runs the queued jobs, one at a time. A job
plans each target (``core.plan``), parses the changed files in worker processes or
threads and writes a few whole files per transaction, so a file is lexically searchable
as soon as its transaction commits. After every commit the query actor is told what
changed and the job queue applies its completion rule to the missing texts the store
keeps. Every job is an error boundary: busy/locked errors are retried after the
configured delays, any other failure fails that job, never the service. A note's
urgent job cuts in after a running job's commit.

Other processes may write to the same index: at each ``Ticked`` (a timer's, a few times
a second) the indexer reads their commits from the log (``store.protocols.FollowStore``)
and applies them as its own. The timer only sends: every statement on the writer's
connection runs on the indexer's own task, between its messages, never inside a job's
open transaction (this process's row in ``processes`` and the log's pruning are
``actors.heartbeat``'s, on a connection of its own).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..config import Settings
from ..core.ignore import IgnoreFiles
from ..core.packing import ChunkLimits
from ..core.scan import Globs
from ..errors import (
    IndexBusyError,
    IndexDamagedError,
    IndexUnreachableError,
    LeaseLostError,
    OtherModelError,
    RiffluxError,
)
from ..store.protocols import FollowStore, WriterStore
from ..store.written import Written
from .care import StoreCare
from .events import EventHub
from .jobs import Job, JobQueue, Target
from .messages import (
    EmbedderMessage,
    EmbedWanted,
    IndexChanged,
    IndexerMessage,
    IndexerSnapshot,
    ModelAdopted,
    ModelLoaded,
    QueryMessage,
    Ticked,
    VectorsEmbedded,
    VectorsReset,
)
from .parse_pool import ParsePool
from .tidying import Tidying

if TYPE_CHECKING:  # (the model's module is loaded with the model)
    from ..core.embedders import Embedder

logger = logging.getLogger(__name__)

#: Longest wait between attempts to adopt the model while the database is busy.
_ADOPT_MAX_DELAY = 5.0
#: Busy reads of other processes' changes, in a row, before reading everything instead.
FOLLOW_TRIES = 5


class Indexer:
    def __init__(
        self,
        *,
        writer: WriterStore,
        settings: Settings,
        jobs: JobQueue,
        inbox: MemoryObjectReceiveStream[IndexerMessage],
        embedder_out: MemoryObjectSendStream[EmbedderMessage],
        query_out: MemoryObjectSendStream[QueryMessage],
        retry_out: MemoryObjectSendStream[IndexerMessage],
        follow: FollowStore | None = None,
        events: EventHub | None = None,
    ) -> None:
        self._writer, self._events, self._follow = writer, events or EventHub(), follow
        self._follow_failures = 0  # busy reads of the change log in a row
        self._embedder: Embedder | None = None
        self._settings, self._jobs, self._inbox = settings, jobs, inbox
        self._embedder_out, self._query, self._retry_out = embedder_out, query_out, retry_out
        self._globs = Globs(settings.include, settings.exclude)
        #: Each root's ignore rules, kept: read again only where an ignore file changed.
        self._ignores: dict[str, IgnoreFiles] | None = {} if settings.use_ignore_files else None
        self._limits = ChunkLimits(
            max_chars=settings.chunk_max_chars, min_chars=settings.chunk_min_chars,
            code_max_chars=settings.code_max_chars, max_file_bytes=settings.max_file_bytes,
            max_root_files=settings.max_root_files, extract_seconds=settings.extract_seconds,
            max_text_chars=settings.max_text_chars)
        self._model: str | None = None
        self._pool, self._tidying = ParsePool(), Tidying()  # (what notes' jobs leave undone)
        self._adopt_error: str | None = None
        self._care = StoreCare(writer, read_only=settings.read_only)
        #: Set once the adoption under way has counted the texts lacking a vector (None: none yet)
        self.counting: anyio.Event | None = None
        self._stats: IndexerSnapshot = {"files_written": 0, "vectors_written": 0,
                                        "busy_retries": 0, "last_job_seconds": 0.0,
                                        "adopt_error": None, "pending": None}

    def snapshot(self) -> IndexerSnapshot:
        missing = self._writer.missing.texts
        return {**self._stats, "adopt_error": self._adopt_error,
                "pending": None if missing is None else len(missing)}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with self._inbox, self._embedder_out, self._query, self._retry_out, \
                    anyio.create_task_group() as timers:
                task_status.started()
                # (a read-only open of an index older than the change log: nothing to do)
                if self._follow is not None and self._follow.available:
                    timers.start_soon(self._tick, name="rifflux.indexer.follow")
                await self._reread_stale()
                await self._tell_languages()
                async for msg in self._inbox:
                    if isinstance(msg, ModelLoaded):
                        await self._adopt(msg, timers)
                    elif isinstance(msg, VectorsEmbedded):
                        await self._store_vectors(msg)
                    elif isinstance(msg, Ticked):
                        try:
                            await self._look()
                            await self._tidying.when_quiet(self._writer)
                        finally:
                            msg.looked.set()
                        self._care.mend_when_due(timers)
                    while (job := self._jobs.start_next()) is not None:
                        await self._run(job, upkeep=partial(self._care.upkeep_soon, timers))
                timers.cancel_scope.cancel()
        finally:
            await self._pool.aclose()

    async def _reread_stale(self) -> None:
        """Files an upgrade of the index marked stale are read again, in the background."""
        if self._settings.read_only:
            return
        try:
            roots = await self._writer.roots.stale_roots()
            if roots:
                logger.info("the index was upgraded: re-reading %s", ", ".join(map(str, roots)))
                self._jobs.submit(Job([Target(r, requested=str(r)) for r in roots],
                                      source="startup"))
        except Exception:  # the boundary: the next reindex reads them anyway
            logger.exception("cannot queue the re-reading of an upgraded index")

    # ------------------------------------------------------------ model and vectors

    async def _without_model(self, label: str | None, exc: Exception) -> int:
        """Semantic search off, saying why (no vectors are dropped: 0)."""
        if isinstance(exc, OtherModelError):
            self._adopt_error = str(exc)
        else:
            logger.error("cannot adopt model %s; semantic search is off", label, exc_info=exc)
            self._adopt_error = (f"the embedding model could not be adopted "
                                 f"({type(exc).__name__}: {exc}); semantic search is off")
        await self._writer.missing.adopt(
            None, partial(self._query.send, VectorsReset(embedder=None)))
        return 0

    async def _adopt(self, msg: ModelLoaded, timers: TaskGroup) -> None:
        """Make the loaded model the active one (vectors of others are dropped), then let
        the query actor load its matrix and the embedder start. When the database is
        busy, the message comes back later; jobs run meanwhile (and wait for it)."""
        embedder = msg.embedder
        label = embedder.label if embedder else None
        self.counting = counted = anyio.Event()
        switch = self._settings.switch_model and not msg.fallback
        try:  # (the matrix loads while the texts lacking a vector are read; a retry's afresh)
            dropped = await self._writer.missing.adopt(
                label, partial(self._query.send, VectorsReset(embedder=embedder)),
                switch=switch)
        except OtherModelError as exc:  # (the index's vectors kept: semantic search off,
            logger.info("%s", exc)  # and status and every answer say why)
            embedder, label, dropped = None, None, await self._without_model(label, exc)
        except RiffluxError as exc:
            if not isinstance(exc, IndexDamagedError):  # busy, most likely: try again
                delay = min(0.5 * 2 ** msg.attempt, _ADOPT_MAX_DELAY)
                logger.warning("cannot adopt model %s yet (%s); retrying in %.1fs", label,
                               exc, delay)
                timers.start_soon(self._send_later, replace(msg, attempt=msg.attempt + 1),
                                  delay, name="rifflux.indexer.adopt-retry")
                return
            # a damaged file stays damaged: searches must not wait for a model meanwhile
            embedder, label, dropped = None, None, await self._without_model(label, exc)
        except Exception as exc:  # the boundary: without a model, jobs still complete
            embedder, label, dropped = None, None, await self._without_model(label, exc)
        finally:
            counted.set()
        if dropped:
            logger.info("dropped %d vectors of another model; re-embedding", dropped)
        self._model, self._embedder = label, embedder
        self._care.upkeep_soon(timers)
        await self._embedder_out.send(
            ModelAdopted(embedder=None if self._settings.read_only else embedder))
        for job in self._jobs.awaiting_texts():  # written before the model was known
            await self._wait_for_vectors(job)
        self._settle()
        self._nudge_embedder()

    # ------------------------------------------------------------ other processes

    async def _tick(self) -> None:
        """Sends ``Ticked`` a few times a second, each once the last is handled: none piles up."""
        while True:
            tick = Ticked()
            try:
                await self._retry_out.send(tick)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return  # shutting down
            await tick.looked.wait()
            await anyio.sleep(self._settings.follow_seconds)

    async def _look(self) -> None:
        """Whether another process committed (a cheap pragma); if so, read what it did."""
        if self._follow is None or not self._follow.available:
            return
        try:
            if not await self._follow.others_wrote():
                return
        except Exception as exc:  # the boundary: look again at the next tick
            logger.debug("following other processes: %s", exc)
            return
        await self._others_wrote()

    async def _others_wrote(self) -> None:
        """Another process committed: apply what it changed as if it were ours. The log, the
        rows it names and the texts they lack are read in one snapshot, so every text of
        theirs ends up with its vector in the matrix or among the missing ones, never
        neither. Until that is done nothing counts as read: a failure is tried again at the
        next tick; an unexpected one reloads everything (the boundary: never a crash)."""
        assert self._follow is not None
        follow = self._follow
        try:
            async with self._writer.snapshot():
                foreign = await follow.read(self._model, self._writer.roots)
                if foreign is not None and not foreign.reload:
                    await self._writer.missing.changed_elsewhere(
                        files=foreign.written.files_replaced,  # every file written or deleted
                        texts_gone=foreign.texts_gone, embedded=foreign.embedded)
            if foreign is None:
                return
            if foreign.reload:  # the log no longer reaches back that far
                await self._read_everything_again()
            else:
                await self._committed(foreign.written)
                follow.done(foreign.upto)
                self._follow_failures = 0
        except IndexUnreachableError:  # the database is away: again once it is back
            follow.look_again()
            return
        except IndexBusyError as exc:  # another writer: the next tick tries again
            self._follow_failures += 1
            if self._follow_failures < FOLLOW_TRIES:
                logger.info("cannot read other processes' changes yet: %s", exc)
                follow.look_again()
                return
            logger.warning("other processes' changes stayed unreadable %d times (%s); "
                           "reading the whole index again instead", FOLLOW_TRIES, exc)
            await self._read_everything_again()
        except Exception as exc:  # the boundary: never a crash, never a change lost
            logger.warning("cannot apply other processes' changes (%s: %s); reading the "
                           "whole index again instead", type(exc).__name__, exc,
                           exc_info=not isinstance(exc, RiffluxError))
            await self._read_everything_again()
        self._nudge_embedder()

    async def _read_everything_again(self) -> None:
        """Instead of the changes another process made: the vectors, the catalog and the
        missing texts, whole (what a follower behind the pruned log does). Whatever of
        it fails waits for the next commit of another process."""
        assert self._follow is not None
        self._follow_failures = 0
        with contextlib.suppress(Exception):
            self._follow.done(await self._follow.sequence())
        try:
            await self._writer.missing.refresh()
        except RiffluxError as exc:
            logger.warning("cannot read the texts still to embed: %s", exc)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._query.send(VectorsReset(embedder=self._embedder, catalog=True))
        self._settle()

    async def _send_later(self, msg: IndexerMessage, delay: float) -> None:
        await anyio.sleep(delay)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._retry_out.send(msg)

    async def _store_vectors(self, msg: VectorsEmbedded) -> None:
        stored = lost = False
        try:
            if msg.model == self._model:
                written = await self._writer.write_vectors(msg.model, msg.hashes, msg.vectors,
                                                           lease=msg.lease)
                self._stats["vectors_written"] += len(msg.hashes)
                stored = True
                await self._committed(written, stored=frozenset(msg.hashes))
        except LeaseLostError as exc:  # (the lease's new holder embeds them)
            lost = True
            logger.info("%d vectors not stored: %s", len(msg.hashes), exc)
        except Exception:  # the boundary: they stay pending, the service goes on
            logger.exception("could not store %d vectors; they stay pending", len(msg.hashes))
        finally:
            msg.receipt.settle(stored, lost=lost)

    async def _committed(self, written: Written, stored: frozenset[str] = frozenset()) -> None:
        """After every commit: the matrix follows, and jobs are checked for completion."""
        if (written.removed or written.added_ids or written.files or written.files_removed
                or written.roots_removed or written.files_replaced or written.links):
            await self._query.send(IndexChanged(
                removed=written.removed, added_ids=written.added_ids,
                added_files=written.added_files, added_vectors=written.added_vectors,
                files=written.files, files_removed=written.files_removed,
                roots=written.roots, roots_removed=written.roots_removed,
                files_replaced=written.files_replaced, links=written.links))
        self._settle(stored)
        texts = self._writer.missing.texts
        self._events.committed(written, None if texts is None else len(texts))
        await self._cut_ins()

    async def _cut_ins(self) -> None:
        """The jobs that cut in (notes), run between two commits of a longer job."""
        while (urgent := self._jobs.cut_in()) is not None:
            await self._run(urgent)

    def _settle(self, stored: frozenset[str] = frozenset()) -> None:
        """Jobs are checked for completion against what changed among the missing texts."""
        missing = self._writer.missing
        self._jobs.settle(missing.texts, missing.take_left(), stored)

    def _nudge_embedder(self) -> None:
        if not self._writer.missing.texts:
            return
        try:
            self._embedder_out.send_nowait(EmbedWanted())
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # a message is already waiting (the embedder will look), or shutting down

    # ------------------------------------------------------------ jobs

    async def _run(self, job: Job, *, upkeep: Callable[[], None] | None = None) -> None:
        """One job, to the end of its attempts: the job fails, never the service. Once
        its files are written, ``upkeep`` (the store's, in the background) starts while
        the languages pass tells their chunks' languages."""
        # (the job's code and the parser load with the first job: a process that only
        # searches never imports them)
        from .index_job import IndexRun

        started = time.perf_counter()
        delays = self._settings.retry_delays
        try:
            while True:
                try:
                    await IndexRun(job, self._writer, self._globs, self._limits, self._pool,
                                   self._committed, ignores=self._ignores).execute()
                    break
                except IndexBusyError as exc:
                    if job.attempts > len(delays):
                        self._jobs.fail(job, f"{exc} (gave up after {job.attempts} attempts)")
                        return
                    self._stats["busy_retries"] += 1
                    self._jobs.retry_later(job, str(exc))
                    logger.warning("%s: database busy, retrying in %.1fs", job.id,
                                   delays[job.attempts - 1])
                    await anyio.sleep(delays[job.attempts - 1])
                    self._jobs.retry_now(job)
                except RiffluxError as exc:
                    logger.exception("%s failed", job.id)
                    self._jobs.fail(job, str(exc))
                    return
                except Exception as exc:  # the boundary: a bug fails one job, not the service
                    logger.exception("%s failed unexpectedly", job.id)
                    self._jobs.fail(job, f"internal error ({type(exc).__name__}: {exc}); files "
                                         "it had not written keep their previous index; "
                                         "please report it")
                    return
        except anyio.get_cancelled_exc_class():
            self._jobs.abandon(job)
            raise
        finally:
            self._stats["last_job_seconds"] = time.perf_counter() - started
            if upkeep is not None and job.status == "failed":  # (what it wrote, still)
                upkeep()
        self._stats["files_written"] += len(job.progress.indexed)
        await self._tidying.after(job, self._writer)
        await self._wait_for_vectors(job)  # (what it waits for is known once it is written)
        note = job.source == "note"  # (a note's few chunks are told before its writer's
        if note:  # answer, which says whether it is complete: at once when no vector waits)
            await self._tell_languages()
        self._jobs.mark_written(job)  # (lexically searchable: its callers may go)
        if note:
            self._settle()
        if upkeep is not None:
            upkeep()
        self._nudge_embedder()
        await self._tell_languages()
        self._settle()

    async def _tell_languages(self) -> None:
        """The languages of the chunks committed without them (``actors.languages``),
        before the next message: a job completes once they are told (and its vectors
        written). The boundary: what fails stays waiting for the next pass."""
        if self._settings.read_only:
            return
        from .languages import tell_languages

        async def told(written: Written) -> None:  # (the catalog's; no file was written)
            await self._query.send(IndexChanged(files=written.files))
            await self._cut_ins()

        try:
            await tell_languages(self._writer.telling, self._pool, told)
        except Exception:
            logger.exception("cannot tell the languages of the chunks written; they are "
                             "told at the next job or start")

    async def _wait_for_vectors(self, job: Job) -> None:
        """Which texts the written job waits for: those its scope lacks vectors for (known
        once the model is adopted; until then, the adoption), read from the database; then
        what other processes committed until then is applied (files of theirs the job found
        unchanged, their vectors), so this process's matrix and missing texts are at least
        as new as that read: the job completes only once a search here finds its texts."""
        missing = self._writer.missing.texts
        if missing is None:
            return
        try:
            texts = await self._writer.missing.in_scopes(job.progress.scopes)
        except Exception:  # waiting for every missing text still ends
            logger.exception("%s: cannot tell which texts it waits for; waiting for all", job.id)
            texts = set(missing)
        await self._look()
        self._jobs.wait_for(job, texts)
