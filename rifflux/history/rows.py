"""What both stores keep of the history, and how the history's modules ask for it: the
``HistoryRows`` protocol (SQLite: ``store.sqlite.history``; PostgreSQL:
``store.postgres.history``), a search's filters as one SQL condition both stores run
(``?`` placeholders: PostgreSQL numbers them, ``connection.numbered``), the columns of
a commit's row as an answer reads them, and the weights of a commit's fields in its
lexical rank."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..store.statements import like_prefix
from .git import RawCommit

#: bm25's weights of a commit's fields: title, body, paths, change. (The body weighs
#: little: a merge's body repeats its branch's title, and ranked a commit's own title
#: below it; 200 pdf.js titles: 139 first at 4, 161 at 2 with the title phrase.)
WEIGHTS = (10, 2, 1, 1)
_WORD = re.compile(r"\w+")
#: The longest phrase a query makes of its words, for the title.
PHRASE_WORDS = 32

#: A commit's row as hits and ``show_commit`` read it (``search.ref``), over the commit
#: ``c`` and its repository ``r`` (the same columns in both stores).
ROW_SELECT = ("SELECT c.id, c.hash, r.worktree, c.title, c.author_name, c.author_email, "
              "c.author_time, c.commit_time, c.summary, c.body, c.parents, "
              "c.committer_name, c.committer_email, c.cut FROM commits c "
              "JOIN history_repos r ON r.id = c.repo_id")


def title_words(query: str) -> list[str]:
    """The words of ``query`` that rank a commit whose title holds them as one phrase
    (both stores add that phrase to the query's own: a commit whose title the query is
    comes above a merge whose body repeats it); none for a query of one word."""
    words = _WORD.findall(query)[:PHRASE_WORDS]
    return words if len(words) >= 2 else []


@dataclass(frozen=True, slots=True)
class Prepared:
    """A batch of a repository's commits ready to be written (``HistoryRows.prepare``):
    ``rows`` in the store's own form."""

    repo_id: int
    commits: Sequence[RawCommit]
    rows: Sequence[Any]


@dataclass(frozen=True, slots=True)
class RepoState:
    id: int
    tips: list[str]
    problem: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryFilters:
    """What a history search keeps (None: no condition)."""

    repos: tuple[int, ...] | None = None
    paths: tuple[str, ...] | None = None  # relative to a repository's top, or under it
    author: str | None = None  # a part of the author's name or email, any case
    since: int | None = None  # commit time, seconds since the epoch, inclusive
    before: int | None = None  # exclusive

    def any(self) -> bool:
        return any(v is not None for v in (self.repos, self.paths, self.author, self.since,
                                           self.before))

    def clause(self) -> tuple[str, list[Any]]:
        """SQL over the commit ``c`` (``?`` placeholders, in both stores' dialect), and
        its parameters."""
        parts: list[str] = []
        args: list[Any] = []
        if self.repos is not None:
            parts.append(f"c.repo_id IN ({','.join('?' * len(self.repos))})"
                         if self.repos else "FALSE")
            args += self.repos
        if self.author:
            pattern = "%" + like_prefix(self.author.lower())[:-1] + "%"
            parts.append("(lower(c.author_name) LIKE ? ESCAPE '\\' OR "
                         "lower(c.author_email) LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        if self.since is not None:
            parts.append("c.commit_time >= ?")
            args.append(self.since)
        if self.before is not None:
            parts.append("c.commit_time < ?")
            args.append(self.before)
        if self.paths is not None:
            ors = []
            for path in self.paths:
                path = path.strip("/")
                if not path:
                    ors.append("TRUE")
                    continue
                ors.append("p.path = ? OR p.path LIKE ? ESCAPE '\\' OR p.old_path = ?")
                args += [path, like_prefix(path + "/"), path]
            parts.append("EXISTS (SELECT 1 FROM commit_paths p WHERE p.commit_id = c.id "
                         f"AND ({' OR '.join(ors) or 'FALSE'}))")
        return " AND ".join(parts) or "TRUE", args


class HistoryRows(Protocol):
    """The history's statements on one store (a writer's connection, or a reader's)."""

    #: How many batches a read may write side by side (``write``).
    WRITES: int

    def condition(self) -> str | None:
        """How the lexical leg ranks now, when an answer should say so (None: nothing)."""
        ...

    async def roots(self) -> list[Path]: ...

    async def repo(self, git_dir: Path, worktree: Path, shallow: bool) -> RepoState:
        """The repository's row (made when new), and what was read of it last."""
        ...

    async def read(self, repo_id: int, *, tips: Sequence[str] | None,
                   problem: str | None) -> None:
        """What was read of a repository: its tips (None: kept as they were), or why not."""
        ...

    async def keep_repos(self, git_dirs: Iterable[Path]) -> int:
        """Forget the repositories no indexed folder is in any more (their commits go)."""
        ...

    async def repositories(self) -> list[dict[str, Any]]: ...

    async def hashes(self, repo_id: int) -> set[str]: ...

    def prepare(self, repo_id: int, commits: Sequence[RawCommit]) -> Prepared:
        """The commits as ``write`` writes them (their documents, and on PostgreSQL their
        tokens): work for the CPU only, done in the worker thread that reads git, while
        the store writes the batch before."""
        ...

    async def write(self, batch: Prepared) -> int:
        """The commits, as documents, in one transaction (one already there is left as
        it is); how many were new."""
        ...

    async def drop(self, repo_id: int, hashes: Sequence[str]) -> int:
        """Commits no branch reaches any more (their paths and lexical rows go too)."""
        ...

    async def lacking(self, model: str) -> list[str]:
        """The commit texts without a vector of ``model``, oldest commits first."""
        ...

    async def texts(self, hashes: Sequence[str]) -> dict[str, str]:
        """The texts the vectors of these commit texts are made of, by their hashes."""
        ...

    async def store_vectors(self, model: str, hashes: Sequence[str], blobs: Sequence[bytes],
                            dim: int) -> None: ...

    async def vectors(self, model: str) -> list[tuple[int, bytes]]:
        """Every commit with a vector of ``model``: (commit id, float32 bytes)."""
        ...

    async def lexical(self, query: str, limit: int, filters: HistoryFilters
                      ) -> tuple[list[tuple[int, float]], str | None]:
        """The best ``limit`` commits for ``query`` by FTS5's bm25 (lower is better), the
        title phrase (``title_words``) among its phrases; equal scores, oldest row first.
        And what the answer should say of how they were found (None: nothing; PostgreSQL:
        a prefix with more completions than its BM25 index is asked for)."""
        ...

    async def allowed(self, filters: HistoryFilters) -> set[int]: ...

    async def rows(self, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        """The commits' rows (``ROW_SELECT``'s columns), by id."""
        ...

    async def paths(self, ids: Sequence[int]) -> dict[int, list[tuple[Any, ...]]]:
        """Each commit's changed paths: (path, change, old path, added, removed, binary)."""
        ...

    async def find(self, prefix: str, repos: tuple[int, ...] | None = None) -> list[int]:
        """The commits whose hash starts with ``prefix`` (at most two: more is ambiguous)."""
        ...

    async def touching(self, repo_id: int, path: str, limit: int
                       ) -> list[tuple[int, str, str, str | None]]:
        """The commits that changed ``path`` in a repository, newest first, following its
        renames back: (commit id, path then, change, old path)."""
        ...


class HistoryFollowing(Protocol):
    """How a process looks for other processes' writes of commits or their vectors."""

    async def others_wrote(self) -> bool:
        """Whether another process changed commits or their vectors since the last call
        (the first call only starts following)."""
        ...


def others_looked(seen: int | None, oldest: int | None, last: int | None,
                  theirs: int | None) -> tuple[int, bool]:
    """What a look at the change log found after ``seen`` (``None``: the first look,
    which only starts following): the last sequence number seen now, and whether
    another process wrote commits or their vectors since. ``last`` is the log's last
    number after ``seen`` (``None``: no row after it), ``theirs`` the last of other
    processes' history rows there, ``oldest`` the log's first number. Rows pruned past
    ``seen`` (the log now starts after it) may have held theirs: that counts too. A
    gap in the numbers does not: PostgreSQL's sequence skips those of rolled-back
    writes."""
    if last is None:
        return seen or 0, False
    if seen is None:
        return last, False
    return last, theirs is not None or (oldest is not None and oldest > seen + 1)


#: One step of a file's history: the commits that changed ``path`` at or before a commit
#: time, newest first: (commit id, commit time, path, change, old path).
Step = Callable[[str, int], Awaitable[list[tuple[Any, ...]]]]


async def follow_renames(step: Step, path: str, limit: int
                         ) -> list[tuple[int, str, str, str | None]]:
    """The commits that changed ``path``, newest first, followed back through its renames
    (and copies) to the commit that added it: (commit id, path then, change, old path)."""
    out: list[tuple[int, str, str, str | None]] = []
    seen: set[int] = set()
    current: str | None = path
    bound = 1 << 62
    while current is not None and len(out) < limit:
        rows = await step(current, bound)
        follow: str | None = None
        for r in rows:
            cid = int(r[0])
            if cid in seen:
                continue
            seen.add(cid)
            out.append((cid, str(r[2]), str(r[3]), r[4]))
            if r[3] in ("renamed", "copied") and r[4]:
                follow, bound = str(r[4]), int(r[1])
                break
            if r[3] == "added":
                break
        current = follow
    return out[:limit]
