"""Which commits last changed each line of a range of a file, as ``git blame`` says
(lines changed and not yet committed are no commit's). Standard library only,
synchronous (run in a worker thread)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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


def blame(worktree: Path, rel: str, start: int, end: int) -> list[Blamed]:
    """The commits that last changed lines ``start``..``end`` (1-based, inclusive) of the
    file as it is in the work tree, newest first."""
    out = git(worktree, "blame", "--porcelain", "-w", "-L", f"{start},{end}", "--", rel)
    found: dict[str, Blamed] = {}
    current: Blamed | None = None
    for raw in out.split(b"\n"):
        if raw.startswith(b"\t"):
            continue  # (the line itself)
        line = raw.decode("utf-8", "replace")
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit() and head[2].isdigit():
            current = found.setdefault(head[0], Blamed(hash=head[0]))
            current.lines.append(int(head[2]))
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
    blamed = [b for b in found.values() if b.hash != _ZERO]
    return sorted(blamed, key=lambda b: -b.commit_time)
