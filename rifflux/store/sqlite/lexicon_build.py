"""Building the lexicon (``store.sqlite.lexicon``) when there is none or much has changed since.

All of it runs in a worker thread on a connection of its own, so the indexer goes on
with its work meanwhile. The lists are read in one read transaction, so writers go on
writing meanwhile: every frequent term's
instances from ``fts5vocab`` (a few hundred thousand rows a second), every chunk's
length from FTS5's docsize table and file from ``chunks``. They are stored in one
short write transaction, and only if FTS5's index is still the one that was read (its
averages and structure records are unchanged); otherwise the next refresh tries again.
Measured on 1,005,704 chunks: 18 s to read 839 lists of 31.8 million (chunk, term)
pairs, about 100 MB stored.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.from_thread
import numpy as np

from ...core import bm25
from .lexicon import INSTANCE_WEIGHT, WEIGHTS_TEXT, per_chunk
from .sql import mapped_errors


@dataclass(frozen=True, slots=True, kw_only=True)
class LexiconLimits:
    #: Below this many chunks FTS5 alone ranks in a few milliseconds: no lexicon.
    min_chunks: int = 20_000
    #: A term gets a list when it is in this share of the chunks ...
    term_share: float = 0.005
    #: ... and in at least this many (rarer terms are read from FTS5 at search time).
    min_rows: int = 64
    #: Built again when the chunks written or deleted since exceed this share of all
    #: chunks and this many (until then FTS5 ranks the chunks written since).
    stale_share: float = 0.02
    min_stale: int = 1_000


DEFAULT_LIMITS = LexiconLimits()


@dataclass(frozen=True, slots=True)
class _Collected:
    fingerprint: tuple[bytes, ...]
    upto: int
    min_rows: int
    lengths: bytes
    files: bytes
    terms: list[tuple[str, int, bytes, bytes]]  # term, chunks, ids, counts


class LexiconBuilder:
    """The writer's side of the lexicon (``Writer.lexicon``): builds it again when it is
    stale, one build at a time, on a connection of its own (the writer's connection is
    left to the indexer)."""

    def __init__(self, db_path: Path, *, read_only: bool = False, busy_timeout_ms: int = 5000,
                 limits: LexiconLimits | None = None) -> None:
        self._db_path = db_path
        self._read_only = read_only
        self._busy_timeout_ms = busy_timeout_ms
        self._limits = limits  # None: DEFAULT_LIMITS
        self._building = False
        self._again = False  # a refresh was asked for during a build

    async def refresh(self) -> bool:
        """Build the lexical search's lists again if there are none or many chunks
        changed since (``refresh``); nothing on a read-only index. A refresh asked for
        while a build is under way is that build's to do: it looks again once it ends
        (the build it ran may have read before the writes that asked). True when built."""
        if self._read_only:
            return False
        if self._building:
            self._again = True
            return False
        self._building, built = True, False
        try:
            while True:
                self._again = False
                with mapped_errors(self._db_path):
                    built = await refresh(self._db_path, self._limits or DEFAULT_LIMITS,
                                          busy_timeout_ms=self._busy_timeout_ms) or built
                if not self._again:
                    return built
        finally:
            self._building = False


async def refresh(db_path: Path, limits: LexiconLimits = DEFAULT_LIMITS, *,
                  busy_timeout_ms: int = 5000) -> bool:
    """Build the lexicon if it is missing or stale (drop it if the index shrank well
    below ``min_chunks``), in a worker thread on a connection of its own. True when a
    new one was stored. Cancelling it stops the reading within one term's list."""
    return await anyio.to_thread.run_sync(_refresh, db_path, limits, busy_timeout_ms)


def _refresh(db_path: Path, limits: LexiconLimits, busy_timeout_ms: int) -> bool:
    conn = sqlite3.connect(str(db_path), timeout=busy_timeout_ms / 1000,
                           isolation_level=None)
    try:
        if not _wanted(conn, limits):
            return False
        conn.executescript(
            "CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, chunks_fts, 'row');"
            "CREATE VIRTUAL TABLE temp.instances "
            "USING fts5vocab(main, chunks_fts, 'instance');")
        conn.execute("BEGIN")
        try:
            collected = _read(conn, limits)
        finally:
            conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        try:
            if _fingerprint(conn) != collected.fingerprint:
                return False  # written meanwhile: the next refresh reads it again
            _clear(conn)
            conn.executemany(
                "INSERT INTO lexicon_terms(term, rows, ids, counts) VALUES (?, ?, ?, ?)",
                collected.terms)
            conn.execute(
                "INSERT INTO lexicon(id, build, upto, fresh_from, weights, min_rows, "
                "lengths, files) VALUES (1, ?, ?, NULL, ?, ?, ?, ?)",
                (_next_build(conn), collected.upto, WEIGHTS_TEXT, collected.min_rows,
                 collected.lengths, collected.files))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return True
    finally:
        conn.close()


def _wanted(conn: sqlite3.Connection, limits: LexiconLimits) -> bool:
    """Whether to build: no build (or one with other weights), or more chunks changed
    since than the limits allow. Drops the lexicon of an index shrunk well below them."""
    block, upto, weights, gone = conn.execute(
        "SELECT (SELECT block FROM chunks_fts_data WHERE id = 1), "
        "(SELECT min(upto, coalesce(fresh_from - 1, upto)) FROM lexicon), "
        "(SELECT weights FROM lexicon), (SELECT count(*) FROM lexicon_gone)").fetchone()
    chunks, _ = bm25.averages(bytes(block or b""))
    if chunks < limits.min_chunks:
        if upto is not None and chunks < limits.min_chunks // 2:
            conn.execute("BEGIN IMMEDIATE")
            _clear(conn)
            conn.execute("COMMIT")
        return False
    if upto is None or weights != WEIGHTS_TEXT:
        return True
    above = conn.execute("SELECT count(*) FROM chunks WHERE id > ?", (upto,)).fetchone()
    return int(gone) + int(above[0]) > max(limits.min_stale, limits.stale_share * chunks)


def _clear(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM lexicon_terms")
    conn.execute("DELETE FROM lexicon_gone")
    conn.execute("DELETE FROM lexicon")


def _next_build(conn: sqlite3.Connection) -> int:
    """Build numbers only grow, also across a dropped lexicon (readers cache by them)."""
    conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('lexicon_build', '0')")
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 "
                 "WHERE key = 'lexicon_build'")
    return int(conn.execute("SELECT value FROM meta WHERE key = 'lexicon_build'").fetchone()[0])


def _fingerprint(conn: sqlite3.Connection) -> tuple[bytes, ...]:
    """FTS5's averages and structure records: any write to the index changes them."""
    return tuple(bytes(r[0]) for r in conn.execute(
        "SELECT block FROM chunks_fts_data WHERE id IN (1, 10) ORDER BY id"))


def _read(conn: sqlite3.Connection, limits: LexiconLimits) -> _Collected:
    """Everything a build stores, inside one read transaction."""
    fingerprint = _fingerprint(conn)
    upto = int(conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
    lengths = np.zeros(upto + 1, dtype=np.int64)
    sizes = conn.execute("SELECT id, sz FROM chunks_fts_docsize WHERE id <= ?", (upto,))
    for n, (chunk, size) in enumerate(sizes):
        if n % 65_536 == 0:
            anyio.from_thread.check_cancelled()
        lengths[chunk] = sum(bm25.varints(size))
    files = np.zeros(upto + 1, dtype=np.int64)
    ids, owners = conn.execute(
        "SELECT json_group_array(id), json_group_array(file_id) FROM chunks").fetchone()
    files[np.asarray(json.loads(ids), dtype=np.int64)] = json.loads(owners)
    rows = int(np.count_nonzero(files))
    least = max(limits.min_rows, math.ceil(limits.term_share * rows))
    frequent = [str(r[0]) for r in conn.execute(
        "SELECT term FROM temp.terms WHERE doc >= ?", (least,))]
    terms: list[tuple[str, int, bytes, bytes]] = []
    for term in frequent:
        anyio.from_thread.check_cancelled()
        docs, weights = conn.execute(
            f"SELECT json_group_array(doc), json_group_array({INSTANCE_WEIGHT}) "
            "FROM temp.instances WHERE term = ?", (term,)).fetchone()
        chunk_ids, counts = per_chunk(np.asarray(json.loads(docs), dtype=np.int64),
                                      np.asarray(json.loads(weights), dtype=np.float64))
        terms.append((term, len(chunk_ids), bm25.encode_ids(chunk_ids),
                      bm25.encode_counts(counts)))
    return _Collected(fingerprint, upto, least, bm25.encode_counts(lengths.astype(np.float64)),
                      bm25.encode_counts(files.astype(np.float64)), terms)
