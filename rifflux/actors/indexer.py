"""The indexer: the only SQLite writer.

It works through index jobs one at a time (one transaction per file, so a file
is lexically searchable as soon as its transaction commits), writes the
vectors the embedder sends back, and tells the query actor what changed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..config import Settings
from ..core.chunker import ChunkLimits
from ..core.document import Prepared, Unreadable, prepare_many
from ..core.scan import FileState, Globs, ScanProblem, scan_root, stat_file
from ..errors import IndexBusyError, RiffluxError
from ..store.writer import FileToWrite, FileWritten, StoredFile, Writer
from .jobs import Job, JobQueue, Target
from .messages import EmbedWanted, IndexChanged, QueryMessage, VectorsReady, VectorsReset
from .model import Gate, ModelState, PendingTracker
from .parse_pool import ParsePool

logger = logging.getLogger(__name__)

#: Files per worker call, and the job size above which parsing uses processes.
_PREPARE_GROUP = 16
_PROCESS_THRESHOLD = 64


@dataclass(slots=True)
class IndexerStats:
    files_written: int = 0
    vectors_written: int = 0
    last_job_seconds: float = 0.0
    busy_retries: int = 0


@dataclass(slots=True)
class _Plan:
    root: Path
    root_id: int
    known: dict[str, StoredFile]
    changed: list[FileState] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)


class Indexer:
    def __init__(
        self,
        *,
        writer: Writer,
        settings: Settings,
        jobs: JobQueue,
        model: ModelState,
        vectors_in: MemoryObjectReceiveStream[VectorsReady],
        embed_nudge: MemoryObjectSendStream[EmbedWanted],
        query_out: MemoryObjectSendStream[QueryMessage],
        bulk_gate: Gate | None = None,
        tracker: PendingTracker | None = None,
    ) -> None:
        self._tracker = tracker or PendingTracker()
        self.bulk_gate = bulk_gate or Gate()
        self._writer = writer
        self._settings = settings
        self._jobs = jobs
        self._model = model
        self._vectors_in = vectors_in
        self._nudge = embed_nudge
        self._query = query_out
        self._lock = anyio.Lock()  # one transaction at a time on the writer connection
        self._globs = Globs(settings.include, settings.exclude)
        self._limits = ChunkLimits(
            max_chars=settings.chunk_max_chars,
            min_chars=settings.chunk_min_chars,
            code_max_chars=settings.code_max_chars,
        )
        self._active_model: str | None = None
        self._pool = ParsePool()
        self.stats = IndexerStats()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._vectors_in, self._nudge, self._query:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._vector_loop, name="rifflux.indexer.vectors")
                    tg.start_soon(self._adopt_model, name="rifflux.indexer.model")
                    task_status.started()
                    await self._job_loop()
                    tg.cancel_scope.cancel()
            finally:
                await self._pool.aclose()

    # ------------------------------------------------------------ model

    async def _adopt_model(self) -> None:
        """Once the model is known: drop other models' vectors, reload the matrix."""
        await self._model.ready.wait()
        embedder = self._model.embedder
        if embedder is None:
            self._jobs.release_waiting(self._model.error or "no embedding model")
            return
        delay = 0.5
        while True:
            try:
                async with self._lock:
                    dropped = 0
                    if not self._settings.read_only:
                        dropped = await self._writer.drop_other_models(embedder.label)
                        await self._writer.set_meta("embedding_model", embedder.label)
                    self._active_model = embedder.label
                    self._tracker.changed()
                    for job in self._jobs.open_jobs():  # settled before the model was known
                        have = await self._writer.vectors_for(
                            embedder.label, sorted(job.outstanding)
                        )
                        job.outstanding -= set(have)
                    self._jobs.vectors_written(set())  # completes jobs left with nothing
                break
            except RiffluxError as exc:  # busy, most likely: try again, never crash
                logger.warning("cannot adopt model %s yet (%s); retrying", embedder.label, exc)
                await anyio.sleep(delay)
                delay = min(delay * 2, 30.0)
        if dropped:
            logger.info("dropped %d vectors of another model; re-embedding", dropped)
        await self._query.send(VectorsReset(model=embedder.label))
        self._model.adopted.set()
        self._nudge_embedder()

    def _nudge_embedder(self) -> None:
        try:
            self._nudge.send_nowait(EmbedWanted())
        except anyio.WouldBlock:
            pass  # a nudge is already waiting; the embedder will look at the database
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    # ------------------------------------------------------------ vectors

    async def _vector_loop(self) -> None:
        async for msg in self._vectors_in:
            try:
                if msg.model != self._active_model:
                    continue
                async with self._lock:
                    users = await self._writer.write_vectors(msg.model, msg.hashes, msg.vectors)
                    self._jobs.vectors_written(set(msg.hashes))
                self.stats.vectors_written += len(msg.hashes)
                if users:
                    ids = tuple(u[0] for u in users)
                    rows = np.asarray([u[1] for u in users], dtype=np.int64)
                    await self._query.send(
                        IndexChanged(added_ids=ids, added_vectors=msg.vectors[rows])
                    )
            except RiffluxError:
                logger.exception("could not store %d vectors; they stay pending", len(msg.hashes))
            finally:
                msg.written.set()

    # ------------------------------------------------------------ jobs

    async def _job_loop(self) -> None:
        while (job := await self._jobs.next()) is not None:
            started = time.perf_counter()
            await self._run_with_retry(job)
            self.stats.last_job_seconds = time.perf_counter() - started
            self._jobs.indexed(job)
            self._nudge_embedder()

    async def _run_with_retry(self, job: Job) -> None:
        delays = self._settings.retry_delays
        for attempt in range(len(delays) + 1):
            job.attempts = attempt + 1
            try:
                await self._run_job(job)
            except IndexBusyError as exc:
                if attempt == len(delays):
                    job.finish("failed", f"{exc} (gave up after {job.attempts} attempts)")
                    return
                self.stats.busy_retries += 1
                job.status, job.phase = "retry_wait", "retry_wait"
                job.error = str(exc)
                logger.warning("%s: database busy, retrying in %.1fs", job.id, delays[attempt])
                await anyio.sleep(delays[attempt])
                job.status, job.phase, job.error = "running", "indexing", None
            except RiffluxError as exc:
                logger.exception("%s failed", job.id)
                job.finish("failed", str(exc))
                return
            except Exception as exc:  # the actor boundary: a bug fails one job, not the service
                logger.exception("%s failed unexpectedly", job.id)
                job.finish("failed", f"internal error ({type(exc).__name__}: {exc}); "
                                     "unfinished files keep their previous index; please report it")
                return
            else:
                job.result = self._result(job)
                return

    def _result(self, job: Job) -> dict[str, Any]:
        skipped = job.skipped - job.indexed
        result: dict[str, Any] = {
            "indexed_files": len(job.indexed),
            "skipped_files": len(skipped),
            "removed_files": job.removed,
            "errors": list(job.problems),
        }
        if len(job.targets) > 1:
            result["indexed_paths"] = [t.requested or str(t.root) for t in job.targets]
        return result

    async def _run_job(self, job: Job) -> None:
        job.problems.clear()  # a retry reports afresh
        job.planned = 0
        scopes: list[tuple[int, str, set[str] | None]] = []
        for target in job.targets:
            if target.missing:
                job.problems.append({"path": target.requested, "error": target.missing})
                continue
            if not target.root.is_dir() and target.paths is None:
                # A full scan of a missing folder removes nothing: it may be an unmounted
                # drive or a typo. Named paths (watcher events) are still applied.
                job.problems.append(
                    {"path": target.requested or str(target.root),
                     "error": "folder not found; check the path (nothing was removed)"}
                )
                continue
            plan = await self._plan(job, target)
            job.planned += len(plan.changed)
            await self._apply(job, plan)
            scopes.append((plan.root_id, target.prefix, target.paths))
        if job.removed or job.indexed:
            async with self._lock:
                await self._writer.prune_orphan_vectors()
        await self._settle(job, scopes)

    async def _settle(self, job: Job, scopes: list[tuple[int, str, set[str] | None]]) -> None:
        """The job waits for every chunk it covers to have a vector: the ones it wrote,
        and unchanged ones that still lack one (after a model switch, say)."""
        if self._model.ready.is_set() and self._model.embedder is None:
            return  # nothing can embed: the job completes once indexed
        if self._active_model is not None and self._tracker.clean:
            job.outstanding = set()  # the embedder has seen nothing pending since
            return
        async with self._lock:
            model = self._active_model or ""  # before adoption: every chunk is pending
            outstanding: set[str] = set()
            for root_id, prefix, paths in scopes:
                outstanding |= await self._writer.pending_hashes(
                    model, root_id, prefix, None if paths is None else sorted(paths)
                )
            job.outstanding = outstanding

    async def _plan(self, job: Job, target: Target) -> _Plan:
        root_id = await self._writer.root_id(target.root)
        known = await self._writer.known_files(root_id)
        plan = _Plan(target.root, root_id, known)
        states: list[FileState] = []
        if target.paths is None:
            scan = await anyio.to_thread.run_sync(scan_root, target.root, self._globs)
            self._report(job, target.root, scan.problems)
            prefix = target.prefix
            states = [f for f in scan.files if f.rel_path.startswith(prefix)]
            present = {f.rel_path for f in states}
            plan.deletes = [r for r in known if r.startswith(prefix) and r not in present]
        else:
            wanted = sorted(p for p in target.paths if self._globs.wanted(p))
            results = await anyio.to_thread.run_sync(
                lambda: [(rel, stat_file(target.root, rel)) for rel in wanted]
            )
            gone = set(target.deletes)
            for rel, state in results:
                if isinstance(state, FileState):
                    states.append(state)
                elif isinstance(state, ScanProblem):
                    self._report(job, target.root, [state])
                else:
                    gone.add(rel)
            for rel in gone:
                # the last event said "deleted": trust the disk, which may disagree
                if rel in known and not (target.root / rel).is_file():
                    plan.deletes.append(rel)
        for state in states:
            stored = known.get(state.rel_path)
            if (
                stored is not None
                and not job.force
                and stored.mtime_ns == state.mtime_ns
                and stored.size == state.size
            ):
                job.skipped.add((str(target.root), state.rel_path))
            else:
                plan.changed.append(state)
        return plan

    def _report(self, job: Job, root: Path, problems: Sequence[ScanProblem]) -> None:
        for p in problems:
            job.problems.append({"path": str(root / p.path), "error": p.error})

    async def _apply(self, job: Job, plan: _Plan) -> None:
        items = [
            (f.rel_path, plan.known[f.rel_path].sha256 if f.rel_path in plan.known else None)
            for f in plan.changed
        ]
        groups = [items[i : i + _PREPARE_GROUP] for i in range(0, len(items), _PREPARE_GROUP)]
        use_processes = len(items) > _PROCESS_THRESHOLD
        send, receive = anyio.create_memory_object_stream[
            list[Prepared | Unreadable | tuple[str, None]]
        ](4)
        root_key = str(plan.root)

        async def prepare(group: list[tuple[str, str | None]]) -> None:
            args = (plan.root, group, job.force, self._limits)
            res = None
            if use_processes:
                try:
                    res = await self._pool.run(*args)
                except RiffluxError:  # a worker died: do this group in a thread instead
                    logger.exception("parse worker failed; parsing %d files here", len(group))
            if res is None:
                res = await anyio.to_thread.run_sync(prepare_many, *args)
            await send.send(res)

        async def producer() -> None:
            async with send:
                limiter = anyio.CapacityLimiter(2)

                async def one(group: list[tuple[str, str | None]]) -> None:
                    async with limiter:
                        await prepare(group)

                async with anyio.create_task_group() as tg:
                    for group in groups:
                        tg.start_soon(one, group)

        if use_processes:
            self.bulk_gate.close()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(producer, name="rifflux.indexer.prepare")
                async with receive:
                    async for batch in receive:
                        await self._write_group(job, plan, root_key, batch)
        except BaseExceptionGroup as group:
            # A database error inside the group: hand the retry logic the error itself.
            ours, others = group.split(RiffluxError)
            if ours is None or others is not None:
                raise
            errors = [e for e in _leaves(ours) if isinstance(e, RiffluxError)]
            busy = [e for e in errors if isinstance(e, IndexBusyError)]
            raise (busy or errors)[0] from group
        finally:
            self.bulk_gate.open()
        if plan.deletes:
            async with self._lock:
                removed = await self._writer.delete_files(plan.root_id, plan.deletes)
                if removed:
                    await self._forget_replaced()
            job.removed += len(plan.deletes)
            if removed:
                await self._query.send(IndexChanged(removed=removed))

    async def _write_group(
        self, job: Job, plan: _Plan, root_key: str,
        results: list[Prepared | Unreadable | tuple[str, None]],
    ) -> None:
        to_write: list[FileToWrite] = []
        touches: list[tuple[int, Prepared]] = []
        for res in results:
            if isinstance(res, tuple):  # vanished between listing and reading
                if res[0] in plan.known:
                    plan.deletes.append(res[0])
            elif isinstance(res, Unreadable):
                job.problems.append({"path": str(plan.root / res.rel_path), "error": res.error})
            elif res.document is None and res.rel_path in plan.known:
                touches.append((plan.known[res.rel_path].id, res))
            elif res.document is not None:
                to_write.append(FileToWrite(res.rel_path, res.mtime_ns, res.size, res.sha256,
                                            res.document.metadata, res.document.chunks))
        if touches:
            async with self._lock:
                for file_id, res in touches:
                    await self._writer.touch(file_id, res.mtime_ns, res.size)
            job.skipped.update((root_key, res.rel_path) for _, res in touches)
        if not to_write:
            return
        async with self._lock:
            written = await self._writer.write_files(plan.root_id, to_write)
            self._tracker.changed()
            if any(w.removed_rowids for w in written):
                await self._forget_replaced()
        self.stats.files_written += len(to_write)
        job.indexed.update((root_key, f.rel_path) for f in to_write)
        await self._after_write(job, written)

    async def _forget_replaced(self) -> None:
        """Open jobs stop waiting for texts that chunks were just replaced or deleted
        away from (under the lock, right after that write)."""
        waited = self._jobs.outstanding()
        if waited:
            self._jobs.forget(waited - await self._writer.present_hashes(waited))

    async def _after_write(self, job: Job, written: list[FileWritten]) -> None:
        removed = tuple(r for w in written for r in w.removed_rowids)
        added = [a for w in written for a in w.added]
        added_ids: list[int] = []
        added_vecs: list[bytes] = []
        missing = False
        # Under the lock, so the vector loop cannot write one of these hashes between
        # the look-up and the matrix update.
        async with self._lock:
            model = self._active_model
            if model is not None and added:
                have = await self._writer.vectors_for(model, [h for _, h in added])
                for rowid, h in added:
                    blob = have.get(h)
                    if blob is None:
                        missing = True
                    else:
                        added_ids.append(rowid)
                        added_vecs.append(blob)
        vectors = (
            np.frombuffer(b"".join(added_vecs), dtype=np.float32).reshape(len(added_vecs), -1)
            if added_vecs
            else None
        )
        await self._query.send(
            IndexChanged(removed=removed, added_ids=tuple(added_ids), added_vectors=vectors)
        )
        if missing:
            self._nudge_embedder()


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]
