"""The shapes the history answers in (beside ``types.py``, as ``note_types.py``): a
commit hit, a commit shown whole, a file's history, the repositories known."""

from __future__ import annotations

# typing_extensions' TypedDict: pydantic on 3.11 reads only it (OpenAPI comes from these).
from typing_extensions import TypedDict

#: The fewest leading hex digits of a commit's hash that name it (``show``, every surface).
SHORTEST_HASH = 4


class CommitPath(TypedDict):
    path: str
    #: added, modified, deleted, renamed, copied, type changed
    change: str
    old_path: str | None  # (renamed, copied: the path it had)
    added: int  # lines
    removed: int
    binary: bool  # (named, never diffed)


class CommitMatch(TypedDict):
    """The part of a commit's change that matches the query best."""

    path: str | None  # (None: the match is in the message)
    hunk: str | None  # its hunk's header: ``@@ -12,3 +12,4 @@ the line before``
    text: str  # the lines, terms marked **...**


class CommitScores(TypedDict):
    score: float  # the order (hybrid: each branch's share of its best, averaged)
    lexical_rank: int | None
    semantic_rank: int | None
    bm25: float | None  # (FTS5's: lower is better)
    cosine: float | None


class CommitRef(TypedDict):
    hash: str
    short: str
    repo: str  # the repository's work tree
    title: str
    author: str
    author_email: str
    date: str  # the author's date, ISO 8601 with its offset as UTC
    committed: str  # the committer's date


class CommitHit(CommitRef):
    paths: list[CommitPath]  # (the first 20)
    paths_total: int
    match: CommitMatch | None
    scores: CommitScores


class CommitDetail(CommitRef):
    parents: list[str]
    committer: str
    committer_email: str
    body: str
    paths: list[CommitPath]
    change: str  # the summary kept: per file, its hunk headers and lines added and removed
    cut: bool  # the change was longer than the summary keeps
    truncated: bool  # (the answer was cut to its max_chars)


class PathCommit(CommitRef):
    """A commit in a file's history: the path the file had in it, and how it changed."""

    path: str
    change: str
    old_path: str | None
    #: Line history: the lines of the range (as they are now) this commit last changed.
    lines: list[int] | None


class HistoryRepo(TypedDict):
    path: str  # its work tree
    git_dir: str
    commits: int
    shallow: bool  # (a shallow clone: only the history it holds is searched)
    problem: str | None  # why its history could not be read (the notes are indexed anyway)


class HistoryAnswer(TypedDict):
    results: list[CommitHit]
    mode: str
    repositories: list[HistoryRepo]
    #: Commits without a vector yet (semantic search sees them once embedded).
    pending_embeddings: int
    #: Why the answer may say less than it should (a repository git cannot read, history
    #: turned off, no repository).
    problems: list[str]


class FileHistory(TypedDict):
    path: str
    repo: str | None
    start_line: int | None
    end_line: int | None
    commits: list[PathCommit]
    problems: list[str]


class HistoryStatus(TypedDict):
    """``status()``'s ``history`` (when it is on): what this process's history actor did."""

    syncing: bool  # reading a repository now
    repositories: int
    commits_read: int  # (by this process, since it started)
    commits_dropped: int
    commits_embedded: int
    embed_seconds: float  # (in the model and storing its vectors)
    pending_embeddings: int  # commit texts without a vector of the model (once it loaded)
    last_read_seconds: float | None  # the last read that found something new
    problems: list[str]
