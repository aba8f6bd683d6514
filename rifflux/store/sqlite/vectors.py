"""The chunks' vectors as the query actor reads them: all of them, streamed in blocks
into its compact matrix (each vector's compact row as the writer stored it, or its
float32 vector converted when it has none; no float32 copy of the whole matrix is ever
made: a load's peak is the matrix and one block), and the exact float32 vectors of a
search's candidates through their texts (by their rows: ``rows_now``)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import anyio
import anyio.lowlevel
import numpy as np
import numpy.typing as npt

from ...core.codes import normalise, quantise, unpack
from ...core.vectors import F32, I64
from ..protocols import Assign, CodeBlocks, VectorBlocks
from .sql import Connection, Cursor, mapped_errors, snapshot

#: Rows per block of a load: 4,096 x 384 float32 is 6 MiB (a block costs about six
#: times that while it is converted).
BLOCK = 4096

#: Which chunks each vector serves, from two indexes (chunks by text and file,
#: embeddings by text and model), never a table's rows; as three lists of numbers in
#: one row, which NumPy parses at once (a million rows as tuples: 1.3 s; so: 0.5 s).
_SERVED = ("SELECT group_concat(e.id), group_concat(c.id), group_concat(c.file_id) "
           "FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash "
           "AND e.model = ?")
#: The vectors in the order they are stored: compact (``embedding_codes``), or float32.
#: Read so, a million float32 vectors take 1.1 s here; read in the chunks' order (one
#: lookup per chunk into the embeddings' pages) they took 4 s.
_CODES = "SELECT id, codes FROM embedding_codes WHERE model = ? ORDER BY id"
_VECTORS = "SELECT id, vector FROM embeddings WHERE model = ? ORDER BY id"
THESE_VECTORS = ("SELECT id, vector FROM embeddings WHERE id IN "
                  "(SELECT value FROM json_each(?)) ORDER BY id")

_Row = TypeVar("_Row", bound=Sequence[Any])


async def upper_bound(conn: Connection, db_path: Path) -> int:
    """At least as many as the chunks with a vector (the chunks, counted fast)."""
    with mapped_errors(db_path):
        rows = await conn.execute_fetchall("SELECT COUNT(*) FROM chunks")
    return int(next(iter(rows))[0])


async def stream(conn: Connection, db_path: Path, model: str, dim: int,
                 into: VectorBlocks, block: int = BLOCK,
                 into_codes: CodeBlocks | None = None,
                 beside: Callable[[], Awaitable[Connection]] | None = None,
                 assign: Assign | None = None) -> int:
    """Every chunk with a vector of ``model``, handed to ``into`` (row ids, float32
    vectors, files) in blocks of at most about ``block`` rows, all read in one snapshot
    of the database. With ``into_codes``, every one goes there instead, compact (row
    ids, codes, scales, files): its stored compact row, or its float32 vector converted
    once. With ``beside`` (opens another connection) and ``assign`` too, the compact
    rows go to ``into_codes`` by their vectors alone while the other connection finds
    the chunks they serve (the join of a million chunks to their vectors, 0.9 s of CPU
    that the load no longer waits for), then ``assign`` gives them those. Returns how
    many."""
    count = 0
    async with snapshot(conn, db_path):
        if into_codes is not None and await _has_codes(conn, db_path):
            if beside is not None and assign is not None:
                served = await _rows_then_chunks(conn, db_path, model, dim, block,
                                                 into_codes, beside, assign)
                count += int(np.count_nonzero(served.taken))
            else:
                served = await _served(conn, db_path, model)

                def codes(rows: list[Any]) -> int:
                    return _hand(rows, served, dim, into, into_codes)

                count += await _blocks(conn, db_path, _CODES, (model,), block, codes)
            rest = np.unique(served.vectors[~served.taken])
            for part in range(0, len(rest), block):  # (those stored before the codes)
                these = json.dumps(rest[part: part + block].tolist())
                count += await _blocks(conn, db_path, THESE_VECTORS, (these,), block,
                                       lambda rows: _hand(rows, served, dim, into, into_codes,
                                                          converted=True))
        else:
            served = await _served(conn, db_path, model)
            if len(served.vectors) == 0:
                return 0
            count += await _blocks(conn, db_path, _VECTORS, (model,), block,
                                   lambda rows: _hand(rows, served, dim, into, None))
    return count


async def _rows_then_chunks(conn: Connection, db_path: Path, model: str, dim: int,
                            block: int, into_codes: CodeBlocks,
                            beside: Callable[[], Awaitable[Connection]],
                            assign: Assign) -> _Served:
    """The compact rows handed to ``into_codes`` by their vectors (ids -1, files 0)
    while another connection finds the chunks each serves, then given those
    (``assign``); returns those chunks, ``taken`` where their vector had a row."""
    found: list[_Served] = []

    async def chunks() -> None:
        other = await beside()
        try:
            found.append(await _served(other, db_path, model))
        finally:
            with anyio.CancelScope(shield=True):
                await other.close()

    def rows(taken: list[Any]) -> int:
        width = 4 + dim
        taken = [r for r in taken if len(r[1]) == width]  # (one model, one size)
        if taken:
            ids = np.fromiter((r[0] for r in taken), dtype=np.int64, count=len(taken))
            codes, scales = unpack(b"".join(r[1] for r in taken), dim)
            unknown = np.full(len(ids), -1, dtype=np.int64)
            into_codes(unknown, codes, scales, np.zeros(len(ids), dtype=np.int64),
                       sources=ids)
        return len(taken)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(chunks)
            await _blocks(conn, db_path, _CODES, (model,), block, rows)
    except BaseExceptionGroup as group:  # the error itself, for mapped_errors
        raise group.exceptions[0] from None
    served = found[0]
    served.taken[:] = assign(served.vectors, served.chunks, served.files)
    return served


async def _blocks(conn: Connection, db_path: Path, sql: str,
                  args: tuple[Any, ...], block: int, take: Callable[[list[Any]], int]) -> int:
    """``take`` of each block of ``sql``'s rows; returns the sum of what it returns."""
    count = 0
    with mapped_errors(db_path):
        cursor = await conn.execute(sql, args)
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
                        count += take(rows)
                except BaseExceptionGroup as group:  # the error itself, for mapped_errors
                    raise group.exceptions[0] from None
                rows = following
        finally:
            await cursor.close()
    return count


async def _has_codes(conn: Connection, db_path: Path) -> bool:
    """False in an index made before ``embedding_codes``, opened read-only."""
    with mapped_errors(db_path):
        rows = await conn.execute_fetchall(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'embedding_codes'")
    return bool(list(rows))


class _Served(NamedTuple):
    """Every chunk that has a vector, ordered by its vector's row; ``taken``: handed on."""

    vectors: I64
    chunks: I64
    files: I64
    taken: npt.NDArray[np.bool_]


async def _served(conn: Connection, db_path: Path, model: str) -> _Served:
    with mapped_errors(db_path):
        rows = await conn.execute_fetchall(_SERVED, (model,))
    lists = next(iter(rows))
    vectors, chunks, files = (np.fromstring(text or "", dtype=np.int64, sep=",")
                              for text in lists)
    order = np.argsort(vectors, kind="stable")
    return _Served(vectors[order], chunks[order], files[order],
                   np.zeros(len(order), dtype=np.bool_))


def _hand(rows: Sequence[Sequence[Any]], served: _Served, dim: int, into: VectorBlocks,
          into_codes: CodeBlocks | None, *, converted: bool = False) -> int:
    """The chunks that these vectors serve (rows: vector row, then its packed codes
    with ``into_codes``, its float32 vector without it or when ``converted``; ascending
    rows), handed on; returns how many. Converted, each vector is converted once, and
    its codes are handed to each chunk it serves (a text a thousand chunks share is not
    a thousand float32 rows)."""
    packed = into_codes is not None and not converted
    width = 4 + dim if packed else 4 * dim
    rows = [r for r in rows if len(r[1]) == width]  # (one model, one size: not expected)
    if not rows:
        return 0
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    blob = b"".join(r[1] for r in rows)
    lo, hi = np.searchsorted(served.vectors, [ids[0], ids[-1] + 1])
    wanted = served.vectors[lo:hi]
    at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
    found = ids[at] == wanted
    chunks, files, at = served.chunks[lo:hi][found], served.files[lo:hi][found], at[found]
    served.taken[lo:hi] |= found
    if into_codes is None:
        into(chunks, np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)[at], files)
        return len(chunks)
    if packed:
        codes, scales = unpack(blob, dim)
    else:
        codes, scales = quantise(normalise(
            np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)))
    if len(at) != len(rows) or not bool((at == np.arange(len(rows))).all()):
        codes, scales = codes[at], scales[at]  # (else each row serves one chunk: no copy)
        ids = ids[at]
    into_codes(chunks, codes, scales, files, sources=ids)
    return len(chunks)


async def _fetch(cursor: Cursor, block: int, into: list[Any]) -> None:
    into.extend(await cursor.fetchmany(block))


async def exact(conn: Connection, db_path: Path, model: str, dim: int,
                rowids: I64) -> tuple[I64, F32]:
    """The float32 vectors of ``model`` of these chunks (those that still have one),
    in no particular order."""
    if len(rowids) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    with mapped_errors(db_path):
        # (in id order: each look-up starts near the last one, a quarter less time than
        # in the order of the scores at a million chunks)
        rows = await conn.execute_fetchall(
            "SELECT c.id, e.vector FROM chunks c JOIN embeddings e "
            "ON e.content_hash = c.content_hash AND e.model = ? "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (model, json.dumps(np.sort(rowids).tolist())))
    return arrays(list(rows), dim)


def arrays(rows: Sequence[Sequence[Any]], dim: int) -> tuple[I64, F32]:
    """Row ids and vectors of rows (id, vector); a vector of another size than ``dim``
    (not expected: one model, one size) is left out."""
    width = 4 * dim
    rows = [r for r in rows if len(r[-1]) == width]
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    blob = b"".join(r[-1] for r in rows)
    vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim)
    return ids, vectors


def by_size(rows: Sequence[_Row]) -> Iterator[tuple[list[_Row], F32]]:
    """Rows of ``embeddings`` that end in (dim, vector), a size at a time: the rows of
    one size and their float32 vectors as one array. A vector whose bytes are not as
    many as its size says (not expected: one model, one size) is left out."""
    sizes: dict[int, list[_Row]] = defaultdict(list)
    for row in rows:
        if len(row[-1]) == 4 * int(row[-2]) > 0:
            sizes[int(row[-2])].append(row)
    for dim, same in sorted(sizes.items()):
        yield same, np.frombuffer(b"".join(r[-1] for r in same),
                                  dtype=np.float32).reshape(len(same), dim)
