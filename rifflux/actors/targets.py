"""What a location given to ``reindex`` means: a new root, a folder or file inside an
indexed root, or a refusal that says why."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

from ..config import Settings
from ..core.scan import Globs
from .jobs import Target


def reindex_target(location: str, roots: list[Path], settings: Settings,
                   allow_large: bool = False) -> Target:
    """What ``reindex`` does with one location: a folder (a new root, or part of an indexed
    one), a file, or a refusal that says why (missing, not a file or folder, too wide)."""
    loc = Path(location).expanduser()
    try:
        loc = loc.resolve(strict=True)
    except (OSError, RuntimeError):
        return Target(loc.absolute(), requested=location,
                      missing="path not found; check the path (nothing was removed)")
    globs = Globs(settings.include, settings.exclude)
    container = next((r for r in roots if r != loc and r in loc.parents), None)
    mode = loc.stat().st_mode
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):  # never opened: a FIFO blocks
        return Target(loc, requested=location,
                      missing="not a regular file or folder (a FIFO, socket or device); "
                              "give a folder or a markdown file")
    if loc.is_file():
        root = container or loc.parent
        rel = loc.relative_to(root).as_posix()
        if not globs.wanted(rel):
            return Target(root, requested=location,
                          missing="not indexed: the file does not match the include globs "
                                  f"({', '.join(settings.include)})")
        return Target(root, paths=frozenset({rel}), requested=location)
    if container is not None:
        return Target(container, prefix=loc.relative_to(container).as_posix() + "/",
                      requested=location)
    if not allow_large and loc not in roots and (whole := too_wide(loc)):
        return Target(loc, requested=location,
                      missing=f"refused: {loc} is {whole}; index the folder you mean, "
                              "or pass yes=true (rifflux index --yes) to index it all")
    return Target(loc, requested=location)


def too_wide(folder: Path) -> str | None:
    """Why indexing this folder is nearly always a mistake (None: it is not)."""
    if folder == Path(folder.anchor):
        return "the whole file system"
    try:
        home = Path.home().resolve()
    except (OSError, RuntimeError):  # no home folder (a service account)
        return None
    return "your home folder" if folder == home else None


def missing(locations: Sequence[str]) -> list[str]:
    """The locations given to a reindex that do not exist (``~`` expanded)."""
    return [p for p in locations if not Path(p).expanduser().exists()]
