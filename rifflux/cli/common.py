"""What the commands share: the index they need, paths as people type them, counts as
people read them, and JSON on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

from ..config import Settings
from ..exits import EXIT_USAGE
from .entry import CommandError


async def require_index(settings: Settings) -> None:
    """The index file must be there (a command that reads it never creates it; a
    database's opening says whether it holds an index)."""
    if not isinstance(settings.db_path, Path):
        return
    db = await anyio.to_thread.run_sync(settings.db_path.expanduser().resolve)
    if await anyio.Path(db).is_dir():
        raise CommandError(f"{db} is a folder: give the path of an index file (--db, "
                           "RIFFLUX_DB_PATH)", EXIT_USAGE)
    if not await anyio.Path(db).is_file():
        raise CommandError(f"no index at {db}: run `rifflux index PATH` first, "
                           "or point --db (RIFFLUX_DB_PATH) at an existing index")


async def note_path(path: str) -> str:
    """A path as search prints it (relative to the working directory) made absolute, so
    that the index finds it; any other path as given (relative to its indexed folder)."""
    local = await anyio.Path(path).expanduser()
    if not local.is_absolute() and await local.is_file():
        return str(await local.resolve())
    return path


def count(n: int, noun: str) -> str:
    """``1 file``, ``2 files``: counts people read."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
