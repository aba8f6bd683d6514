"""The exact float32 vectors of a search's candidates read by their rows in the thread
that scanned the compact matrix, on a connection of its own (``RowReads``).

Through the query connection the same 50 rows took 5.7 ms inside a search at a million
chunks, and 3.7 ms more went to handing the scan's result back to the event loop and
the read on to aiosqlite's thread; read here, a plain ``sqlite3`` connection in the
scan's thread, they take what the look-ups cost (1.4 ms standalone). The connection is
opened on first use (a process that never searches by meaning opens none, and none is
opened by the open itself) and shared by the worker threads under a lock (a read takes
milliseconds).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .schema import database
from .sql import mapped_errors

if TYPE_CHECKING:  # (numpy: loaded with the matrix, never by opening the index)
    from ...core.vectors import F32, I64


class RowReads:
    """Vectors read by their rows of ``embeddings``, blocking, from any thread."""

    def __init__(self, db_path: Path, *, busy_timeout_ms: int, snapshot: bool) -> None:
        self.db_path = db_path
        self._busy_timeout_ms = busy_timeout_ms
        self._snapshot = snapshot
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    def at(self, dim: int, sources: I64) -> tuple[I64, F32]:
        """The float32 vectors stored at these rows of ``embeddings`` (those still
        there), ascending (``MatrixStore.vectors_at``)."""
        import numpy as np

        from .vectors import THESE_VECTORS, arrays

        if len(sources) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        these = json.dumps(np.sort(sources).tolist())
        with self._lock, mapped_errors(self.db_path):
            rows = self._connection().execute(THESE_VECTORS, (these,)).fetchall()
        return arrays(rows, dim)

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError("the index was closed")
        if self._conn is None:
            conn = sqlite3.connect(
                database(self.db_path, readonly=True, snapshot=self._snapshot), uri=True,
                isolation_level=None, check_same_thread=False,
                timeout=self._busy_timeout_ms / 1000)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        """Closes the connection (once no read is under way: they take milliseconds)."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
