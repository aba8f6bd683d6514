"""What a location given to ``reindex`` or ``forget`` means: a new root, a folder or file
inside an indexed root, every root inside it, or a refusal that says why.

Pure: the caller looks at the file system (in a worker thread) and passes what it
found (``Found``, the resolved home folder, the files a root-relative path names);
deciding is done here, as ``plan`` decides what a job does.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidArgumentError
from .scan import Globs


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """What the file system says of a location (looked up by the caller)."""

    path: Path  # resolved when it exists; else as given, ``~`` expanded, made absolute
    mode: int | None  # its ``st_mode``; None when it does not exist


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where a job acts: a root, all of it (or what is below ``prefix``) or only the
    named ``paths``; ``missing`` says why the location cannot be indexed."""

    root: Path
    paths: frozenset[str] | None = None
    prefix: str = ""
    missing: str | None = None
    #: A new folder nobody named (the working directory of a reindex given no path): over
    #: ``max_root_files`` candidate files it is refused (``too_many_files``).
    limited: bool = False


def reindex_place(location: str, found: Found, roots: Sequence[Path], globs: Globs, *,
                  home: Path | None, yes: bool = False, named: bool = True) -> Place:
    """What ``reindex`` does with one location: a folder (a new root, or part of an indexed
    one), a file, or a refusal that says why (missing, not a file or folder, too wide).

    The refusals guard against a wrong working directory, not against large folders:
    ``/`` and the home folder need ``yes``; a new folder the caller did not ``name`` (the
    working directory, used when no path was given) is ``limited`` in size; a folder
    named explicitly is indexed whatever its size."""
    loc = found.path
    if found.mode is None:
        return Place(root=loc, missing="path not found; check the path (nothing was removed)")
    container = next((r for r in roots if r != loc and r in loc.parents), None)
    if not (stat.S_ISDIR(found.mode) or stat.S_ISREG(found.mode)):  # never opened: a FIFO
        return Place(root=loc, missing="not a regular file or folder (a FIFO, socket or "
                                       "device); give a folder or a markdown file")
    if stat.S_ISREG(found.mode):
        root = container or loc.parent
        rel = loc.relative_to(root).as_posix()
        if not globs.wanted(rel):
            return Place(root=root, missing="not indexed: the file does not match the include "
                                            f"globs ({', '.join(globs.include)})")
        return Place(root=root, paths=frozenset({rel}))
    if container is not None:
        return Place(root=container, prefix=loc.relative_to(container).as_posix() + "/")
    if not yes and loc not in roots and (whole := too_wide(loc, home)):
        return Place(root=loc, missing=f"refused: {loc} is {whole}; index the folder you mean, "
                                       "or pass yes=true (rifflux index --yes) to index it all")
    return Place(root=loc, limited=not (named or yes) and loc not in roots)


def too_many_files(found: int, limit: int, folder: Path) -> str:
    """Why a ``limited`` new folder of ``found`` candidate files, more than ``limit``, is
    refused: nearly always a wrong working directory."""
    return (f"refused: {found:,} files to index in {folder}, the working directory (no path "
            f"was given), more than the limit of {limit:,} for a folder not named "
            "(max_root_files); name the folder to index (rifflux index PATH, reindex(path=...)), "
            "or pass yes=true (rifflux index --yes) to index them all")


def reads_as_root_relative(location: str, loc: Path, roots: Sequence[Path]) -> bool:
    """A relative location that names nothing indexed under the working directory is read
    as results give paths: relative to the indexed folder that holds it."""
    return (not location.startswith(("/", "~")) and loc not in roots
            and not any(r in loc.parents or loc in r.parents for r in roots))


def one_root_relative(location: str, on_disk: Sequence[Path], cwd: str) -> Path:
    """The one indexed file or folder a root-relative ``location`` names (``on_disk``: what
    it names in each indexed folder), or an error that says what to give instead."""
    if len(on_disk) == 1:
        return on_disk[0]
    where = (f"it is in several indexed folders ({', '.join(map(str, on_disk))})"
             if on_disk else "no indexed folder holds it")
    raise InvalidArgumentError(
        f"{location!r} is not in the index: relative paths are read against the working "
        f"directory {cwd!r}, then as results give them, and {where}; give an "
        "absolute path (status lists the indexed folders)")


def forget_place(location: str, loc: Path, roots: Sequence[Path], *, home: Path | None,
                 yes: bool = False) -> Place:
    """What ``forget`` removes for ``loc`` (the location resolved): a folder or file inside
    an indexed root, or the root ``loc`` with every root inside it. ``/`` and the home
    folder, which would remove every indexed folder inside them, need ``yes``."""
    container = next((r for r in roots if r in loc.parents), None)
    inside = [str(r) for r in roots if loc in r.parents]
    if not yes and container is None and inside and (whole := too_wide(loc, home)):
        raise InvalidArgumentError(
            f"refused: {loc} is {whole}, and forgetting it removes every indexed folder "
            f"inside it ({len(inside)}: {', '.join(inside[:3])}"
            f"{', …' if len(inside) > 3 else ''}); forget the folder you mean, or pass "
            "yes=true (rifflux forget --yes) to remove them all")
    if container is not None:
        return Place(root=container, prefix=loc.relative_to(container).as_posix())
    return Place(root=loc)


def too_wide(folder: Path, home: Path | None) -> str | None:
    """Why indexing (or forgetting) this folder is nearly always a mistake (None: it is
    not); ``home`` is the home folder resolved, None when there is none."""
    if folder == Path(folder.anchor):
        return "the whole file system"
    return "your home folder" if home is not None and folder == home else None


def reindex_locations(path: str | None, paths: Sequence[str] | None,
                      cwd: str) -> tuple[list[str], bool]:
    """The locations a reindex is for: ``paths`` if non-empty, else ``path``, else the
    working directory ``cwd``; and whether the caller named them (False: ``cwd``)."""
    if paths:
        if blank := [i for i, loc in enumerate(paths) if not loc.strip()]:
            raise InvalidArgumentError(
                f"paths[{blank[0]}] is empty: give a folder or file there, or leave "
                "paths out (then path, else the working directory, is indexed)")
        return list(paths), True
    return ([path], True) if path is not None and path != "" else ([cwd], False)
