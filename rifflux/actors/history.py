"""The history actor: keeps the commits of the repositories that hold the indexed
folders in the store, and embeds them.

Its inbox is told when the history may have changed (``HistoryWanted``: at start,
when a reindex job ends, when a watched repository's refs move) and when the model
has loaded (``HistoryModelReady``). It coalesces what is queued (a ``git pull`` moves
several refs at once: one read), finds the repositories (``history.repos``) and reads
only what is new in each (``history.sync``); a task beside it embeds the commits
without a vector, newest first, so that a new commit is searchable lexically without
waiting for a backlog of vectors.

It writes on a connection of its own (the history's tables and the commits'
vectors, never a chunk: the indexer stays the only writer of the notes; SQLite
serialises the two, each transaction short). Searches run on a reader connection
(``history.search``), never through this inbox, so a long first read of a large
history never holds one up. On PostgreSQL the same, on a pool of its own
(``store.postgres.history``): its writes take the writers' lock, each short.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup, TaskStatus

from ..config import Settings
from ..core.scan import Globs
from ..errors import RiffluxError
from ..history.ignored import left_out
from ..history.repos import Repository, find_repositories, ref_files
from ..history.rows import HistoryFollowing, HistoryRows
from ..history.search import HistorySearch
from ..history.sync import Synced, sync_repository
from ..history_types import HistoryStatus
from ..store.sqlite.history_changes import note
from .events import EventHub, JobChanged
from .history_rows import opened_rows
from .messages import HistoryMessage, HistoryModelReady, HistoryWanted

if TYPE_CHECKING:

    from ..core.embedders import Embedder

logger = logging.getLogger(__name__)

#: Commits embedded per batch.
EMBED_BATCH = 32
#: While a backlog is embedded, semantic search sees its new vectors this often (s).
_SHOW_EVERY = 5.0
#: A read that failed is tried again after this long (s).
_RETRY_SECONDS = 10.0
#: How often a process that may not embed (another holds the lease) looks again, in s.
_LEASE_LOOK = 2.0


class HistoryActor:
    def __init__(self, *, settings: Settings, events: EventHub,
                 model: Callable[[], Embedder | None], model_loaded: anyio.Event,
                 watch: bool, origin: str = "",
                 may_embed: Callable[[], bool] | None = None,
                 claim: Callable[[], None] | None = None) -> None:
        self._settings = settings
        #: Whether this process embeds for the index now: it holds the embedding lease (as
        #: for chunks: one process embeds, the others read its vectors); ``claim`` asks the
        #: embedder to take it (it alone takes it, and then embeds what the index lacks).
        self._may_embed = may_embed
        self._claim = claim
        self._lease_held = may_embed is None
        self._globs = Globs(settings.include, settings.exclude)
        #: This process in the change log: the others learn of its writes under it.
        self._origin = origin or f"history-{id(self)}"
        self._untold = False  # (a write the others were not told of yet)
        self._follow: HistoryFollowing | None = None  # (other processes' writes)
        self._events = events
        self._model = model
        self._model_loaded = model_loaded
        self._watch = watch
        self._send, self._inbox = anyio.create_memory_object_stream[HistoryMessage](8)
        self.search: HistorySearch | None = None
        self._writer: HistoryRows | None = None
        self._watching: dict[Path, anyio.CancelScope] = {}
        self._repos: list[Repository] = []
        self._problems: list[str] = []
        self._stats = {"read": 0, "dropped": 0, "embedded": 0}
        self._syncing = False
        self._last: float | None = None
        #: The commit texts without a vector, oldest first, and for which model and read.
        self._lacking: dict[str, None] = {}
        self._lacking_for: tuple[str, int] | None = None
        self._read_count = 0
        self._embed_seconds = 0.0
        self._retrying = False
        #: Set when commits may lack vectors (after a read, once the model has loaded).
        self._embedding = anyio.Event()
        self._shown = 0.0  # (when the matrix was last told of new vectors)
        #: Set after each read of the repositories (then made anew).
        self._synced = anyio.Event()
        self._asked = 0  # reads asked for ...
        self._done = 0  # ... and the last one a finished read began after

    def snapshot(self) -> HistoryStatus:
        return {"syncing": self._syncing, "repositories": len(self._repos),
                "commits_read": self._stats["read"], "commits_dropped": self._stats["dropped"],
                "commits_embedded": self._stats["embedded"],
                "embed_seconds": round(self._embed_seconds, 3),
                "pending_embeddings": self.pending,
                "last_read_seconds": None if self._last is None else round(self._last, 3),
                "problems": list(self._problems)}

    def _left_out(self, root: Path, worktree: Path) -> bool:
        """Whether the ignore rules leave a repository's history out (``history.ignored``)."""
        s = self._settings
        return left_out(root, worktree, self._globs, use_ignore_files=s.use_ignore_files)

    @property
    def problems(self) -> list[str]:
        """Why the history may hold less than it should (repositories git cannot read),
        or ranks otherwise than it should (a PostgreSQL server without its BM25 index)."""
        condition = None if self.search is None else self.search.rows.condition()
        return [*self._problems, *([condition] if condition else [])]

    def want(self, why: str) -> None:
        """Read what is new (a message; dropped when one is queued already)."""
        self._asked += 1
        with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError,
                                 anyio.BrokenResourceError):
            self._send.send_nowait(HistoryWanted(why=why))

    async def caught_up(self) -> None:
        """Return once a read has begun and finished since the last ``want``."""
        if self._writer is None:
            return  # (nothing is read: a read-only index)
        target = self._asked
        while self._done < target:
            await self._synced.wait()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        s = self._settings
        try:
            async with opened_rows(self._settings, self._origin) as (reader, writer, follow):
                self.search = HistorySearch(reader, model=self._model)
                self._writer = writer
                self._follow = follow
                if follow is not None:
                    await follow.others_wrote()  # (from now: before a search loads the matrix)
                async with self._inbox, anyio.create_task_group() as tg:
                    task_status.started()
                    if follow is not None:
                        tg.start_soon(self._follow_others, follow,
                                      name="rifflux.history.follow")
                    if self._writer is None:  # (a read-only open: searches only, on the
                        async for _ in self._inbox:  # rows kept open until it closes)
                            pass
                        tg.cancel_scope.cancel()
                        return
                    tg.start_soon(self._wait_for_model, name="rifflux.history.model")
                    tg.start_soon(self._embed_when_wanted, name="rifflux.history.embed")
                    if s.history_unasked:
                        tg.start_soon(self._follow_jobs, name="rifflux.history.jobs")
                        self.want("start")
                    await self._serve(tg)
                    tg.cancel_scope.cancel()
        finally:
            self._inbox.close()  # (also when the index could not be opened)

    def close(self) -> None:
        self._send.close()

    async def _serve(self, tg: TaskGroup) -> None:
        assert self._writer is not None
        async for message in self._inbox:
            wanted = isinstance(message, HistoryWanted)
            await anyio.sleep(self._settings.debounce_seconds)  # (a burst of ref moves)
            while True:  # what else is queued comes with it
                try:
                    more = self._inbox.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):  # (or closed meanwhile)
                    break
                wanted = wanted or isinstance(more, HistoryWanted)
            try:
                if wanted:
                    await self._read(tg)
                self._embedding.set()  # (the embedding task takes what lacks a vector)
            except Exception:  # the boundary: a failure must not end the service
                logger.exception("reading the git history failed; it is tried again in "
                                 "%.0f s (or at the next change)", _RETRY_SECONDS)
                if not self._retrying:
                    self._retrying = True
                    tg.start_soon(self._retry, name="rifflux.history.retry")

    async def _read(self, tg: TaskGroup) -> None:
        assert self._writer is not None and self.search is not None
        self._syncing = True
        began = self._asked
        try:
            roots = await self._writer.roots()
            repos, problems = await anyio.to_thread.run_sync(
                find_repositories, roots, self._left_out)
            await self._writer.keep_repos([r.git_dir for r in repos])
            self._repos = repos
            found: list[Synced] = []
            for repo in repos:
                found.append(await sync_repository(
                    self._writer, repo, budget=self._settings.history_diff_chars,
                    on_batch=lambda n: self.search.changed() if self.search else None))
            self._problems = problems + [s.problem for s in found if s.problem]
            self._stats["read"] += sum(s.added for s in found)
            self._stats["dropped"] += sum(s.dropped for s in found)
            if any(s.added or s.dropped for s in found):
                self.search.changed()
                self._read_count += 1
                self._untold = True
            await self._tell_others()
            embedder = self._model()
            if embedder is not None and self._lacking_for != (embedder.label,
                                                              self._read_count):
                self._lacking = dict.fromkeys(await self._writer.lacking(embedder.label))
                self._lacking_for = (embedder.label, self._read_count)
                self._last = sum(s.seconds for s in found)
            if self._watch:
                for repo in repos:
                    if repo.git_dir not in self._watching:
                        tg.start_soon(self._watch_refs, repo, name="rifflux.history.refs")
        finally:
            self._syncing = False
            self._done = max(self._done, began)
            self._synced.set()
            self._synced = anyio.Event()

    @property
    def pending(self) -> int:
        """Commit texts without a vector of the model (0 before it is known)."""
        return len(self._lacking)

    async def _embed_when_wanted(self) -> None:
        """The embedding task: beside the reads, never before one (a batch takes seconds
        on a busy machine; a new commit is searchable lexically without waiting for it)."""
        while True:
            # (a process without the embedding lease looks again now and then: its holder
            # may stop, and this one take it)
            with anyio.move_on_after(_LEASE_LOOK if self._lacking and not self._lease_held
                                     else math.inf):
                await self._embedding.wait()
            self._embedding = anyio.Event()
            try:
                await self._embed()
            except Exception:  # the boundary: a failure must not end the service
                logger.exception("embedding commits failed; it is tried again at the next "
                                 "read of the history")

    async def _embed(self) -> None:
        """Embed commits without a vector, newest first, until none is left or a message
        arrives. Which lack one is read once per read of the history (a batch costs what
        it holds, never the history's size)."""
        assert self._writer is not None and self.search is not None
        import numpy as np

        limiter = anyio.CapacityLimiter(1)
        while (embedder := self._model()) is not None:
            if self._lacking_for != (embedder.label, self._read_count):
                self._lacking = dict.fromkeys(await self._writer.lacking(embedder.label))
                self._lacking_for = (embedder.label, self._read_count)
            if not self._lacking or not self._embeds():
                return
            batch = list(islice(reversed(self._lacking), EMBED_BATCH))
            texts = await self._writer.texts(batch)
            for h in batch:
                if h not in texts:  # (its commits were dropped meanwhile)
                    self._lacking.pop(h, None)
            hashes = [h for h in batch if h in texts]
            if not hashes:
                continue
            started = anyio.current_time()
            vectors = await anyio.to_thread.run_sync(
                embedder.embed_documents, [texts[h] for h in hashes], limiter=limiter)
            vecs = np.ascontiguousarray(vectors, dtype=np.float32)
            await self._writer.store_vectors(embedder.label, hashes,
                                             [v.tobytes() for v in vecs], vecs.shape[1])
            for h in hashes:
                self._lacking.pop(h, None)
            self._stats["embedded"] += len(hashes)
            self._embed_seconds += anyio.current_time() - started
            # the matrix is loaded again once the backlog is done, or every few seconds
            # meanwhile (not after every batch: a load reads every commit's vector)
            self._untold = True
            if not self._lacking or anyio.current_time() - self._shown > _SHOW_EVERY:
                self._shown = anyio.current_time()
                self.search.changed()
                await self._tell_others()

    def _embeds(self) -> bool:
        """Whether this process embeds commits now (it holds the embedding lease; if not,
        the embedder is asked to take it, and this is asked again in ``_LEASE_LOOK``)."""
        if self._may_embed is not None:
            self._lease_held = self._may_embed()
            if not self._lease_held and self._claim is not None:
                self._claim()
        return self._lease_held

    async def _tell_others(self) -> None:
        """Other processes on the index learn that commits or their vectors changed (their
        matrices are loaded again: ``store.sqlite.history_changes``)."""
        from ..store.sqlite.history import HistoryRows as SqliteRows

        if not self._untold or not isinstance(self._writer, SqliteRows):
            return  # (PostgreSQL: each write logs itself, in its transaction)
        try:
            await note(self._writer.conn, self._writer.db_path, self._origin)
            self._untold = False
        except RiffluxError as exc:  # (told with the next write, or the next read)
            logger.info("cannot tell other processes of the history's changes: %s", exc)

    async def _follow_others(self, follow: HistoryFollowing) -> None:
        """Other processes' reads and embeddings, looked for as the indexer looks for their
        files (every ``follow_seconds``: SQLite, one pragma a look; PostgreSQL, nothing
        until a notification comes, or a look at the log's last number on a replica):
        the commit matrix is loaded
        again at the next semantic search after one wrote (lexical search reads the
        store, and sees their commits at once); and the commits they read are embedded
        here when this process holds the embedding lease (what lacks a vector read again)."""
        assert self.search is not None
        while True:
            await anyio.sleep(self._settings.follow_seconds)
            if await follow.others_wrote():
                self.search.changed()
                if self._writer is not None:
                    self._lacking_for = None
                    self._embedding.set()

    async def _retry(self) -> None:
        """A read that failed (the index locked by a long write, a full disk) is tried
        again later, even when nothing else moves."""
        await anyio.sleep(_RETRY_SECONDS)
        self._retrying = False
        self.want("a failed read is tried again")

    async def _follow_jobs(self) -> None:
        """A reindex that ends may have added or removed an indexed folder."""
        async with self._events.subscribe() as events:
            async for event in events:
                if isinstance(event, JobChanged) and event.job["status"] == "completed":
                    self.want("a reindex ended")

    async def _wait_for_model(self) -> None:
        await self._model_loaded.wait()
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._send.send(HistoryModelReady())

    async def _watch_refs(self, repo: Repository) -> None:
        """The repository's refs (HEAD, refs/, packed-refs), watched: a move is a read."""
        from watchfiles import awatch

        git_dir = repo.git_dir
        watched = {str(p) for p in ref_files(repo)}

        def is_ref(_change: object, path: str) -> bool:
            return path in watched or path.startswith(str(git_dir / "refs") + "/") or (
                path.startswith(str(git_dir / "worktrees") + "/") and path.endswith("/HEAD"))

        with anyio.CancelScope() as scope:
            self._watching[git_dir] = scope
            try:
                async for _ in awatch(git_dir, watch_filter=is_ref, debounce=50, step=20,
                                      recursive=True, ignore_permission_denied=True):
                    self.want(f"the refs of {repo.worktree} moved")
            except Exception as exc:  # (the repository went away: its next read says so)
                logger.info("stopped watching the refs of %s: %s", repo.worktree, exc)
            finally:
                self._watching.pop(git_dir, None)
