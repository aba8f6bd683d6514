"""Bringing a repository's commits in the store up to its branches: only what is new is
read, and what no branch reaches any more is dropped.

What the store holds of a repository is every commit reachable from the tips it
read last. So when the branches move, ``git rev-list NEW --not OLD`` names the
commits to read and ``git rev-list OLD --not NEW`` the ones to drop, each at the
cost of the difference (a commit, a fetch, a rebase, a branch switch): nothing
reads the whole history again on restart. When an old tip is gone from the object
store (a rebase and a gc), the commits reachable now are compared with the ones
held instead. git reads in a worker thread while the store writes what it has read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import anyio
import anyio.from_thread

from .git import GitError, git, read_commits
from .repos import Repository, tips
from .rows import HistoryRows, Prepared

logger = logging.getLogger(__name__)

#: Commits read, made documents and written at a time (a PostgreSQL write's upkeep, its
#: word counts, costs per batch as much as per commit).
BATCH = 1024


@dataclass(frozen=True, slots=True)
class Synced:
    repo: Repository
    added: int = 0
    dropped: int = 0
    seconds: float = 0.0
    problem: str | None = None


async def sync_repository(rows: HistoryRows, repo: Repository, *, budget: int,
                          on_batch: Callable[[int], None] | None = None) -> Synced:
    """Read what is new in ``repo`` into the store and drop what is gone; a repository
    git cannot read is left as it was, with its problem recorded (and returned)."""
    started = time.perf_counter()
    state = await rows.repo(repo.git_dir, repo.worktree, repo.shallow)
    try:
        now = await anyio.to_thread.run_sync(tips, repo)
        if set(now) == set(state.tips):
            if state.problem is not None:
                await rows.read(state.id, tips=None, problem=None)
            return Synced(repo=repo)
        old = await anyio.to_thread.run_sync(_present, repo, state.tips)
        if len(old) == len(state.tips):
            revisions = [*now, *(f"^{t}" for t in old)]
            gone = await anyio.to_thread.run_sync(
                _rev_list, repo, [*old, *(f"^{t}" for t in now)]) if old else []
            added = await _read(rows, state.id, repo, revisions, budget, False, on_batch)
        else:  # (a tip read last is gone: compare what is reachable with what is held)
            reachable = set(await anyio.to_thread.run_sync(_rev_list, repo, now)) if now else set()
            held = await rows.hashes(state.id)
            gone = sorted(held - reachable)
            new = sorted(reachable - held)
            added = await _read(rows, state.id, repo, new, budget, True, on_batch) if new else 0
        dropped = await rows.drop(state.id, gone) if gone else 0
        await rows.read(state.id, tips=now, problem=None)
    except GitError as exc:
        problem = f"the history of {repo.worktree} cannot be read: {exc}"
        logger.warning("%s", problem)
        await rows.read(state.id, tips=None, problem=problem)
        return Synced(repo=repo, problem=problem, seconds=time.perf_counter() - started)
    return Synced(repo=repo, added=added, dropped=dropped,
                  seconds=time.perf_counter() - started)


def _present(repo: Repository, hashes: Sequence[str]) -> list[str]:
    """The commits of ``hashes`` the object store still holds."""
    if not hashes:
        return []
    out = git(repo.worktree, "cat-file", "--batch-check=%(objectname) %(objecttype)",
              input="".join(f"{h}\n" for h in hashes).encode())
    return [line.split()[0] for line in out.decode("ascii", "replace").splitlines()
            if line.endswith(" commit")]


def _rev_list(repo: Repository, revisions: Sequence[str]) -> list[str]:
    out = git(repo.worktree, "rev-list", "--stdin",
              input="".join(f"{r}\n" for r in revisions).encode(), timeout=600)
    return out.decode("ascii").split()


async def _read(rows: HistoryRows, repo_id: int, repo: Repository, revisions: list[str],
                budget: int, exact: bool, on_batch: Callable[[int], None] | None) -> int:
    """git's commits written as they are read (git, the parsing and each batch's
    documents in a worker thread, the writes here: the next batch is made while the
    store writes the last, ``rows.WRITES`` batches written side by side); how many were
    new."""
    send, receive = anyio.create_memory_object_stream[Prepared](2)
    added = 0

    def produce() -> None:
        with send:
            for batch in read_commits(repo.worktree, revisions, budget=budget,
                                      no_walk=exact, batch=BATCH):
                anyio.from_thread.run(send.send, rows.prepare(repo_id, batch))

    failure: list[GitError] = []

    async def run_producer() -> None:
        try:
            await anyio.to_thread.run_sync(produce)
        except GitError as exc:
            failure.append(exc)

    writes = anyio.Semaphore(rows.WRITES)

    async def write(prepared: Prepared) -> None:
        nonlocal added
        try:
            added += await rows.write(prepared)
        finally:
            writes.release()
        if on_batch is not None:
            on_batch(len(prepared.commits))

    # (``send`` closed here too: the producer's thread closes it when done, but a read
    # cancelled before that thread started left it to the garbage collector)
    with send:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(run_producer), name="rifflux.history.read")
            async with receive, anyio.create_task_group() as writing:
                async for prepared in receive:
                    await writes.acquire()  # (at most ``rows.WRITES`` batches at once)
                    writing.start_soon(write, prepared, name="rifflux.history.write")
    if failure:
        raise failure[0]
    return added
