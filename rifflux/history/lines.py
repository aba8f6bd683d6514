"""Which commits last changed each line of a range of a file, as ``git blame`` says
(lines changed and not yet committed are no commit's). Standard library only,
synchronous (run in a worker thread).

git blame costs the same for a range as for the whole file (it diffs every version of
the file it walks through: 1.2 s for pdf.js's evaluator.js, 609 commits, on a busy
machine), so the whole file is blamed once and kept (``Blames``: by the file's size,
mtime and the commit HEAD names), and every range of it is then answered from memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.extract.reading import clamped
from .git import git, unquote

_ZERO = "0" * 40


@dataclass(slots=True)
class Blamed:
    hash: str
    lines: list[int] = field(default_factory=list)  # (as the file is now)
    path: str = ""  # the path it had in that commit
    author: str = ""
    author_email: str = ""
    author_time: int = 0
    commit_time: int = 0
    title: str = ""


def where(path: Path) -> tuple[Path, str]:
    """The work tree holding ``path`` and the path relative to it (as commits name it)."""
    folder = path if path.is_dir() else path.parent
    top = Path(git(folder, "rev-parse", "--show-toplevel").decode("utf-8", "replace")
               .strip()).resolve()
    return top, path.resolve().relative_to(top).as_posix()


def blame(worktree: Path, rel: str) -> tuple[list[str], dict[str, Blamed]]:
    """The commit that last changed each line of the file as it is in the work tree (the
    zero hash: not committed yet), and each commit's details."""
    out = git(worktree, "blame", "--porcelain", "-w", "--", rel, timeout=300)
    commits: dict[str, Blamed] = {}
    owners: list[str] = []
    current: Blamed | None = None
    for raw in out.split(b"\n"):
        if raw.startswith(b"\t"):
            continue  # (the line itself)
        line = raw.decode("utf-8", "replace")
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit() and head[2].isdigit():
            current = commits.setdefault(head[0], Blamed(hash=head[0]))
            final = int(head[2])
            if final > len(owners):
                owners.extend([_ZERO] * (final - len(owners)))
            owners[final - 1] = head[0]
            continue
        if current is None:
            continue
        key, _, value = line.partition(" ")
        if key == "author":
            current.author = value
        elif key == "author-mail":
            current.author_email = value.strip("<>")
        elif key == "author-time":
            current.author_time = int(value)
        elif key == "committer-time":
            current.commit_time = int(value)
        elif key == "summary":
            current.title = value
        elif key == "filename":
            current.path = unquote(value.encode("utf-8", "surrogateescape"))
    return owners, commits


class Blames:
    """Files blamed whole, the last ``size`` of them, each kept while its bytes and the
    commit HEAD names are the same."""

    def __init__(self, size: int = 32) -> None:
        self._kept: OrderedDict[tuple[Any, ...], tuple[list[str], dict[str, Blamed]]] = \
            OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def range(self, worktree: Path, rel: str, start: int, end: int) -> list[Blamed]:
        """The commits that last changed lines ``start``..``end`` (1-based, inclusive),
        newest first, each with its lines of the range."""
        stat = (worktree / rel).stat()
        head = git(worktree, "rev-parse", "-q", "--verify", "HEAD").decode().strip()
        key = (str(worktree), rel, head, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
        if found is None:
            found = blame(worktree, rel)
            with self._lock:
                self._kept[key] = found
                while len(self._kept) > self._size:
                    self._kept.popitem(last=False)
        owners, commits = found
        start, end = clamped(start, end, len(owners), "line", Path(rel))  # (past the end:
        lines: dict[str, list[int]] = {}  # refused, as a file's lines are)
        for n in range(start, end + 1):
            lines.setdefault(owners[n - 1], []).append(n)
        out = [replace(commits[h], lines=lines[h]) for h in lines if h != _ZERO]
        return sorted(out, key=lambda b: -b.commit_time)
