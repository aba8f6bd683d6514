"""Opening the index file safely: someone else's file is never touched, a damaged index
is moved aside and rebuilt.

- A file that is not an SQLite database (its first 16 bytes say so) is not a Rifflux
  index: a clear error, and the file is left as it is. So is an SQLite database that
  has tables but not Rifflux's.
- A Rifflux index that is damaged (the file cannot be read as a database, or
  ``PRAGMA quick_check`` fails) is moved aside to ``<name>.corrupt-<UTC time>`` with
  its ``-wal`` and ``-shm`` files, a fresh index is made in its place, and the roots it
  held (read from the damaged file when it can be read) are indexed again.
- ``quick_check`` reads every page (about 0.1 s for a 50 MB index), so it runs at open
  only when the last session did not close cleanly (a WAL file is left over), when an
  error said the file is damaged (a ``<name>.check`` marker), or when the last check is
  more than a day old. That last, routine check of an index over ``CHECK_AT_OPEN_MOST``
  (7 s for the 2.4 GB of a million chunks) runs in the background once it is open
  instead (``check_in_background``): damage it finds is marked for the next open.
- A read-only open never moves anything: damage is an error there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from ...errors import IndexDatabaseError, NotAnIndexError
from ..common import Recovery

logger = logging.getLogger(__name__)

_SQLITE_HEADER = b"SQLite format 3\x00"
#: How often an index that closes cleanly is checked anyway.
CHECK_EVERY = 24 * 3600.0
#: An index larger than this has its routine check after opening, in the background.
CHECK_AT_OPEN_MOST = 256 * 2**20


#: What SQLite says when the file, or the FTS5 tables in it, cannot be read as written.
DAMAGE_WORDS = ("malformed", "not a database", "corrupt", "vtable constructor failed")


def unshared(db: Path) -> bool:
    """Whether ``db`` can be read only as it is now: a WAL index closed cleanly (no
    ``-wal``, no ``-shm``) in a folder this process cannot write, where SQLite cannot
    make the ``-shm`` file that reading beside a writer needs (a process writing it
    would have made them)."""
    return not os.access(db.parent, os.W_OK) and not any(
        Path(f"{db}{suffix}").exists() for suffix in ("-wal", "-shm"))


def immutable_uri(db: Path) -> str | None:
    """The URI that opens ``db`` as it is now, when it is ``unshared`` (a process that
    may not read it so is refused before: ``Settings.read_snapshot``); else None."""
    return f"{db.absolute().as_uri()}?immutable=1" if unshared(db) else None


def read_uri(db: Path) -> str:
    """The URI that opens ``db`` for reading only (``immutable_uri`` when it is one)."""
    return immutable_uri(db) or f"{db.absolute().as_uri()}?mode=ro"


def is_damage(message: str) -> bool:
    text = message.lower()
    return any(word in text for word in DAMAGE_WORDS)


def check_marker(db: Path) -> Path:
    return db.with_name(db.name + ".check")


def mark_for_check(db: Path) -> None:
    """Ask for a ``quick_check`` at the next open (an error said the file is damaged)."""
    with contextlib.suppress(OSError):
        check_marker(db).touch()


def refuse_foreign(db: Path) -> None:
    """Raise ``NotAnIndexError`` when ``db`` exists and is not (or was never) a Rifflux
    index; never changes the file."""
    try:
        with db.open("rb") as f:
            head = f.read(16)
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there yet (making its folder may fail: that error says why)
    except IsADirectoryError:
        raise NotAnIndexError(f"{db} is a folder: give the path of an index file (--db)") \
            from None
    except OSError as exc:
        raise IndexDatabaseError(f"cannot read the index {db}: {exc.strerror or exc}") from exc
    if head and head != _SQLITE_HEADER:
        raise NotAnIndexError(
            f"{db} is not a Rifflux index (not an SQLite database; it was left untouched): "
            "point --db (RIFFLUX_DB_PATH) at an index file, or at a new file to create one")
    if not head:
        return  # an empty file: a new index
    try:
        conn = sqlite3.connect(read_uri(db), uri=True)
        try:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return  # damaged: whether it is ours is decided by what can still be read
    if tables and "meta" not in tables:
        raise NotAnIndexError(
            f"{db} is an SQLite database that Rifflux did not make (it was left untouched): "
            "point --db (RIFFLUX_DB_PATH) at an index file, or at a new file to create one")


def refuse_unreadable(db: Path, *, read_only: bool, read_snapshot: bool) -> None:
    """Before opening: someone else's file is refused untouched (``refuse_foreign``), and
    so is one that can be read only as it is now by a reader that would follow it
    (``unshared``; ``read_snapshot``: a one-shot read, which reads it as it is now)."""
    refuse_foreign(db)
    if read_only and not read_snapshot and db.exists() and unshared(db):
        raise IndexDatabaseError(
            f"cannot follow the index {db}: SQLite needs to make {db.name}-shm beside it "
            f"to read it while others write it, and this process cannot write "
            f"{db.parent}; make that folder writable for this user, or copy the index "
            "somewhere writable (`rifflux search` and the other reading commands read it "
            "as it is now)")


def needs_check(db: Path) -> Literal["now", "later"] | None:
    """Whether ``db`` is checked before it is opened (``now``: it may be damaged, or its
    routine check is due and quick), after (``later``: a routine check of a large index),
    or not at all."""
    if not db.exists():
        return None
    wal = Path(f"{db}-wal")
    if (wal.exists() and wal.stat().st_size > 0) or check_marker(db).exists():
        return "now"
    try:
        conn = sqlite3.connect(read_uri(db), uri=True)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'checked_at'").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return "now"
    if row is not None and time.time() - float(row[0]) <= CHECK_EVERY:
        return None
    return "now" if db.stat().st_size <= CHECK_AT_OPEN_MOST else "later"


def check_in_background(db: Path, *, read_only: bool) -> None:
    """The routine check of an open index (in a worker thread): damage it finds is
    logged, and marked so that the next open moves the file aside and rebuilds it."""
    reason = damage(db)
    if reason is None:
        return
    if read_only:
        logger.error("the index %s is damaged (%s); it is open read-only, so it is left as "
                     "it is", db, reason)
        return
    mark_for_check(db)
    logger.error("the index %s is damaged (%s); Rifflux moves it aside and rebuilds it from "
                 "your markdown files at the next start (restart it)", db, reason)


def damage(db: Path) -> str | None:
    """Why ``db`` is damaged, or None when ``quick_check`` passes (and the time of this
    check is recorded)."""
    try:  # (read-write, unless only an immutable read can open it)
        conn = sqlite3.connect(immutable_uri(db) or db, uri=True, isolation_level=None,
                               timeout=0)  # (never waits: below)
        try:
            rows = conn.execute("PRAGMA quick_check(10)").fetchall()
            if [r[0] for r in rows] != ["ok"]:
                found = "; ".join(" ".join(str(r[0]).split()) for r in rows)
                return f"PRAGMA quick_check failed: {found[:300]}"
            # busy (another process writes: not waited for) or read-only: checked anyway
            with contextlib.suppress(sqlite3.Error):
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES "
                             "('checked_at', ?)", (str(time.time()),))
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None  # another process is writing: it is readable enough
        return f"{exc}"
    with contextlib.suppress(OSError):
        check_marker(db).unlink()
    return None


def move_aside(db: Path, reason: str) -> Recovery:
    """Move a damaged index (and its WAL and SHM files) aside; read what roots it held."""
    roots = _roots_of(db)
    now = datetime.now(UTC)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    moved = db.with_name(f"{db.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{db}{suffix}")
        if source.exists():
            os.replace(source, Path(f"{moved}{suffix}"))
    with contextlib.suppress(OSError):
        check_marker(db).unlink()
    logger.error("the index %s was damaged (%s); moved it to %s and starting a new one; %s",
                 db, reason, moved,
                 f"indexing again: {', '.join(map(str, roots))}" if roots else
                 "its folders could not be read from it: the watched folders and the next "
                 "reindex fill it")
    return Recovery(moved, reason, roots, now.isoformat())


def _roots_of(db: Path) -> tuple[Path, ...]:
    try:
        conn = sqlite3.connect(read_uri(db), uri=True)
        try:
            return tuple(Path(r[0]) for r in conn.execute("SELECT path FROM roots ORDER BY id"))
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return ()
