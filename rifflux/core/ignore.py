"""Ignore files: ``.gitignore``, ``.ignore`` and ``.riffluxignore``, with git's own rules.

Each file applies to its folder and everything below it, its patterns relative
to that folder (anchoring, ``dir/`` patterns, ``**``, negation), matched by
pathspec's ``GitIgnoreSpec``. A deeper file's verdict wins over a shallower one's,
and within one folder ``.riffluxignore`` over ``.ignore`` over ``.gitignore``; the
last matching pattern of a file decides. A folder that is ignored is not entered,
so nothing inside it can be re-included (as in git). Whether the folder is a git
repository does not matter. This comes on top of the include and exclude globs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported where an ignore file is read)
    import pathspec

#: In increasing precedence within one folder.
IGNORE_FILES = (".gitignore", ".ignore", ".riffluxignore")


@dataclass(frozen=True, slots=True)
class _Level:
    prefix: str  # the folder's path relative to the root, with a trailing "/" ("" at the root)
    spec: pathspec.GitIgnoreSpec


Levels = tuple[_Level, ...]


def read_level(directory: str, rel_dir: str,
               names: Collection[str] | None = None) -> _Level | None:
    """The ignore rules of one folder (None when it has no ignore file); ``names``: every
    name in the folder, when the caller has read them all (no ignore file is looked up
    that is not among them)."""
    lines: list[str] = []
    for name in IGNORE_FILES:
        if names is not None and name not in names:
            continue
        path = os.path.join(directory, name)
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                continue  # never opened: a FIFO would block forever
            with open(path, encoding="utf-8", errors="replace") as f:
                lines += f.read().splitlines()
        except OSError:
            continue
    if not lines:
        return None
    import pathspec

    return _Level(rel_dir + "/" if rel_dir else "", pathspec.GitIgnoreSpec.from_lines(lines))


def ignored(levels: Levels, rel: str, is_dir: bool = False) -> bool:
    """Whether the ignore files of ``levels`` (root first) leave ``rel`` out."""
    for level in reversed(levels):
        if not rel.startswith(level.prefix):
            continue
        verdict = level.spec.check_file(rel[len(level.prefix):] + ("/" if is_dir else ""))
        if verdict.include is not None:
            return bool(verdict.include)
    return False


class IgnoreFiles:
    """The ignore rules of one root, for paths looked at one by one (watcher events):
    every folder on the way is read once and kept while its ignore files are unchanged."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._cache: dict[str, tuple[tuple[int, ...], _Level | None]] = {}

    def ignored(self, rel: str) -> bool:
        parts = rel.split("/")
        levels: list[_Level] = []
        for depth in range(len(parts)):
            rel_dir = "/".join(parts[:depth])
            if depth and ignored(tuple(levels), rel_dir, is_dir=True):
                return True  # a folder on the way is ignored: nothing inside comes back
            level = self._level(rel_dir)
            if level is not None:
                levels.append(level)
        return ignored(tuple(levels), rel)

    def _level(self, rel_dir: str) -> _Level | None:
        directory = os.path.join(self._root, rel_dir) if rel_dir else self._root
        stamp = tuple(_mtime(os.path.join(directory, name)) for name in IGNORE_FILES)
        cached = self._cache.get(rel_dir)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        level = read_level(directory, rel_dir) if any(stamp) else None
        self._cache[rel_dir] = (stamp, level)
        return level


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0
