"""A glance at an SQLite index with the standard library alone: its folders and how many
files each holds, read in a few milliseconds without opening the store (what ``rifflux
mcp``'s front says in its instructions before anything else has loaded).

Read-only and never waiting: an index that is missing, locked, damaged or of another
kind gives None, and the caller says less.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["root_sizes"]


def root_sizes(db_path: Path) -> list[tuple[str, int]] | None:
    """Each indexed folder with its number of files, in the order they were indexed ([]:
    no index yet; None: it could not be read now)."""
    db = db_path.expanduser()
    if not db.exists():
        return []
    try:
        conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, timeout=0.1)
    except sqlite3.Error:
        return None
    try:
        rows = conn.execute(
            "SELECT r.path, (SELECT COUNT(*) FROM files f WHERE f.root_id = r.id) "
            "FROM roots r ORDER BY r.id").fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return [(str(path), int(count)) for path, count in rows]
