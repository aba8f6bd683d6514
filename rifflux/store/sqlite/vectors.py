"""The chunks' vectors as the query actor reads them: all of them, streamed in blocks
into its compact matrix (no float32 copy of the whole matrix is ever made: a load's
peak is the matrix and one block), and the exact float32 vectors of a search's
candidates."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite
import anyio
import anyio.lowlevel
import numpy as np

from ...core.vectors import F32, I64
from ..protocols import VectorBlocks
from .schema import mapped_errors

#: Rows per block of a load: 4,096 x 384 float32 is 6 MiB (a block costs about six
#: times that while it is converted).
BLOCK = 4096

_VECTORS = ("SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e "
            "ON e.content_hash = c.content_hash AND e.model = ?")


async def upper_bound(conn: aiosqlite.Connection, db_path: Path) -> int:
    """At least as many as the chunks with a vector (the chunks, counted fast)."""
    with mapped_errors(db_path):
        rows = await conn.execute_fetchall("SELECT COUNT(*) FROM chunks")
    return int(next(iter(rows))[0])


async def stream(conn: aiosqlite.Connection, db_path: Path, model: str, dim: int,
                 into: VectorBlocks, block: int = BLOCK) -> int:
    """Every chunk with a vector of ``model``, handed to ``into`` in blocks of ``block``
    rows, all read in one statement (one snapshot of the database). Returns how many."""
    count = 0
    with mapped_errors(db_path):
        cursor = await conn.execute(_VECTORS, (model,))
        try:
            rows = list(await cursor.fetchmany(block))
            while rows:
                # the connection's thread reads the next block while this one is
                # converted here: the load takes the longer of the two, not their sum
                following: list[Any] = []
                try:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_fetch, cursor, block, following)
                        await anyio.lowlevel.checkpoint()  # (its request is queued now)
                        ids, vectors, files = _arrays(rows, dim, with_files=True)
                        into(ids, vectors, files)
                        count += len(ids)
                except BaseExceptionGroup as group:  # the error itself, for mapped_errors
                    raise group.exceptions[0] from None
                rows = following
        finally:
            await cursor.close()
    return count


async def _fetch(cursor: aiosqlite.Cursor, block: int, into: list[Any]) -> None:
    into.extend(await cursor.fetchmany(block))


async def exact(conn: aiosqlite.Connection, db_path: Path, model: str, dim: int,
                rowids: I64) -> tuple[I64, F32]:
    """The float32 vectors of ``model`` of these chunks (those that still have one),
    in no particular order."""
    if len(rowids) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    with mapped_errors(db_path):
        rows = await conn.execute_fetchall(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
            "ON e.content_hash = c.content_hash AND e.model = ? "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (model, json.dumps(rowids.tolist())))
    ids, vectors, _ = _arrays(list(rows), dim, with_files=False)
    return ids, vectors


def _arrays(rows: Sequence[Sequence[Any]], dim: int,
            with_files: bool) -> tuple[I64, F32, I64]:
    """Row ids, vectors and (with ``with_files``) files of rows (id, [file], vector);
    a vector of another size than ``dim`` (not expected: one model, one size) is left
    out."""
    width = 4 * dim
    rows = [r for r in rows if len(r[-1]) == width]
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    files = (np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
             if with_files else np.zeros(0, dtype=np.int64))
    blob = b"".join(r[-1] for r in rows)
    vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)
    return ids, vectors, files
