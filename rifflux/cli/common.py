"""What the commands share: the index they need, paths as people type them, counts as
people read them, and JSON on stdout. (anyio is imported by the functions that wait:
a command answered directly, without an event loop, imports none.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidArgumentError
from ..exits import EXIT_USAGE
from .entry import CommandError

if TYPE_CHECKING:
    from ..config import Settings
    from ..types import FileLines, FileRecord


async def require_index(settings: Settings) -> None:
    """``check_index``, in a worker thread."""
    import anyio

    await anyio.to_thread.run_sync(check_index, settings)


def check_index(settings: Settings) -> None:
    """The index file must be there (a command that reads it never creates it; a
    database's opening says whether it holds an index)."""
    if not isinstance(settings.db_path, Path):
        return
    db = settings.db_path.expanduser().resolve()
    if db.is_dir():
        raise CommandError(f"{db} is a folder: give the path of an index file (--db, "
                           "RIFFLUX_DB_PATH)", EXIT_USAGE)
    if not db.is_file():
        raise CommandError(f"no index at {db}: run `rifflux index PATH` first, "
                           "or point --db (RIFFLUX_DB_PATH) at an existing index")


async def index_exists(settings: Settings) -> bool:
    """Whether there is an index to open already (a database: it is there to be asked)."""
    import anyio

    if not isinstance(settings.db_path, Path):
        return True
    return await (await anyio.Path(settings.db_path).expanduser()).exists()


async def note_path(rf: Holding, path: str, root: str | None) -> str:
    """The path a command names a note by, as the index takes it. A file in the working
    directory (search prints paths relative to it) is made absolute when the index holds
    it there; else the path is read as given, relative to its indexed folder (as search
    results give it: ``README.md`` of an indexed folder, from a working directory with a
    README.md of its own). A working directory's file the index holds neither way is a
    ``CommandError`` that says both were tried."""
    import anyio

    return await named_path(rf, path, root, await anyio.to_thread.run_sync(local_file, path))


def local_file(path: str) -> str | None:
    """The working directory's file ``path`` names, made absolute (None: ``path`` is
    absolute, or names no file here)."""
    local = Path(path).expanduser()
    if local.is_absolute() or not local.is_file():
        return None
    return str(local.resolve())


async def named_path(rf: Holding, path: str, root: str | None, here: str | None) -> str:
    """``note_path``, the working directory's file looked up already (``here``:
    ``local_file``'s answer)."""
    if here is None:
        return path
    if await _holds(rf, here, root, quiet=True):
        return here
    # (a bad --root still says so, from the path as given)
    if await _holds(rf, path, root, quiet=root is None):
        return path
    raise CommandError(f"{path} is not in the index, neither as the file in the working "
                       f"directory ({here}) nor relative to an indexed folder: give a path "
                       f"as `rifflux search` prints it, or `rifflux index {path}` (which "
                       "reads it, or says why it is left out)", EXIT_USAGE)


class Holding(Protocol):
    """What finding a note's path asks of the index (``Rifflux``, or ``DirectIndex``)."""

    async def get_file(self, path: str, *, root: str | None = None,
                       ) -> FileRecord | FileLines | None: ...


async def _holds(rf: Holding, path: str, root: str | None, *, quiet: bool) -> bool:
    """Whether the index holds a file at ``path``; ``quiet``: a path it refuses (outside
    every indexed folder, or leaving one) is one it does not hold."""
    try:
        return await rf.get_file(path, root=root) is not None
    except InvalidArgumentError:
        if quiet:
            return False
        raise


def count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``: counts people read."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
