"""Roots + globs -> the files to index, with their (mtime_ns, size).

Include patterns without a ``/`` match the file name; patterns with one match
the path relative to the root. Exclude patterns also match any directory name
on the way, so ``node_modules`` is skipped at every depth.

Symbolic links: a link to a file inside the same root is skipped (the file
itself is indexed once, under its real path); a link that leaves the root is
indexed under the link's path. Directory links are followed only when they
leave the root, and each real directory is entered once, so a link loop ends.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import NamedTuple

from ..config import DEFAULT_EXCLUDE as _DEFAULT_EXCLUDE
from ..config import NEVER_INDEXED
from ..kinds import DEFAULT_GLOBS, DEFAULT_KINDS
from .ignore import Levels, ignored, read_level


class FileState(NamedTuple):
    """A file found on disk (a tuple: a scan makes one per file, 63,000 for a no-op of a
    large folder, and sorts them by path as they are)."""

    rel_path: str  # posix, relative to the root
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class ScanProblem:
    path: str
    error: str
    #: Whether the path could not be looked at (its stored files are then kept); a
    #: broken link was looked at: what it pointed to is gone.
    unseen: bool = True
    #: Left out on purpose, with the reason in ``error`` (a warning, not a failure).
    skipped: bool = False


#: Why a file or folder whose name is not valid UTF-8 is left out.
_NOT_UTF8 = ("skipped: its name is not valid UTF-8 (the index, and every answer in JSON, "
             "holds names as text); rename it, for example with `convmv -f latin1 -t utf8`, "
             "to index it")


def unnamable(rel: str) -> ScanProblem | None:
    """A problem when ``rel`` (as ``os`` decodes a name: bad bytes as surrogates) is not
    valid UTF-8, which the index cannot hold; the path shown with its bad bytes escaped."""
    if rel.isascii():
        return None
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
        return ScanProblem(shown, _NOT_UTF8, unseen=False, skipped=True)
    return None


def _unlisted(rel_dir: str, exc: OSError) -> ScanProblem:
    return ScanProblem(rel_dir or ".",
                       f"cannot list directory (what was indexed under it is kept): {exc}")


@dataclass(slots=True)
class ScanResult:
    files: list[FileState] = field(default_factory=list)
    problems: list[ScanProblem] = field(default_factory=list)
    #: Files the globs left out, by why (counted only when asked: see ``scan_root``).
    left_out: dict[str, int] = field(default_factory=dict)


class _Matcher:
    """Glob patterns compiled into two regular expressions: name-only and path patterns."""

    def __init__(self, patterns: Iterable[str]) -> None:
        names = [p for p in patterns if "/" not in p]
        paths = [p[3:] if p.startswith("**/") else p for p in patterns if "/" in p]
        self._name = re.compile("|".join(fnmatch.translate(p) for p in names)) if names else None
        self._path = (
            re.compile("|".join(f"(?:.*/)?{fnmatch.translate(p)}" for p in paths))
            if paths
            else None
        )

    def __call__(self, rel: str, name: str | None = None) -> bool:
        """Whether ``rel`` (its last part ``name``, when the caller has it) matches."""
        if self._name is not None and self._name.match(name or rel.rsplit("/", 1)[-1]):
            return True
        return self._path is not None and self._path.match(rel) is not None


class Globs:
    """Which files a root's scan takes. Immutable; compiled once."""

    def __init__(self, include: Iterable[str], exclude: Iterable[str]) -> None:
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self._inc = _Matcher(self.include)
        # (Rifflux's own files, a writable folder's trash and temporary files, always)
        self._exc = _Matcher((*self.exclude, *NEVER_INDEXED))
        self._each_exc = [(p, _Matcher([p])) for p in (*self.exclude, *NEVER_INDEXED)]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Globs) and (self.include, self.exclude) == (
            other.include, other.exclude
        )

    def __hash__(self) -> int:
        return hash((self.include, self.exclude))

    def excluded_dir(self, rel_dir: str) -> bool:
        return self._exc(rel_dir)

    def wanted_name(self, rel: str, name: str | None = None) -> bool:
        """The file's own test, for a file whose folders are known not to be excluded
        (``name``: its last part, when the caller has it)."""
        return self._inc(rel, name) and not self._exc(rel, name)

    def why_excluded(self, rel: str) -> str:
        """Why ``rel`` is left out, as a person reads it."""
        name = rel.rsplit("/", 1)[-1]
        for pattern, matches in self._each_exc:
            if matches(rel) or matches(name):
                source = (EXCLUDED_BY_DEFAULT if pattern in _DEFAULT_EXCLUDE
                          or pattern in NEVER_INDEXED else EXCLUDED)
                return f"{source} ({pattern})"
        if tuple(self.include) == DEFAULT_GLOBS:  # (said by kind: the list is long)
            return f"{NOT_INCLUDED} (the default kinds: {', '.join(DEFAULT_KINDS)})"
        return f"{NOT_INCLUDED} ({', '.join(self.include)})"

    def wanted(self, rel: str) -> bool:
        """Whether a file at ``rel`` (posix, relative to its root) is indexed."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if self._exc("/".join(parts[:i])):
                return False
        return self.wanted_name(rel)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


#: Why a file was left out, as ``left_out`` counts them: these words, then what did it.
EXCLUDED_BY_DEFAULT, EXCLUDED = "excluded by default", "excluded"
NOT_INCLUDED, IGNORED = "not matching the include globs", "ignored by an ignore file"
_IGNORED = f"{IGNORED} (.gitignore, .ignore, .riffluxignore)"
#: At most this many files are counted under one excluded folder.
_COUNT_CAP = 100_000
#: Entries of a folder read ahead to find its ignore files by name (a folder this large
#: or larger has them looked up instead: it is never held whole).
_HEAD = 1024


def scan_root(root: Path, globs: Globs, *, count_left_out: bool = False,
              use_ignore_files: bool = True) -> ScanResult:
    """Every wanted file under ``root`` (which should be absolute and resolved).

    With ``use_ignore_files``, ``.gitignore``/``.ignore``/``.riffluxignore`` files
    are obeyed too (``core.ignore``). With ``count_left_out``, the files left out are
    counted by why (which means walking excluded folders such as ``node_modules``: a
    report, not a scan)."""
    result = ScanResult()
    left_out = result.left_out
    seen_dirs: set[tuple[int, int]] = set()
    # plain strings, not Path objects: a no-op reindex is mostly this walk. Only the root
    # and the folders reached through a link (``linked``) are looked at for a loop: a
    # folder is entered twice only through a link (a link into the root is skipped, and
    # one that leads back above it meets the root again)
    stack: list[tuple[str, str, Levels, bool]] = [(str(root), "", (), True)]
    while stack:
        directory, rel_dir, levels, linked = stack.pop()
        if linked:
            try:
                st = os.stat(directory)
                key = (st.st_dev, st.st_ino)
                if key in seen_dirs:
                    continue
                seen_dirs.add(key)
            except OSError as exc:
                result.problems.append(_unlisted(rel_dir, exc))
                continue
        listing = _listing(directory, rel_dir, result.problems)
        if use_ignore_files:
            # a folder's first entries are read ahead: when they are all of it, its
            # ignore files are known by name (nearly always: none), with no lookup
            head = list(islice(listing, _HEAD))
            names = {e.name for e in head} if len(head) < _HEAD else None
            level = read_level(directory, rel_dir, names)
            levels = (*levels, level) if level is not None else levels
            listing = chain(head, listing)
        for entry in listing:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError as exc:
                result.problems.append(ScanProblem(rel, str(exc)))
                continue
            if is_dir:
                if globs.excluded_dir(rel):
                    if count_left_out:
                        why = f"under {entry.name}/, {globs.why_excluded(rel)}"
                        left_out[why] = left_out.get(why, 0) + _count_files(entry.path)
                    continue
                if is_link and _inside(Path(entry.path).resolve(), root):
                    continue  # its files are reached through the real directory
                if levels and ignored(levels, rel, is_dir=True):
                    if count_left_out:
                        left_out[_IGNORED] = left_out.get(_IGNORED, 0) + _count_files(entry.path)
                    continue
                if not entry.name.isascii() and (bad := unnamable(rel)) is not None:
                    result.problems.append(bad)  # (a folder: said once, for all inside)
                    continue
                stack.append((entry.path, rel, levels, linked or is_link))
                continue
            if not globs.wanted_name(rel, entry.name):  # its folders passed on the way down
                if count_left_out:
                    why = globs.why_excluded(rel)
                    left_out[why] = left_out.get(why, 0) + 1
                continue
            if levels and ignored(levels, rel):
                if count_left_out:
                    left_out[_IGNORED] = left_out.get(_IGNORED, 0) + 1
                continue
            if not entry.name.isascii() and (bad := unnamable(rel)) is not None:
                result.problems.append(bad)  # (a file the globs and ignore files want)
                continue
            state = stat_file(root, rel, is_link=True) if is_link else _entry_state(entry, rel)
            if isinstance(state, ScanProblem):
                result.problems.append(state)
            elif state is not None:
                result.files.append(state)
    result.files.sort()  # (by path: no two files have the same)
    return result


def _listing(directory: str, rel_dir: str,
             problems: list[ScanProblem]) -> Iterator[os.DirEntry[str]]:
    """A folder's entries as they are read: a folder of 100,000 entries is never held
    whole (the ignore files in it are looked up by name)."""
    try:
        with os.scandir(directory) as listing:
            yield from listing
    except OSError as exc:
        problems.append(_unlisted(rel_dir, exc))


def _count_files(directory: str) -> int:
    count = 0
    for _, _, files in os.walk(directory):
        count += len(files)
        if count >= _COUNT_CAP:
            break
    return count


def _entry_state(entry: os.DirEntry[str], rel: str) -> FileState | ScanProblem | None:
    """``stat_file`` for a directory entry that is not a link (no path building)."""
    try:
        st = entry.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ScanProblem(rel, str(exc))
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileState(rel, st.st_mtime_ns, st.st_size)


def stat_file(
    root: Path, rel: str, *, is_link: bool | None = None
) -> FileState | ScanProblem | None:
    """The state of one file; None when it should not be indexed (gone, or a link
    to a file inside the same root)."""
    if (bad := unnamable(rel)) is not None:
        return bad
    path = root / rel
    try:
        if is_link is None:
            is_link = path.is_symlink()
        if is_link:
            target = path.resolve(strict=True)
            if _inside(target, root):
                return None
        st = path.stat()
    except FileNotFoundError:
        if is_link:
            return ScanProblem(rel, "broken symbolic link", unseen=False)
        return None
    except (OSError, RuntimeError) as exc:  # RuntimeError: symlink loop on resolve
        return ScanProblem(rel, str(exc))
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileState(rel, st.st_mtime_ns, st.st_size)
