"""One attempt at an index job, as the indexer runs it: plan each target, parse the
changed files in parallel, write them a few whole files per transaction.

Parsing is CPU-bound pure Python: for more than a few dozen files it runs in
the indexer's worker processes (both cores, and the event loop stays free),
otherwise in threads. The writes stay on the indexer's task, in order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from ..core.document import ParseResult, Prepared, Skipped, Unreadable, prepare_many
from ..core.ignore import IgnoreFiles
from ..core.locations import too_many_files
from ..core.packing import ChunkLimits
from ..core.plan import Plan, Scope, StoredState, plan_named, plan_scan
from ..core.scan import FileState, Globs, ScanProblem, ScanResult, scan_root, stat_file
from ..errors import RiffluxError
from ..store.protocols import WriterStore
from ..store.written import FileToWrite, Written
from .jobs import Job, Progress, Target
from .parse_pool import ParsePool

logger = logging.getLogger(__name__)

#: Files per worker call, and the job size above which parsing uses processes.
_PREPARE_GROUP = 16
_PROCESS_THRESHOLD = 64
#: At most this many files are written in one transaction (groups parsed meanwhile).
_WRITE_FILES = 64

OnCommit = Callable[[Written], Awaitable[None]]


class IndexRun:
    def __init__(self, job: Job, writer: WriterStore, globs: Globs, limits: ChunkLimits,
                 pool: ParsePool, on_commit: OnCommit, *,
                 ignores: dict[str, IgnoreFiles] | None = None) -> None:
        """``ignores``: each root's ignore rules, kept from run to run while the ignore
        files are unchanged (the indexer's); None when ignore files are not obeyed."""
        self._job = job
        self._ignores = ignores
        self._use_ignore_files = ignores is not None
        self._progress: Progress = job.progress
        self._writer = writer
        self._roots = writer.roots
        self._globs = globs
        self._limits = limits
        self._pool = pool
        self._on_commit = on_commit

    async def execute(self) -> None:
        for target in self._job.targets:
            await self._roots.load()  # (one read of the roots per target)
            if target.missing:
                self._problem(target.requested, target.missing)
                continue
            if target.forget:
                await self._forget(target)
                continue
            if target.paths is None and not await anyio.Path(target.root).is_dir():
                # A full scan of a missing folder removes nothing: it may be an unmounted
                # drive or a typo. Named paths (watcher events) are still applied.
                self._problem(target.requested or str(target.root),
                              "folder not found; check the path (nothing was removed)")
                continue
            target, root_id = await self._within_root(target)
            scan = await self._scan(target) if target.paths is None else None
            if root_id is None and scan is not None and self._too_large(target, scan):
                continue
            while root_id is None:
                root_id = await self._roots.root_id(target.root)
                if root_id is None:  # another process indexed a parent folder meanwhile
                    target, _ = await self._within_root(target)
                    scan = await self._scan(target) if target.paths is None else None
            if target.paths is None:  # (a file's folder does not take in its neighbours)
                await self._absorb(target.root, root_id)
            known = await self._writer.known_files(root_id)
            plan = await self._plan(target, known, scan)
            self._progress.planned += len(plan.changed)
            root_key = str(target.root)
            self._progress.skipped.update((root_key, rel) for rel in plan.unchanged)
            await self._apply(target.root, root_id, known, plan)
            paths = None if target.paths is None else tuple(sorted(target.paths | target.deletes))
            self._progress.scopes.append(Scope(root_id, target.prefix, paths))

    def _too_large(self, target: Target, scan: ScanResult) -> bool:
        """A new folder nobody named (``target.limited``: the working directory of a reindex
        given no path) with more candidate files than the limit is refused; a folder
        named explicitly is indexed whatever its size, its progress in the job's status."""
        found, limit = len(scan.files), self._limits.max_root_files
        if found <= limit:
            return False
        if not target.limited:
            logger.info("indexing %s: %s files, more than max_root_files (%s), as it was "
                        "named explicitly", target.root, f"{found:,}", f"{limit:,}")
            return False
        self._problem(target.requested or str(target.root),
                      too_many_files(found, limit, target.root))
        return True

    async def _within_root(self, target: Target) -> tuple[Target, int | None]:
        """A folder inside an indexed root is that part of the root: roots never overlap,
        whoever asks (a reindex, a watcher, after another process indexed the parent).
        With the root's id (None: not indexed yet)."""
        root_id = self._roots.find_root(target.root)
        if root_id is not None:
            return target, root_id
        found = self._roots.root_containing(target.root)
        if found is None:
            return target, None
        container_id, container = found
        inside = target.root.relative_to(container).as_posix() + "/"
        if target.paths is None:
            return replace(target, root=container, prefix=inside + target.prefix), container_id
        return replace(target, root=container,
                       paths=frozenset(inside + p for p in target.paths),
                       deletes=frozenset(inside + p for p in target.deletes)), container_id

    async def _absorb(self, root: Path, root_id: int) -> None:
        """Roots never overlap: an indexed folder inside this one becomes part of it (its
        files keep their chunks and vectors, and are stored once)."""
        for child_id, child in self._roots.roots_inside(root):
            prefix = child.relative_to(root).as_posix() + "/"
            written = await self._roots.absorb(root_id, child_id, prefix)
            await self._on_commit(written)

    async def _forget(self, target: Target) -> None:
        """Remove a root with everything under it, or the files below a path inside one
        (``prefix``: a folder or a file), or every root inside ``target.root``."""
        root_id = self._roots.find_root(target.root)
        if root_id is not None and target.prefix:
            known = await self._writer.known_files(root_id)
            folder = target.prefix.rstrip("/") + "/"
            gone = sorted(rel for rel in known
                          if rel == target.prefix.rstrip("/") or rel.startswith(folder))
            if not gone:
                self._problem(target.requested or str(target.root),
                              "no indexed file there; nothing was removed")
                return
            await self._forgotten(await self._writer.delete_files(root_id, gone), gone)
            return
        inside = [] if root_id is not None else self._roots.roots_inside(target.root)
        if root_id is None and not inside:
            self._problem(target.requested or str(target.root),
                          "not in the index; nothing was removed (status lists the "
                          "indexed folders)")
            return
        for forget_id in [root_id] if root_id is not None else [i for i, _ in inside]:
            assert forget_id is not None
            gone = sorted(await self._writer.known_files(forget_id))
            await self._forgotten(await self._roots.forget_root(forget_id), gone)

    async def _forgotten(self, written: Written, paths: list[str]) -> None:
        self._progress.removed += len(written.files_removed)
        self._progress.removed_paths += paths[:50]
        await self._on_commit(written)

    def _problem(self, path: str, error: str) -> None:
        self._progress.problems.append({"path": path, "error": error})

    def _warn(self, path: str, reason: str) -> None:
        self._progress.warnings.append({"path": path, "reason": reason})

    def _report(self, root: Path, problems: Sequence[ScanProblem]) -> None:
        for p in problems:
            if p.skipped:
                self._warn(str(root / p.path), p.error)  # (its name shown escaped)
            else:
                self._problem(str(root / p.path), p.error)

    async def _scan(self, target: Target) -> ScanResult:
        scan = await anyio.to_thread.run_sync(
            lambda: scan_root(target.root, self._globs,
                              count_left_out=self._job.count_left_out,
                              use_ignore_files=self._use_ignore_files))
        self._report(target.root, scan.problems)
        for why, n in scan.left_out.items():
            self._progress.left_out[why] = self._progress.left_out.get(why, 0) + n
        return scan

    async def _plan(self, target: Target, known: dict[str, StoredState],
                    scan: ScanResult | None) -> Plan:
        force = self._job.force
        if scan is not None:
            return plan_scan(scan.files, known, prefix=target.prefix, force=force,
                             unseen=[p.path for p in scan.problems if p.unseen])
        assert target.paths is not None
        wanted = sorted(p for p in target.paths | target.deletes if self._globs.wanted(p))
        rules = None
        if self._ignores is not None:
            rules = self._ignores.get(str(target.root))
            if rules is None:
                rules = self._ignores[str(target.root)] = IgnoreFiles(str(target.root))
        stats = await anyio.to_thread.run_sync(
            lambda: [(rel, None if rules and rules.ignored(rel) else stat_file(target.root, rel))
                     for rel in wanted])
        states: dict[str, FileState | None] = {}
        for rel, state in stats:
            if isinstance(state, ScanProblem):
                self._report(target.root, [state])
            else:
                states[rel] = state
        for rel in target.deletes:  # not wanted any more, but stored: the event says gone
            states.setdefault(rel, None)
        return plan_named(states, known, force=force)

    async def _apply(self, root: Path, root_id: int, known: dict[str, StoredState],
                     plan: Plan) -> None:
        items = plan.to_read(known)
        groups = [items[i : i + _PREPARE_GROUP] for i in range(0, len(items), _PREPARE_GROUP)]
        use_processes = len(items) > _PROCESS_THRESHOLD
        send, receive = anyio.create_memory_object_stream[ParseResult](4)
        force, limits = self._job.force, self._limits

        async def prepare(group: list[tuple[str, str | None]]) -> ParseResult:
            if use_processes:
                try:
                    return await self._pool.run(root, group, force, limits)
                except RiffluxError:  # a worker died: do this group in a thread instead
                    logger.exception("parse worker failed; parsing %d files here", len(group))
            return await anyio.to_thread.run_sync(prepare_many, root, group, force, limits)

        async def produce() -> None:
            async with send:
                limiter = anyio.CapacityLimiter(2)

                async def one(group: list[tuple[str, str | None]]) -> None:
                    # The slot is held until the writer takes the result: when writing
                    # falls behind, parsing waits instead of taking the writer's core.
                    async with limiter:
                        result = await prepare(group)
                        try:
                            await send.send(result)
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                            pass  # the writer stopped (it failed): its error ends the job

                async with anyio.create_task_group() as tg:
                    for group in groups:
                        tg.start_soon(one, group)

        failure: RiffluxError | None = None
        # (``send`` closed here too: the producer closes it when done, but a job
        # cancelled before the producer started left it to the garbage collector)
        with send:
            async with anyio.create_task_group() as tg:
                tg.start_soon(produce, name="rifflux.indexer.prepare")
                try:
                    async with receive:
                        async for results in receive:
                            await self._write(root, root_id, known, plan,
                                              _with_waiting(results, receive))
                except RiffluxError as exc:  # hand the job's retry logic the error itself
                    failure = exc
                    tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if plan.deletes:
            written = await self._writer.delete_files(root_id, plan.deletes)
            self._progress.removed += len(plan.deletes)
            self._progress.removed_paths += plan.deletes[:50]
            await self._on_commit(written)

    async def _write(self, root: Path, root_id: int, known: dict[str, StoredState], plan: Plan,
                     results: ParseResult) -> None:
        to_write: list[FileToWrite] = []
        touches: list[tuple[int, int, int]] = []
        root_key = str(root)
        for res in results:
            if isinstance(res, tuple):  # vanished between listing and reading
                if res[0] in known:
                    plan.deletes.append(res[0])
            elif isinstance(res, Unreadable):
                self._problem(str(root / res.rel_path), res.error)
            elif isinstance(res, Skipped):  # not markdown text (any more)
                self._warn(str(root / res.rel_path), res.reason)
                if res.rel_path in known:
                    plan.deletes.append(res.rel_path)
            elif res.document is None:  # the same bytes: only mtime and size change
                if res.rel_path in known:
                    touches.append((known[res.rel_path].id, res.mtime_ns, res.size))
                    self._progress.skipped.add((root_key, res.rel_path))
            else:
                if res.warning:
                    self._warn(str(root / res.rel_path), res.warning)
                to_write.append(_to_write(res))
        if touches:
            await self._on_commit(await self._writer.touch(touches))
        if to_write:
            written = await self._writer.write_files(root_id, to_write)
            self._progress.indexed.update((root_key, f.rel_path) for f in to_write)
            await self._on_commit(written)


def _with_waiting(results: ParseResult,
                  receive: MemoryObjectReceiveStream[ParseResult]) -> ParseResult:
    """``results`` with the groups already parsed and waiting, up to ``_WRITE_FILES``
    files: one transaction for what the workers parsed while the last one was written
    (fewer commits, full-text segments and round trips when writing is the slower)."""
    batch = list(results)
    while len(batch) < _WRITE_FILES:
        try:
            batch += receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
    return batch


def _to_write(res: Prepared) -> FileToWrite:
    assert res.document is not None
    return FileToWrite(res.rel_path, res.mtime_ns, res.size, res.sha256,
                       res.document.metadata, res.document.chunks, res.document.line_count,
                       res.encoding, res.document.links, res.cjk, res.kind)
