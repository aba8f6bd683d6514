"""Lexical ranking whose cost follows the query's terms, not every row they match.

FTS5 computes ``bm25()`` for every row that matches any word of an OR query: at a
million chunks a query of common words scores a few hundred thousand rows (about a
microsecond each). The lexicon (built by ``lexicon_build``) keeps, for every term in
at least ``min_rows`` chunks, the chunks that hold it and its weighted frequency
there, with every chunk's length and file. A search then ranks exactly as FTS5's
bm25 would (``core.bm25`` reproduces it bit for bit), in one read transaction:

- a frequent word is scored from its list, in numpy;
- another word from FTS5's list of its instances (``fts5vocab``), a fraction of a
  bm25 call per row;
- a phrase, a prefix or a lone CJK character by FTS5's bm25 of that phrase alone, which
  is exactly its part of the query's score;
- the parts are summed per chunk in phrase order, as bm25 sums them;
- for a query mixing CJK and other words, the chunks FTS5 finds holding every word
  (``build_every``, no bm25 needed) rank first, each group by bm25, as without it;
- equal scores: every chunk tied with the last one kept is returned, and the reader
  orders them by path, chunk index and root (``reader.stable_order``), as it orders
  FTS5's, so the lexicon never changes which tied chunks make the limit.

The lists describe the chunks as they were at the build, up to its watermark
``upto``. Chunks are never changed in place, only deleted and written anew, so
triggers (``schema``) keep what changed since: deleted chunks (``lexicon_gone``) and
the lowest id written at or below the watermark (``fresh_from``). Chunks above the
effective watermark are ranked by FTS5 itself, the whole query restricted to them;
the writer builds the lexicon again once they are many. Whatever the lexicon cannot
serve (none built yet, other weights) is ranked by FTS5 alone, as before.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import cast

import anyio
import numpy as np

from ...core import bm25
from ...core.bm25 import F64, I64, Mask
from ...core.catalog import Allowed
from ...core.fts_query import clauses
from .lexicon_schema import WEIGHTS_TEXT as WEIGHTS_TEXT
from .lexicon_schema import lexicon_built
from .schema import TOKENIZER
from .sql import Connection

Ranked = list[bm25.Hit]
#: Ranks the chunks above ``after`` by FTS5 alone (the whole query: match, limit,
#: allowed files, every, after), best first, as ``bm25.order`` gives them.
RankAbove = Callable[[str, int, Allowed | None, str | None, int], Awaitable[Ranked]]

#: Below this many (chunk, phrase) pairs the sums are done on the event loop.
_INLINE = 20_000
#: An fts5vocab instance's weight in bm25 (by its column), as SQL.
INSTANCE_WEIGHT = "CASE col " + " ".join(
    f"WHEN '{c}' THEN {w!r}" for c, w in zip(bm25.COLUMNS, bm25.WEIGHTS, strict=True)
) + " ELSE 0.0 END"

_TEMP = f"""
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexicon_words
    USING fts5(word, content='', tokenize='{TOKENIZER}');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexicon_word_tokens
    USING fts5vocab(temp, lexicon_words, 'instance');
CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexicon_instances
    USING fts5vocab(main, chunks_fts, 'instance');
"""


@dataclass(frozen=True, slots=True)
class _Build:
    """What one build of the lexicon says about every chunk up to its watermark."""

    number: int
    lengths: F64  # tokens in all columns, by chunk id
    files: I64  # file id, by chunk id (0: no such chunk at the build)
    totals: bm25.Totals  # sums by chunk id, kept from search to search


@dataclass(frozen=True, slots=True)
class _Sums:
    """What every phrase's part is computed with: the build, its effective watermark,
    the chunks of the build gone since, FTS5's row count and tokens per row."""

    build: _Build
    upto: int
    dead: Mask | None
    rows: int
    avgdl: float
    totals: bm25.Totals


@dataclass(frozen=True, slots=True)
class _Part:
    """One phrase's part of the score, computed off the event loop: chunks at or below
    the watermark and what the phrase adds to each. ``size``: about how many chunks."""

    size: int
    compute: Callable[[_Sums], tuple[I64, F64]]


class Lexicon:
    """The lexicon as one read connection sees it, with what it has decoded so far."""

    def __init__(self, conn: Connection, *, cache_bytes: int = 96 << 20) -> None:
        self._conn = conn
        self._lock = anyio.Lock()  # one read transaction at a time on the connection
        self._prepared = False
        self._build: _Build | None = None
        self._lists: OrderedDict[str, tuple[I64, F64] | None] = OrderedDict()
        self._cached_bytes = 0
        self._cache_bytes = cache_bytes
        self._tokens: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._dead: tuple[int, Mask] | None = None

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[None]:
        """One read transaction: everything read inside sees the same index."""
        async with self._lock:
            if not self._prepared:
                await self._conn.executescript(_TEMP)
                self._prepared = True
            await self._conn.execute("BEGIN")
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self._conn.execute("COMMIT")

    async def usable(self) -> bool:
        """Whether a lexicon is built (checked again inside the snapshot)."""
        return await lexicon_built(self._conn)

    async def ranked(self, match: str, limit: int, allowed: Allowed | None,
                     every: str | None, rank_above: RankAbove) -> Ranked | None:
        """The ``limit`` best chunks for ``match`` (a ``build_match`` expression) as
        (rowid, bm25, tier), as FTS5 ranks them, and every chunk tied with the last of
        them (``bm25.order``: the caller breaks the ties); the chunks matching ``every``
        (a ``build_every`` expression) first. None when the lexicon cannot serve (the
        caller asks FTS5). Inside ``snapshot``."""
        state = await self._state()
        if state is None:
            return None
        build, upto, newest, gone, rows, avgdl = state
        sums = _Sums(build, upto, await self._dead_mask(build, gone), rows, avgdl,
                     build.totals)
        found = clauses(match)
        words = await self._words(found)
        await self._load_lists({w[0] for w in words if w is not None and len(w) == 1})
        parts: list[_Part] = []
        for clause, tokens in zip(found, words, strict=True):
            if tokens == ():
                continue  # no token: the phrase matches nothing and adds nothing
            if tokens is None or len(tokens) > 1:
                parts.append(await self._phrase(clause, upto))
            elif self._lists.get(tokens[0]) is not None:
                hits_above = 0
                if newest > upto:  # chunks written since the build that hold it
                    hits_above = await self._count(
                        "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ? "
                        "AND rowid > ?", (clause, upto))
                parts.append(self._listed(tokens[0], hits_above))
            else:
                parts.append(await self._unlisted(tokens[0]))
        first = None if every is None else await self._every(every, build, upto)
        if sum(p.size for p in parts) > _INLINE:
            best = await anyio.to_thread.run_sync(_best, parts, sums, allowed, limit, first)
        else:
            best = _best(parts, sums, allowed, limit, first)
        if newest > upto:
            above = await rank_above(match, limit, allowed, every, upto)
            return bm25.merged([best, above], limit)
        return best

    # ------------------------------------------------------------ state

    async def _count(self, sql: str, params: Sequence[object] = ()) -> int:
        row = next(iter(await self._conn.execute_fetchall(sql, params)), None)
        return 0 if row is None else int(row[0])

    async def _state(self) -> tuple[_Build, int, int, int, int, float] | None:
        """The build; its effective watermark (chunks at or below it are as they were
        at the build, or gone); the newest chunk id; how many chunks of the build are
        gone; FTS5's row count and tokens per row. None without a usable build."""
        # (each statement in one trip to the connection's thread: a search makes several,
        # and on a busy machine each trip is a thread's wake-up)
        row = next(iter(await self._conn.execute_fetchall(
            "SELECT build, upto, fresh_from, weights, "
            "(SELECT block FROM chunks_fts_data WHERE id = 1), "
            "(SELECT max(id) FROM chunks), (SELECT count(*) FROM lexicon_gone) "
            "FROM lexicon WHERE id = 1")), None)
        if row is None or row[3] != WEIGHTS_TEXT:
            return None
        number, upto = int(row[0]), int(row[1])
        if row[2] is not None:
            upto = min(upto, int(row[2]) - 1)
        if self._build is None or self._build.number != number:
            blobs = next(iter(await self._conn.execute_fetchall(
                "SELECT lengths, files FROM lexicon WHERE id = 1")), None)
            assert blobs is not None
            lengths = bm25.decode_counts(blobs[0])
            self._build = _Build(number, lengths, bm25.decode_counts(blobs[1]).astype(np.int64),
                                 bm25.Totals(len(lengths)))
            self._lists.clear()
            self._cached_bytes = 0
            self._dead = None
        rows, avgdl = bm25.averages(bytes(row[4] or b""))
        return self._build, upto, int(row[5] or 0), int(row[6]), rows, avgdl

    async def _every(self, every: str, build: _Build, upto: int) -> Mask:
        """The chunks at or below the watermark that match ``every``, by chunk id."""
        found = [int(r[0]) for r in await self._conn.execute_fetchall(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid <= ?",
            (every, upto))]
        mask = np.zeros(len(build.lengths), dtype=np.bool_)
        mask[np.asarray(found, dtype=np.int64)] = True
        return mask

    async def _dead_mask(self, build: _Build, count: int) -> Mask | None:
        """Chunks of the build deleted since (the list only grows until the next build,
        so its length tells whether the mask is current)."""
        if count == 0:
            return None
        if self._dead is None or self._dead[0] != count:
            gone = np.fromiter((int(r[0]) for r in await self._conn.execute_fetchall(
                "SELECT id FROM lexicon_gone")), dtype=np.int64)
            mask = np.zeros(len(build.lengths), dtype=np.bool_)
            mask[gone[gone < len(mask)]] = True
            self._dead = (count, mask)
        return self._dead[1]

    async def _words(self, found: Sequence[str]) -> list[tuple[str, ...] | None]:
        """FTS5's tokens for each plain quoted word (``"w"``); None for other clauses."""
        texts = [c[1:-1] if len(c) > 1 and c[0] == c[-1] == '"' else None for c in found]
        todo = sorted({t for t in texts if t is not None and t not in self._tokens})
        if todo:
            clear = "INSERT INTO lexicon_words(lexicon_words) VALUES ('delete-all')"
            await self._conn.execute(clear)  # (also after a search cancelled half-way)
            await self._conn.executemany(
                "INSERT INTO lexicon_words(rowid, word) VALUES (?, ?)",
                list(enumerate(todo, 1)))
            tokens: dict[int, list[str]] = {}
            for doc, term in await self._conn.execute_fetchall(
                    "SELECT doc, term FROM lexicon_word_tokens ORDER BY doc, offset"):
                tokens.setdefault(int(doc), []).append(str(term))
            await self._conn.execute(clear)
            for i, text in enumerate(todo, 1):
                self._tokens[text] = tuple(tokens.get(i, ()))
            while len(self._tokens) > 4096:
                self._tokens.popitem(last=False)
        return [None if t is None else self._tokens[t] for t in texts]

    async def _load_lists(self, terms: set[str]) -> None:
        """The build's lists of these terms (None for a term without one)."""
        todo = sorted(t for t in terms if t not in self._lists)
        if todo:
            found = {str(r[0]): (bytes(r[1]), bytes(r[2]))
                     for r in await self._conn.execute_fetchall(
                         f"SELECT term, ids, counts FROM lexicon_terms WHERE term IN "
                         f"({','.join('?' * len(todo))})", todo)}
            for term in todo:
                blobs = found.get(term)
                if blobs is None:
                    self._lists[term] = None
                    continue
                ids, counts = bm25.decode_ids(blobs[0]), bm25.decode_counts(blobs[1])
                self._lists[term] = (ids, counts)
                self._cached_bytes += ids.nbytes + counts.nbytes
        for term in terms:
            self._lists.move_to_end(term)
        while self._cached_bytes > self._cache_bytes and len(self._lists) > len(terms):
            _, old = self._lists.popitem(last=False)
            if old is not None:
                self._cached_bytes -= old[0].nbytes + old[1].nbytes

    # ------------------------------------------------------------ one phrase's part

    def _listed(self, term: str, hits_above: int) -> _Part:
        """A term with a list: its chunks still as they were, weighed in numpy."""
        listed = self._lists[term]
        assert listed is not None
        ids, counts = listed

        def compute(sums: _Sums) -> tuple[I64, F64]:
            cut = int(np.searchsorted(ids, sums.upto, side="right"))
            kept, freqs = ids[:cut], counts[:cut]
            if sums.dead is not None:
                live = ~sums.dead[kept]
                kept, freqs = kept[live], freqs[live]
            phrase_idf = bm25.idf(sums.rows, len(kept) + hits_above)
            return kept, bm25.weigh(freqs, sums.build.lengths[kept], phrase_idf, sums.avgdl)

        return _Part(len(ids), compute)

    async def _unlisted(self, term: str) -> _Part:
        """A term without a list: its instances from FTS5's index (every chunk that
        holds it now), weighed in numpy."""
        found = next(iter(await self._conn.execute_fetchall(
            f"SELECT json_group_array(doc), json_group_array({INSTANCE_WEIGHT}) "
            "FROM lexicon_instances WHERE term = ?", (term,))), None)
        assert found is not None
        docs, weights = str(found[0]), str(found[1])

        def compute(sums: _Sums) -> tuple[I64, F64]:
            ids, counts = per_chunk(np.asarray(json.loads(docs), dtype=np.int64),
                                    np.asarray(json.loads(weights), dtype=np.float64))
            phrase_idf = bm25.idf(sums.rows, len(ids))
            cut = int(np.searchsorted(ids, sums.upto, side="right"))
            ids, counts = ids[:cut], counts[:cut]
            return ids, bm25.weigh(counts, sums.build.lengths[ids], phrase_idf, sums.avgdl)

        return _Part(len(docs) // 8, compute)

    async def _phrase(self, clause: str, upto: int) -> _Part:
        """A phrase, a prefix, a lone CJK character: FTS5's bm25 of it alone is exactly
        its part of the query's score."""
        w = ", ".join(repr(x) for x in bm25.WEIGHTS)
        found = list(await self._conn.execute_fetchall(
            f"SELECT rowid, bm25(chunks_fts, {w}) FROM chunks_fts "
            "WHERE chunks_fts MATCH ? AND rowid <= ?", (clause, upto)))
        ids = np.fromiter((int(r[0]) for r in found), dtype=np.int64, count=len(found))
        adds = np.fromiter((-float(r[1]) for r in found), dtype=np.float64, count=len(found))
        return _Part(len(ids), lambda _: (ids, adds))


def per_chunk(docs: I64, weights: F64) -> tuple[I64, F64]:
    """Instances (chunk, weight), grouped by chunk: the chunks and their weighted
    frequencies, added one after the other in instance order as bm25 adds them."""
    if len(docs) == 0:
        return docs, weights
    steps = np.diff(docs)
    if np.all(steps >= 0):  # as fts5vocab gives them: no sort needed
        at = np.concatenate(([0], np.cumsum(steps != 0)))
        ids = docs[np.concatenate(([0], np.flatnonzero(steps) + 1))]
    else:
        ids, at = np.unique(docs, return_inverse=True)
    return ids, cast(F64, np.bincount(at, weights=weights, minlength=len(ids)))


def _best(parts: list[_Part], sums: _Sums, allowed: Allowed | None, limit: int,
          first: Mask | None) -> Ranked:
    """Sum the parts per chunk in phrase order, as bm25 does, and keep the best (those
    ``first`` marks, by chunk id, before the others)."""
    if limit <= 0:
        return []
    passes: Mask | None = None
    if allowed is not None:
        passes = np.zeros(max(int(sums.build.files.max(initial=0)),
                              int(allowed.array.max(initial=0))) + 1, dtype=np.bool_)
        passes[allowed.array] = True
    try:
        for part in parts:
            ids, adds = part.compute(sums)
            if passes is not None:
                keep = passes[sums.build.files[ids]]
                ids, adds = ids[keep], adds[keep]
            sums.totals.add(ids, adds)
    except BaseException:
        sums.totals.discard()
        raise
    ids, totals = sums.totals.take()
    return bm25.order(ids, totals, limit, None if first is None else first[ids])
