"""The index: that it is there and opens, its integrity (SQLite's ``quick_check``, read
only: a damaged index is reported, never moved aside here), what it holds, the texts
still without a vector, its folders (each still there on disk), and whether a ``rifflux
serve`` serves it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import anyio

from ... import discovery
from ...api import Rifflux
from ...config import Settings, default_db_path
from ...errors import RiffluxError
from ...types import Status
from ..common import count
from .checks import Check, attention, note, ok

__all__ = ["check_index"]


async def check_index(settings: Settings, *, reachable: bool = True) -> list[Check]:
    """The index's checks (``reachable``: False when its PostgreSQL server cannot be
    reached, which ``postgres`` reports: nothing more is tried)."""
    db = settings.db_path
    if not reachable:
        return [attention("index", f"{db} cannot be opened: its PostgreSQL server cannot "
                          "be reached", fix="see the postgresql check above")]
    if isinstance(db, Path):
        db = db.expanduser().absolute()
        if not db.exists():
            return [attention("index", f"there is no index at {db} yet",
                              fix="index a folder: rifflux index ~/notes (a server started "
                                  "with --watch FOLDER makes it too)", path=str(db))]
        damage = await anyio.to_thread.run_sync(_damage, db)
        if damage is not None:
            roots = await anyio.to_thread.run_sync(_roots_of, db)
            named = "" if db == default_db_path().absolute() else f" --db {db}"
            return [attention(
                "index", f"the index {db} is damaged: {damage}",
                "the next process that opens it for writing moves it aside (to "
                f"{db.name}.corrupt-TIME) and starts a new one",
                fix=f"rifflux{named} index " + (" ".join(roots) if roots else "FOLDER ...") +
                    " (moves the damaged file aside and indexes the folders again)",
                path=str(db), damage=damage)]
    try:
        async with Rifflux(settings=settings.with_overrides(
                read_only=True, read_snapshot=True, model_warmup=False, watch_paths=(),
                writable=())) as rf:
            status = await rf.status()
    except RiffluxError as exc:
        return [attention("index", f"{db} cannot be opened: {exc}",
                          fix="the message says what to do; --db names another index")]
    checks = [_counts(status), *await anyio.to_thread.run_sync(_folders, status)]
    if isinstance(db, Path):
        checks.append(await anyio.to_thread.run_sync(_server, db, status))
    return checks


def _damage(db: Path) -> str | None:
    """Why ``quick_check`` fails, read only (None: it passes, or the file is busy)."""
    from ...store.sqlite.recovery import read_uri

    try:
        conn = sqlite3.connect(read_uri(db), uri=True, timeout=2)
        try:
            rows = conn.execute("PRAGMA quick_check(10)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return None if "locked" in str(exc) or "busy" in str(exc) else str(exc)
    if [r[0] for r in rows] == ["ok"]:
        return None
    return "PRAGMA quick_check: " + "; ".join(" ".join(str(r[0]).split()) for r in rows)[:300]


def _roots_of(db: Path) -> list[str]:
    from ...store.sqlite.recovery import read_uri

    try:
        conn = sqlite3.connect(read_uri(db), uri=True, timeout=2)
        try:
            return [str(r[0]) for r in conn.execute("SELECT path FROM roots ORDER BY id")]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return []


def _counts(status: Status) -> Check:
    summary = (f"{status['db_path']}: {count(status['files'], 'file')} in "
               f"{count(status['roots'], 'folder')}, {count(status['chunks'], 'chunk')}, "
               f"{count(status['embeddings'], 'vector')} ({status['store']})")
    data = {"files": status["files"], "chunks": status["chunks"],
            "embeddings": status["embeddings"],
            "pending_embeddings": status["pending_embeddings"]}
    if not status["files"]:
        return attention("index", summary, fix="index a folder: rifflux index ~/notes", **data)
    if status["pending_embeddings"]:
        return note("index", summary, f"{status['pending_embeddings']:,} texts have no vector "
                    "yet: found by their words, not yet by meaning",
                    fix="a running rifflux serve, rifflux mcp or rifflux watch embeds them; "
                        "or run rifflux index on the folder", **data)
    return ok("index", summary, "every text has its vector", **data)


def _folders(status: Status) -> list[Check]:
    checks = []
    for root in status["indexed_roots"]:
        path = root["path"]
        if not os.path.isdir(path):
            checks.append(attention(
                "folder", f"{path} is indexed but no longer there ("
                f"{count(root['files'], 'file')} still in the index)",
                fix=f"rifflux forget {path} (or put the folder back, or mount it)", path=path))
        elif not root["files"]:
            checks.append(note("folder", f"{path} is indexed and holds no markdown file",
                               fix="--include names other files to index", path=path))
        else:
            checks.append(ok("folder", f"{path}: {count(root['files'], 'file')}, "
                             f"{count(root['chunks'], 'chunk')}", path=path))
    return checks


def _server(db: Path, status: Status) -> Check:
    running = discovery.find(db, timeout=1.0)
    others = [f"pid {p['pid']} ({', '.join(p['roles'])})" for p in status["processes"]]
    also = (f"other processes on it: {', '.join(others)}",) if others else ()
    if running is not None:
        return ok("server", f"rifflux serve (pid {running.pid}) serves it at {running.url}",
                  *also, url=running.url, pid=running.pid)
    return note("server", "no rifflux serve runs on it: each MCP client and each search "
                "opens the index itself", *also,
                fix="rifflux serve --watch ~/notes shares one loaded index (and the model) "
                    "with every client; rifflux setup CLIENT --connect auto uses it")
