"""Where the locations given to ``reindex`` and ``forget`` point, for the facade.

The file system is looked up in a worker thread, never on the event loop; what a
location then means (a new root, part of one, a refusal) is decided by the pure
``core.locations``, and becomes the job's ``Target`` here.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio

from .actors.jobs import Target
from .config import Settings
from .core.locations import (
    Found,
    forget_place,
    one_root_relative,
    reads_as_root_relative,
    reindex_place,
)
from .core.scan import Globs
from .errors import InvalidArgumentError
from .types import FileRecord

__all__ = ["forget_target", "missing_locations", "reindex_targets"]


async def missing_locations(locations: Sequence[str]) -> list[str]:
    """The locations given to a reindex that do not exist (``~`` expanded)."""
    return await anyio.to_thread.run_sync(
        lambda: [p for p in locations if not Path(p).expanduser().exists()])


async def refused_by_a_new_index(locations: Sequence[str], settings: Settings, *,
                                 yes: bool) -> list[str]:
    """Why an index that holds nothing yet would refuse each of ``locations`` (missing,
    not a file or folder, too wide, not a markdown name): ``location: why``, one per
    refused location, in order. A command whose every location is refused opens nothing,
    and so makes no index file."""
    found, home = await anyio.to_thread.run_sync(_look_up, locations)
    globs = Globs(settings.include, settings.exclude)
    places = [(location, reindex_place(location, where, (), globs, home=home, yes=yes))
              for location, where in zip(locations, found, strict=True)]
    return [f"{location}: {place.missing}" for location, place in places
            if place.missing is not None]


async def reindex_targets(locations: Sequence[str], roots: Sequence[Path], settings: Settings,
                          *, yes: bool, named: bool) -> list[Target]:
    """What a reindex of ``locations`` does with each (``core.locations.reindex_place``);
    ``named``: the caller named them (False: the working directory, as no path was given)."""
    found, home = await anyio.to_thread.run_sync(_look_up, locations)
    globs = Globs(settings.include, settings.exclude)
    targets = []
    for location, where in zip(locations, found, strict=True):
        place = reindex_place(location, where, roots, globs, home=home, yes=yes, named=named)
        targets.append(Target(place.root, paths=place.paths, prefix=place.prefix,
                              requested=location, missing=place.missing,
                              limited=place.limited))
    return targets


async def forget_target(location: str, roots: Sequence[Path], *, yes: bool,
                        indexed: Callable[[str], Awaitable[FileRecord | None]],
                        ) -> tuple[Path, Target]:
    """The location resolved, and what forgetting it removes. A relative path that is
    nothing indexed under the working directory is read as results give paths: relative
    to the indexed folder that holds it (on disk, else as ``indexed`` finds it)."""
    loc, home = await anyio.to_thread.run_sync(_resolve, location)
    if reads_as_root_relative(location, loc, roots):
        on_disk = await anyio.to_thread.run_sync(_under_roots, location, roots)
        if not on_disk:
            with contextlib.suppress(InvalidArgumentError):  # (a path leaving the folder)
                if (found := await indexed(location)) is not None:
                    on_disk = [Path(found["root"]) / found["path"]]
        loc = one_root_relative(location, on_disk, os.getcwd())
    place = forget_place(location, loc, roots, home=home, yes=yes)
    return loc, Target(place.root, prefix=place.prefix, requested=location, forget=True)


# ---------------------------------------------------------------- in the worker thread


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (OSError, RuntimeError):  # no home folder (a service account)
        return None


def _look_up(locations: Sequence[str]) -> tuple[list[Found], Path | None]:
    """Each location resolved, with its ``st_mode`` (None: not found), and the home folder."""
    found = []
    for location in locations:
        loc = Path(location).expanduser()
        try:
            loc = loc.resolve(strict=True)
        except (OSError, RuntimeError):
            found.append(Found(path=loc.absolute(), mode=None))
        else:
            found.append(Found(path=loc, mode=loc.stat().st_mode))
    return found, _home()


def _resolve(location: str) -> tuple[Path, Path | None]:
    """The location made absolute and resolved (it need not exist), and the home folder."""
    return Path(location).expanduser().absolute().resolve(), _home()


def _under_roots(location: str, roots: Sequence[Path]) -> list[Path]:
    """What a relative ``location`` names in each root, where that exists (strictly inside:
    '.' or '..' name no file in it)."""
    found = [(root, (root / location).resolve()) for root in roots]
    return [path for root, path in found if root in path.parents and path.exists()]
