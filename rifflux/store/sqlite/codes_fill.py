"""Compact rows for the vectors an index holds without one (stored by a version before
``embedding_codes``, ``vector_schema``), so that the next load of the matrix reads them
instead of converting float32 (at a million vectors: 6.4 s instead of 2.5).

Filled once, in the background, on a connection of its own: the vectors are read in
their stored order a block at a time, and each block's rows are written in a short
write transaction, only for vectors still as they were read (a vector deleted or
replaced meanwhile gets none). ``meta.vector_codes = 'complete'`` says that there is
nothing to fill: set when the table is made in an index without vectors, and when a
fill reaches the end. Cancelling it stops it within one block; the next fill goes on.

A version before the table, writing to the index after the mark was set, adds vectors
without compact rows: they come after every vector that has one (a vector's id is one
past the highest), so a marked index whose newest vector has no compact row is filled
from the newest that has one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread

from ...core.codes import packed
from .sql import mapped_errors
from .vector_schema import CODES_MARK
from .vectors import by_size

#: Vectors read, converted and written at a time (6 MiB of float32 at 384 dimensions).
BLOCK = 4096
MARK = CODES_MARK
#: The most it waits for another writer's lock at a block before giving up till later.
_BUSY_MS = 1000

_LACKING = ("SELECT e.id, e.model, e.dim, e.vector FROM embeddings e WHERE e.id > ? AND NOT "
            "EXISTS (SELECT 1 FROM embedding_codes q WHERE q.id = e.id) ORDER BY e.id LIMIT ?")
#: The newest vector, and the newest with a compact row (equal unless an older version
#: wrote vectors since the mark, or the newest vector is torn and can have none).
_NEWEST = "SELECT (SELECT max(id) FROM embeddings), (SELECT max(id) FROM embedding_codes)"
_ADD = ("INSERT OR IGNORE INTO embedding_codes(id, model, codes) "
        "SELECT id, model, ? FROM embeddings WHERE id = ? AND vector = ?")


class CodesFiller:
    """The writer's side of the fill: once per process at most, one fill at a time,
    nothing on a read-only index."""

    def __init__(self, db_path: Path, *, read_only: bool = False,
                 busy_timeout_ms: int = 5000) -> None:
        self._db_path = db_path
        self._read_only = read_only
        self._busy_timeout_ms = busy_timeout_ms
        self._done = False
        self._filling = False

    async def fill(self) -> int:
        """Compact rows for every vector lacking one; returns how many were written."""
        if self._read_only or self._done or self._filling:
            return 0
        self._filling = True
        try:
            with mapped_errors(self._db_path):  # (it only speeds a load up: waits less)
                filled = await anyio.to_thread.run_sync(_fill, self._db_path,
                                                        min(self._busy_timeout_ms, _BUSY_MS))
            self._done = True
            return filled
        finally:
            self._filling = False


def _fill(db_path: Path, busy_timeout_ms: int) -> int:
    conn = sqlite3.connect(str(db_path), timeout=busy_timeout_ms / 1000,
                           isolation_level=None)
    try:
        after, filled = 0, 0
        if conn.execute("SELECT 1 FROM meta WHERE key = ? AND value = 'complete'",
                        (MARK,)).fetchone():
            newest, coded = conn.execute(_NEWEST).fetchone()
            if newest == coded:
                return 0
            after = coded or 0  # (an older version wrote vectors since)
        while rows := conn.execute(_LACKING, (after, BLOCK)).fetchall():
            after = int(rows[-1][0])
            added = _rows(rows)
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(_ADD, added)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            filled += len(added)
            anyio.from_thread.check_cancelled()
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, 'complete')", (MARK,))
        return filled
    finally:
        conn.close()


def _rows(rows: list[Any]) -> list[tuple[bytes, int, bytes]]:
    """(compact row, vector id, float32 vector) of each well-formed vector (rows: id,
    model, dim, vector), converted a size at a time (one model, one size: a vector of
    another is left without one)."""
    return [(code, int(r[0]), r[-1]) for same, vectors in by_size(rows)
            for r, code in zip(same, packed(vectors), strict=True)]
