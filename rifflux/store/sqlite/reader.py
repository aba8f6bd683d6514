"""Read-side statements, on a connection of the reader's own (WAL lets it read while
the writer writes): the lexical ranking (FTS5's, or the lexicon's), chunk rows and
their stable order, the vectors (``vectors``), texts to embed, the catalog and the
other processes; the counts and lists are ``store.listings``'.

On any ``Connection``: aiosqlite's in a process with an event loop, or a one-shot read's
(``direct``), whose statements are answered at once in the calling thread; neither
aiosqlite nor anyio is imported here."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.hits import WEIGHTS, place
from ...errors import IndexDatabaseError
from ..common import (
    HIT_COLUMNS,
    HIT_SQL,
    ROW_SQL,
    Others,
    PendingText,
    Rows,
    row_dict,
    stable_order,
)
from ..listings import Listings
from ..written import FILE_ENTRY_COLUMNS, batches, file_entry, marks
from .lexicon_schema import lexicon_built
from .sql import OnConnection, mapped_errors

if TYPE_CHECKING:  # (numpy: imported by the semantic path and the lexicon alone)
    from ...core.catalog import Allowed
    from ...core.filters import FileEntry
    from ...core.hits import Hit
    from ...core.vectors import F32, I64
    from ...types import ChunkRecord
    from ..protocols import Assign, CodeBlocks, VectorBlocks
    from .lexicon import Lexicon
    from .missing import Missing
    from .rows_now import RowReads
    from .sql import Connection

#: bm25 column weights: a word in the heading breadcrumb counts double.
BM25_WEIGHTS = WEIGHTS  # heading_path, content, cjk (characters alone)
_SCORE = "bm25(chunks_fts, " + ", ".join(str(x) for x in BM25_WEIGHTS) + ")"

#: Where a chunk deleted since it was ranked goes among its ties (it is dropped later).
_GONE = ("", -1, "")


def _with_rows(hits: str) -> str:
    """A statement of (id, score, tier) rows -> the same with each chunk's
    ``HIT_COLUMNS`` first."""
    return (f"WITH hits AS ({hits}) SELECT {HIT_COLUMNS}, hits.tier, hits.score FROM hits "
            "JOIN chunks c ON c.id = hits.id JOIN files f ON f.id = c.file_id "
            "JOIN roots r ON r.id = f.root_id ORDER BY hits.tier DESC, hits.score")


def _place(row: Sequence[Any]) -> tuple[int, float]:
    """Where a lexical hit ranks, before ties are broken: its tier (chunks holding every
    word first), then its bm25 (lower is better)."""
    return -int(row[-2]), float(row[-1])


def _matching(every: str | None, allowed: Allowed | None, above: int | None) -> str:
    """The statement of (id, score, tier) rows, unordered, of the chunks matching
    ``:match`` (of ``allowed`` files; with ids above ``above``); tier 1: they match
    ``:every`` too."""
    tier = _tier(every)
    sql = f"SELECT t.rowid AS id, {_SCORE} AS score, {tier} AS tier FROM chunks_fts t "
    if allowed is not None:
        sql += "JOIN chunks k ON k.id = t.rowid "
    sql += "WHERE chunks_fts MATCH :match"
    if allowed is not None:
        sql += " AND k.file_id IN (SELECT value FROM json_each(:allowed))"
        if allowed.langs:
            sql += " AND k.lang IN (SELECT value FROM json_each(:langs))"
    return sql if above is None else sql + " AND t.rowid > :above"


def _tier(every: str | None) -> str:
    return ("t.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :every)"
            if every is not None else "0")


def _params(sql: str, **given: Any) -> dict[str, Any]:
    """The named parameters ``sql`` uses."""
    return {k: v for k, v in given.items() if f":{k}" in sql}


class Reader(Listings):
    """``ReadStore`` (its counts and lists: ``Listings``), the lexical leg's ranking and
    ``MatrixStore``."""

    def __init__(self, conn: Connection, db_path: Path, *,
                 beside: Callable[[], Awaitable[Connection]] | None = None,
                 rows: RowReads | None = None) -> None:
        super().__init__(OnConnection(conn, db_path))
        self.conn = conn
        self.db_path = db_path
        #: The candidates' exact vectors read by their rows (the query actor's reader).
        self._rows = rows
        #: Opens another read connection, for what a load reads beside this one.
        self._beside = beside
        self._lexicon: Lexicon | None = None  # (its module imports numpy: made when used)

    def _lexicon_of(self) -> Lexicon:
        if self._lexicon is None:
            from .lexicon import Lexicon

            self._lexicon = Lexicon(self.conn)
        return self._lexicon

    async def lexical(
        self, match: str, limit: int, allowed: Allowed | None = None, every: str | None = None,
        *, rows: int | None = None,
    ) -> tuple[list[tuple[int, float]], Rows]:
        """(chunk rowid, bm25) best first, and the rows of (at least) the first ``rows``
        of those chunks (None: all; ties are ordered without them), with their text keys
        (``Rows.texts``). ``match`` must come
        from ``build_match`` and ``every`` from ``build_every``: the chunks that match it
        (that hold every word of the query) come first, each group by bm25. With
        ``allowed``, only chunks of those files are ranked (before the limit). Equal
        scores are in ``stable_order``, never by row id, and which of them make the
        limit is decided by it too. Ranked by the lexicon when one is built
        (``store.sqlite.lexicon``: the same scores, at a cost that follows the query's terms),
        else by FTS5 (one round trip to the connection's thread, more when chunks tied on
        bm25 straddle the limit)."""
        with mapped_errors(self.db_path):
            try:
                # (the lexicon knows chunks by file, not by language: a search kept to
                # some languages is ranked by FTS5)
                # (once a lexicon was seen, its state, read in the snapshot, says whether
                # it can serve: no look before it)
                if (self._lexicon is not None or await lexicon_built(self.conn)) and not (
                        allowed and allowed.langs):
                    lexicon = self._lexicon_of()
                    async with lexicon.snapshot():
                        best = await lexicon.ranked(match, limit, allowed, every,
                                                    self._ranked_above)
                        if best is not None:
                            return await self._in_order(best, limit, rows)
                return await self._by_fts(match, limit, allowed, every)
            except sqlite3.OperationalError as exc:
                # build_match only emits quoted terms, so this is not expected; a query
                # error must still never reach the caller as a crash.
                if "fts5" in str(exc).lower() or "syntax" in str(exc).lower():
                    return [], Rows()
                raise

    async def _by_fts(
        self, match: str, limit: int, allowed: Allowed | None, every: str | None,
    ) -> tuple[list[tuple[int, float]], Rows]:
        """FTS5 ranks every row that matches, and the rows come in the same statement."""
        matching = _matching(every, allowed, None)
        params = _params(matching, match=match, every=every,
                         allowed=None if allowed is None else allowed.json,
                         langs=None if allowed is None else allowed.langs_json)
        rows = list(await self.conn.execute_fetchall(
            _with_rows(f"{matching} ORDER BY tier DESC, score LIMIT :limit"),
            {**params, "limit": limit + 1}))
        ties: list[int] = []
        last = (0, 0.0)
        if len(rows) > limit and _place(rows[limit]) == _place(rows[limit - 1]):
            last = _place(rows[limit])  # a tie across the limit: all of it
            rows = [r for r in rows if _place(r) < last]
            ties = [int(r[0]) for r in await self.conn.execute_fetchall(
                f"{matching} AND {_SCORE} = :score AND {_tier(every)} = :tier",
                {**params, "score": last[1], "tier": -last[0]})]
        rows = sorted(rows, key=lambda r: (*_place(r), *stable_order(r)))[:limit]
        ranked = [(int(r[0]), float(r[-1])) for r in rows]
        found = Rows.of_hits(rows)
        if ties:
            keys = await self._order_keys(ties)
            ties = sorted(ties, key=lambda cid: keys.get(cid, _GONE))[: limit - len(ranked)]
            ranked += [(cid, last[1]) for cid in ties]
            found.add_hits(await self._hit_rows(ties))
        return ranked, found

    async def _ranked_above(self, match: str, limit: int, allowed: Allowed | None,
                            every: str | None, above: int) -> list[Hit]:
        """FTS5's ranking of the chunks with ids above ``above`` alone, as (id, bm25,
        tier) best first: the first ``limit`` and every chunk tied with the last."""
        matching = _matching(every, allowed, above)
        params = _params(matching, match=match, every=every, above=above,
                         allowed=None if allowed is None else allowed.json,
                         langs=None if allowed is None else allowed.langs_json)
        rows = await self.conn.execute_fetchall(
            f"{matching} ORDER BY tier DESC, score LIMIT :limit", {**params, "limit": limit + 1})
        hits = [(int(r[0]), float(r[1]), int(r[2])) for r in rows]
        if len(hits) > limit and place(hits[limit]) == place(hits[limit - 1]):
            last = hits[limit]  # a tie across the limit: all of it
            hits = [h for h in hits if place(h) < place(last)]
            hits += [(int(r[0]), float(r[1]), int(r[2])) for r in await self.conn.execute_fetchall(
                f"{matching} AND {_SCORE} = :score AND {_tier(every)} = :tier",
                {**params, "score": last[1], "tier": last[2]})]
        return hits

    async def _in_order(self, hits: list[Hit], limit: int, rows: int | None,
                        ) -> tuple[list[tuple[int, float]], Rows]:
        """``hits`` (best first, equal places together) holding every chunk tied with
        the ``limit``-th of them, cut to ``limit`` with equal scores in ``stable_order``
        (the order keys of tied chunks alone are read), and the rows of the first
        ``rows`` (None: all)."""
        last = place(hits[limit - 1]) if 0 < limit < len(hits) else None
        tied = [] if last is None else [h[0] for h in hits if place(h) == last]
        better = [h for h in hits[:limit] if last is None or place(h) < last]
        among = [h[0] for i, h in enumerate(better)  # (copies of one text, mostly)
                 if (i > 0 and place(better[i - 1]) == place(h))
                 or (i + 1 < len(better) and place(better[i + 1]) == place(h))]
        keys = await self._order_keys(among + tied) if among or tied else {}
        better.sort(key=lambda h: (*place(h), *keys.get(h[0], _GONE)))
        ranked = [(cid, score) for cid, score, _ in better]
        if tied and last is not None:
            tied = sorted(tied, key=lambda cid: keys.get(cid, _GONE))[: limit - len(ranked)]
            ranked += [(cid, last[1]) for cid in tied]
        wanted = [cid for cid, _ in ranked[:rows]]
        return ranked, Rows.of_hits(await self._hit_rows(wanted) if wanted else [])

    async def in_stable_order(self, ranked: list[tuple[int, float]],
                              limit: int) -> list[tuple[int, float]]:
        """``ranked`` (row id, score; highest first) with equal scores in
        ``stable_order``, cut to ``limit``: the same order whatever the row ids, so two
        indexes of the same files rank alike. Only tied chunks are looked up."""
        tied = [cid for i, (cid, score) in enumerate(ranked)
                if (i > 0 and ranked[i - 1][1] == score)
                or (i + 1 < len(ranked) and ranked[i + 1][1] == score)]
        if not tied:
            return ranked[:limit]
        keys = await self._order_keys(tied)
        return sorted(ranked, key=lambda hit: (-hit[1], *keys.get(hit[0], _GONE)))[:limit]

    async def _order_keys(self, rowids: Sequence[int]) -> dict[int, tuple[str, int, str]]:
        """``stable_order`` of these chunks."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT c.id, f.rel_path, c.chunk_index, r.path FROM chunks c "
                "JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id "
                "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(list(rowids)),))
        return {int(r[0]): (str(r[1]), int(r[2]), str(r[3])) for r in rows}

    async def _hit_rows(self, rowids: Sequence[int]) -> list[sqlite3.Row]:
        """Rows of ``HIT_COLUMNS``: a lexical leg's hits, with their text keys."""
        return await self._these(HIT_SQL, rowids)

    async def rows(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not rowids:
            return {}
        return {int(r[0]): row_dict(r) for r in await self._these(ROW_SQL, rowids)}

    async def _these(self, sql: str, rowids: Sequence[int]) -> list[sqlite3.Row]:
        """The rows ``sql`` (up to its ``WHERE``) reads of these chunks."""
        with mapped_errors(self.db_path):
            return list(await self.conn.execute_fetchall(
                sql + f"WHERE c.id IN ({marks(len(rowids))})", tuple(rowids)))

    async def texts_of(self, hashes: Sequence[str]) -> list[PendingText]:
        """The texts to embed of these content hashes (those some chunk still has), in
        the order given: a look-up by the hash index, whatever the index's size."""
        from ...core.chunker import embed_text  # (the embedder's: not a search's)

        found: dict[str, PendingText] = {}
        with mapped_errors(self.db_path):
            for part in batches(hashes):
                rows = await self.conn.execute_fetchall(
                    "SELECT content_hash, heading_path, content FROM chunks WHERE "
                    f"content_hash IN ({marks(len(part))}) GROUP BY content_hash", tuple(part))
                found.update((str(r[0]), PendingText(str(r[0]), embed_text(str(r[1]),
                                                                           str(r[2]))))
                             for r in rows)
        return [found[h] for h in hashes if h in found]

    async def vector_capacity(self) -> int:
        """At least as many as the chunks with a vector (to size a matrix before a load)."""
        from . import vectors

        return await vectors.upper_bound(self.conn, self.db_path)

    async def stream_vectors(self, model: str, dim: int, into: VectorBlocks,
                             into_codes: CodeBlocks | None = None,
                             assign: Assign | None = None) -> int:
        """Every chunk with a vector of ``model``, handed to ``into`` (row ids, vectors,
        files) a block at a time from one snapshot, or, given ``into_codes``, all of them
        to it compact (row ids, codes, scales, files); returns how many. Given
        ``assign`` and a connection beside this one, the chunks the compact rows serve
        are found on that one while the rows are read (``vectors.stream``)."""
        from . import vectors

        return await vectors.stream(self.conn, self.db_path, model, dim, into,
                                    into_codes=into_codes,
                                    beside=None if assign is None else self._beside,
                                    assign=assign)

    async def exact_vectors(self, model: str, dim: int, rowids: I64) -> tuple[I64, F32]:
        """The float32 vectors of ``model`` of these chunks (those that have one)."""
        from . import vectors

        return await vectors.exact(self.conn, self.db_path, model, dim, rowids)

    def vectors_at(self, dim: int, sources: I64) -> tuple[I64, F32]:
        """The float32 vectors stored at these rows of ``embeddings`` (those still
        there), ascending: blocking, on a connection of their own (``rows_now``)."""
        if self._rows is None:
            raise RuntimeError("this reader reads no vectors by their rows")
        return self._rows.at(dim, sources)

    async def catalog(self, *, in_thread: bool = True,
                      ) -> tuple[dict[int, str], list[FileEntry], list[tuple[int, int]]]:
        """Every root, every file as filters see it, and every link between two files
        (linking file, linked file). ``in_thread``: the files' JSON is read in a worker
        thread (a one-shot read, which has nothing else to do meanwhile, reads it here)."""
        with mapped_errors(self.db_path):
            roots = await self.conn.execute_fetchall("SELECT id, path FROM roots")
            files = await self.conn.execute_fetchall(f"SELECT {FILE_ENTRY_COLUMNS} FROM files")
            edges = await self.conn.execute_fetchall(
                "SELECT DISTINCT file_id, target_file_id FROM links "
                "WHERE target_file_id IS NOT NULL AND target_file_id != file_id")
        # (off the event loop: 73,000 files' tags and front matter are 0.6 s of JSON that
        # the searches of a process just opened would otherwise wait behind)
        if in_thread:
            import anyio

            entries = await anyio.to_thread.run_sync(lambda: [file_entry(f) for f in files])
        else:
            entries = [file_entry(f) for f in files]
        return ({int(r[0]): str(r[1]) for r in roots}, entries,
                [(int(e[0]), int(e[1])) for e in edges])

    async def processes(self, origin: str) -> Others:
        """The other processes with the index open, and the change sequence number."""
        from .changes import sequence  # (the reads of a process among the others)
        from .presence import Presence

        others = await Presence(self.conn, self.db_path, origin).others()
        try:
            with mapped_errors(self.db_path):
                return Others(others, await sequence(self.conn))
        except IndexDatabaseError:  # an index made before the log (read-only)
            return Others(others, 0)


class Pending:
    """The embedder's queue (``PendingStore``): the newest texts of the exact set the
    writer keeps (``Missing``, a read of its owner's state between awaits), read by
    their hashes. A window costs what it holds, whatever the index's size (a query
    for the texts without a vector scanned every chunk: 3 s a window at a million)."""

    def __init__(self, missing: Missing, reader: Reader) -> None:
        self._missing = missing
        self._reader = reader

    async def pending(self, model: str, limit: int) -> list[PendingText]:
        """Texts with no vector from ``model``, newest first (none while another model
        is the active one: the writer adopts the embedder's model before it asks)."""
        if self._missing.model != model:
            return []
        return await self._reader.texts_of(self._missing.newest(limit))
