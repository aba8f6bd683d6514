"""The commits' lexical leg on PostgreSQL: FTS5's bm25 over a commit's title, body, paths
and change (weighted ``history.rows.WEIGHTS``), computed from WAL-logged data as the
chunks' is (``lexical``), so that both stores rank commits alike, after a server restart
and on a read replica too.

A query is read as the chunks' (``core.lexemes.lexical_query``: FTS5's phrases), plus
the phrase of its words in a title (``history.rows.title_words``), as SQLite's
``history_match`` adds it. Which commits match is told by the ``tsquery`` over
``commits.words`` (a GIN index). The candidates are the best of the BM25 index
(``pg_textsearch``, ``history_schema.HISTORY_BM25``), ``POOL`` times as many as asked, at
least ``lexical.POOL_LEAST`` (``lexical.candidates``: 30 for the top 10, 200 for a hybrid
search's 100), while it is whole (``bm25_index.Accelerator``, the
chunks' rule), read further while too few of them match or pass the filters; else, and
with filters that keep few commits, every commit that matches. A ``prefix*`` is asked
of the BM25 index as the chunks' is, by the words that complete it (at most
``bm25_counts.EXPANSIONS``, shortest first): a prefix with more completions than that
ranks the commits those find, and the answer says so (``Found.note``).

A search is one statement (two with a prefix to complete): the scan, its candidates'
counts and the totals and lexicon counts FTS5's bm25 needs (``bm25_counts``), in one
snapshot. Only ids are read from the BM25 index (a score read beside them is computed
again from the commit's text, row by row: 0.2 ms each). Each candidate is scored as
FTS5 scores it (``core.bm25.score``): each phrase's instances in its fields, counted as
often as the field's weight, the phrase's idf from the commits that hold it, the
commit's length and the totals as FTS5 counts them (``commits.length``,
``commit_totals``). A query of words only has its words' instances counted by the
server from the commit's ``tsvector`` (``words``: each field is there as often as its
weight, so a word's positions are its weighted instances), the title phrase's from the
title's (``title_words``): a few numbers per candidate, nothing of its text. A
``tsvector`` keeps at most 256 positions of a word and none past 16,383: a candidate
that may hold more, and a query with a phrase or a prefix (FTS5 counts a phrase only
within one field), has its fields read and counted (``core.lexemes.frequencies``).
Equal scores: the older row first, as SQLite orders them.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from ...core.bm25 import score
from ...core.lexemes import (
    SEPARATOR,
    Clause,
    LexicalQuery,
    frequencies,
    lexical_query,
    tokens,
    tsquery,
)
from ...history.rows import WEIGHTS, HistoryFilters, title_words
from ...location import DatabaseUrl
from .bm25_counts import COMMIT_COUNTS, EXPANSIONS, Params, completions, counts, statistics
from .bm25_index import COMMITS, Accelerator, scanned
from .connection import Connection, Pool, mapped_errors, numbered
from .history_schema import HISTORY_BM25
from .lexical import SCAN_MOST, candidates

_VECTOR = "c.words"
#: A candidate's fields once each (``lexemes`` holds each as often as its weight: the
#: first copy of each).
_FIELDS = ", ".join(
    f"split_part(c.lexemes, ' | ', {1 + sum(WEIGHTS[:i])}) AS f{i}" for i in range(len(WEIGHTS)))
#: How many times as many commits as asked the BM25 index gives to be ranked as FTS5 ranks
#: them (``lexical.candidates``; the chunks' leg takes 1.3). On pdf.js's 23,500 commits,
#: 60 queries, beside SQLite's on the same: twice (200 for a hybrid search) fuses the
#: same hybrid top 10 for 59 (1.3 times: 56), and its lexical top 10 holds 0.963 of
#: SQLite's either way (30 candidates).
POOL = 2
#: A filter keeping at most this many commits is applied before ranking: its matching
#: commits are scored, all of them.
PREFILTER = 2_000
#: What a ``tsvector`` keeps of a word: at most this many positions, none past the last.
_MOST_POSITIONS, _LAST_POSITION = 256, 16_383
#: How many title phrases' counts a process keeps (``TitleCounts``), the last used.
TITLES_KEPT = 512
#: A word's positions in a ``tsvector``'s text.
_POSITIONS = re.compile(r"'((?:[^']|'')*)':([0-9A-D,]+)")


def commit_lexemes(title: str, body: str, paths: str, summary: str) -> tuple[str, int]:
    """What the lexical leg indexes of a commit: each field's tokens, repeated as often as
    its weight, the copies set apart (``core.lexemes.SEPARATOR``); and its tokens as
    FTS5 counts them (each field once)."""
    made = [tokens(text) for text in (title, body, paths, summary)]
    fields = [" ".join(t) for t in made]
    parts = [f for f, weight in zip(fields, WEIGHTS, strict=True) for _ in range(weight)]
    return SEPARATOR.join(parts), sum(map(len, made))


@dataclass(slots=True)
class Found:
    """A search's candidates as the statement gave them, and what the answer should say
    of how they were found (None: nothing)."""

    rows: list[Any] = field(default_factory=list)
    note: str | None = None


class TitleCounts:
    """How many commits' titles hold a phrase, as last counted, and the state of the
    commits then: their count and tokens (``commit_totals``) and the newest commit's id.

    A phrase of common words (a merge's "Merge pull request") is held, word by word, by
    thousands of titles, each read again for the words' order (pdf.js: 9,200 titles, 20
    ms, at each search of such words). Kept, it is counted again only once the commits
    change: a commit written takes an id above every other, so a state with as many
    commits, as many tokens and the same newest id holds the same commits (one case
    aside: a commit whose id was taken before the newest's, written after it, while
    another of as many tokens was dropped; its phrase counts are then one apart until
    the next change)."""

    def __init__(self, most: int = TITLES_KEPT) -> None:
        self._most = most
        self._kept: OrderedDict[str, tuple[int, int, int, int]] = OrderedDict()

    def get(self, phrase: str) -> tuple[int, int, int, int] | None:
        """(commits, tokens, newest id, the count) as last counted, or None."""
        kept = self._kept.get(phrase)
        if kept is not None:
            self._kept.move_to_end(phrase)
        return kept

    def keep(self, phrase: str, state: Sequence[int], count: int) -> None:
        """The phrase's count in ``state`` (commits, tokens, newest id)."""
        commits, tokens, newest = (int(x) for x in state)
        self._kept[phrase] = (commits, tokens, newest, int(count))
        self._kept.move_to_end(phrase)
        while len(self._kept) > self._most:
            self._kept.popitem(last=False)


class HistoryLexical:
    """The commits' lexical leg of one process, on its pool."""

    def __init__(self, pool: Pool, where: DatabaseUrl, *, bm25: bool) -> None:
        self._pool = pool
        self._where = where
        self._index = Accelerator(where, COMMITS, enabled=bm25)
        self._titles = TitleCounts()

    def condition(self) -> str | None:
        return self._index.condition("history search")

    async def lexical(self, query: str, limit: int, filters: HistoryFilters
                      ) -> tuple[list[tuple[int, float]], str | None]:
        """The best ``limit`` commits and their bm25 (lower is better), and what the
        answer should say of how they were found (a prefix cut: None when nothing)."""
        q = lexical_query(query)
        if q is None or limit < 1:
            return [], None
        words = title_words(query)
        title: Clause | None = None
        if words:
            title = (tuple(t for w in words for t in tokens(w)), False)
            title = title if title[0] else None
        with mapped_errors(self._where):
            # (no transaction: the candidates and the counts they are ranked by are read
            # by one statement, in one state)
            async with self._pool.acquire() as conn:
                found = await self._found(conn, q, title, limit, filters)
                rows = [r for r in found.rows if r["id"] is not None]
                if not rows:
                    return [], found.note
                fields: dict[int, Any] = {}
                held: dict[int, list[int]] = {}
                if not _by_words(q):
                    fields = {int(r["id"]): r for r in rows}
                else:
                    terms = [toks[0] for toks, _ in q.clauses]
                    held = {int(r["id"]): _held(r["at_words"], terms) for r in rows}
                if cut := [cid for cid, counts in held.items() if -1 in counts]:
                    # (rare: a word a commit holds more often than its tsvector keeps)
                    fields = {int(r["id"]): r for r in await conn.fetch(
                        f"SELECT c.id, {_FIELDS} FROM commits c WHERE c.id = "
                        "ANY($1::bigint[])", cut)}
        held_counts = list(rows[0]["counts"])  # (the newest commit's id last)
        if title is not None:
            self._titles.keep(tsquery(title), [*held_counts[:2], held_counts[-1]],
                              held_counts[-2])
        idfs, avgdl = statistics(held_counts[:-1])
        scored: list[tuple[float, int]] = []
        for r in rows:
            cid = int(r["id"])
            freqs = _frequencies(fields[cid], q, title) if cid in fields else \
                _from_positions(r, held[cid], title)
            if any(freqs):  # (else a phrase only ran from one field into the next)
                scored.append((score(freqs, float(r["length"]), idfs, avgdl), cid))
        scored.sort()
        return [(cid, s) for s, cid in scored[:limit]], found.note

    async def _found(self, conn: Connection, q: LexicalQuery, title: Clause | None,
                     limit: int, filters: HistoryFilters) -> Found:
        """The candidates: the best of the BM25 index while it is whole, else (and for a
        filter keeping few commits) every commit that matches."""
        if not filters.any() or not await self._few(conn, filters):
            ranking, note = q.ranking, None
            if q.prefixes and await self._index.whole_now(conn):
                ranking, note = await _completed(conn, q)
            if ranking and await self._index.whole_now(conn):
                try:  # (outside a transaction: a torn index fails its statement alone)
                    found = await self._scanned(conn, q, title, ranking,
                                                candidates(limit, POOL), filters)
                except asyncpg.InternalServerError as exc:  # pages a crash tore
                    self._index.lost(f"the commits' BM25 index cannot be read ({exc})")
                    found = None
                if found and found[0]["id"] is not None:
                    return Found(found, note)
                if found is not None and not await self._any(conn, q, filters):
                    return Found()
                if found is not None:
                    self._index.lost("the commits' BM25 index found nothing that the GIN "
                                     "index finds (a server restart empties it)")
        return Found(await self._every(conn, q, title, filters))

    async def _few(self, conn: Connection, filters: HistoryFilters) -> bool:
        clause, args = filters.clause()
        n = await conn.fetchval(numbered(
            f"SELECT count(*) FROM (SELECT 1 FROM commits c WHERE {clause} LIMIT ?) s"),
            *args, PREFILTER + 1)
        return int(n) <= PREFILTER

    async def _every(self, conn: Connection, q: LexicalQuery, title: Clause | None,
                     filters: HistoryFilters) -> list[Any]:
        """Every commit that matches and passes the filters (through the GIN index, which
        is WAL-logged: whole after a restart and on a replica)."""
        p = Params()
        columns = _columns(p, q, title)
        where = f"{_VECTOR} @@ to_tsquery('simple', {p(q.match)}) AND {p.shared(*filters.clause())}"
        return list(await conn.fetch(
            f"SELECT {columns}, {_counts(p, q, title, self._titles)} AS counts FROM commits c "
            f"WHERE {where}", *p.values))

    async def _any(self, conn: Connection, q: LexicalQuery, filters: HistoryFilters) -> bool:
        clause, args = filters.clause()
        return bool(await conn.fetchval(numbered(
            f"SELECT EXISTS (SELECT 1 FROM commits c WHERE {_VECTOR} @@ "
            f"to_tsquery('simple', ?) AND {clause})"), q.match, *args))

    async def _scanned(self, conn: Connection, q: LexicalQuery, title: Clause | None,
                       ranking: str, want: int, filters: HistoryFilters) -> list[Any]:
        """The best ``want`` of the BM25 index's scan that match and pass the filters,
        read further (four times as far each time, up to ``SCAN_MOST``) while too few
        do; every match when that is not enough. One row with a null id when none do."""
        depth = want
        while True:
            p = Params()
            scan = (f"SELECT c.id FROM commits c ORDER BY c.lexemes <@> "
                    f"to_bm25query({p(ranking)}, '{HISTORY_BM25}') LIMIT {p(depth)}")
            # (a scan by words only gives the commits that hold one: they match)
            where = ["TRUE" if _by_words(q) else
                     f"{_VECTOR} @@ to_tsquery('simple', {p(q.match)})",
                     p.shared(*filters.clause())]
            rows = await scanned(conn, (
                f"WITH hit AS (SELECT array_agg(s.id) AS ids, count(*) AS seen FROM ({scan}) "
                f"s) SELECT hit.seen, x.*, {_counts(p, q, title, self._titles)} AS counts "
                f"FROM hit LEFT JOIN LATERAL (SELECT {_columns(p, q, title)} FROM "
                f"unnest(hit.ids) WITH ORDINALITY AS h(id, at) JOIN commits c ON c.id = h.id WHERE "
                f"{' AND '.join(where)} ORDER BY h.at LIMIT {p(want)}) x ON TRUE"), *p.values)
            held = [r for r in rows if r["id"] is not None]
            if len(held) >= want or int(rows[0]["seen"]) < depth:
                return list(rows)  # (enough, or every commit the index scores was read)
            if depth >= SCAN_MOST:
                return await self._every(conn, q, title, filters)
            depth = min(depth * 4, SCAN_MOST)


def _by_words(q: LexicalQuery) -> bool:
    """Whether every clause of the query is one whole word (its instances are counted
    from the commits' ``tsvector``)."""
    return all(len(toks) == 1 and not prefix for toks, prefix in q.clauses)


def _columns(p: Params, q: LexicalQuery, title: Clause | None) -> str:
    """A candidate as it is scored: its id and length, and its words' positions (a query
    of words: its ``tsvector`` kept to the query's words, and its title's kept to the
    title phrase's, as text, parsed here: a few numbers a word) or its fields."""
    if not _by_words(q):
        return f"c.id, c.length, {_FIELDS}"
    terms = p([toks[0] for toks, _ in q.clauses])
    title_terms = p(list(title[0]) if title else [])
    return (f"c.id, c.length, ts_filter(setweight({_VECTOR}, 'A', {terms}::text[]), '{{a}}')"
            f"::text AS at_words, CASE WHEN cardinality({title_terms}::text[]) > 0 THEN "
            f"ts_filter(setweight(c.title_words, 'A', {title_terms}::text[]), '{{a}}')::text "
            "END AS at_title")


def _counts(p: Params, q: LexicalQuery, title: Clause | None, titles: TitleCounts) -> str:
    """The counts FTS5's bm25 needs (``bm25_counts.counts``), then the title phrase's
    commits (counted through the titles' own index, unless the commits are as they were
    when it was last counted: ``TitleCounts``), then the newest commit's id."""
    more = []
    if title is not None:
        phrase = tsquery(title)
        count = (f"SELECT count(*) FROM commits c WHERE c.title_words @@ to_tsquery("
                 f"'simple', {p(phrase)})")
        kept = titles.get(phrase)
        if kept is not None:  # (``t``: the totals' row, ``counts``' own)
            commits, tokens, newest, n = kept
            count = (f"SELECT CASE WHEN t.commits = {p(commits)}::bigint AND t.tokens = "
                     f"{p(tokens)}::bigint AND (SELECT max(x.id) FROM commits x) = "
                     f"{p(newest)}::bigint THEN {p(n)}::bigint ELSE ({count}) END")
        more.append(count)
    more.append("SELECT max(x.id) FROM commits x")
    return counts(p, COMMIT_COUNTS, q.clauses, more)


async def _completed(conn: Connection, q: LexicalQuery) -> tuple[str, str | None]:
    """The query's tokens with its prefixes' completions (the BM25 index ranks by
    words), and what the answer says when a prefix had more than it takes."""
    words = await completions(conn, COMMIT_COUNTS, q.prefixes)
    cut = [prefix for prefix in q.prefixes
           if sum(w.startswith(prefix) for w in words) >= EXPANSIONS]
    note = None if not cut else (
        f"{', '.join(f'{p}*' for p in cut)} has more than {EXPANSIONS} completions: "
        f"the commits holding its {EXPANSIONS} shortest were ranked (give more of the "
        "word to rank every commit it matches)")
    return " ".join([q.ranking, *words]).strip(), note


def _positions(text: str | None) -> dict[str, list[int]]:
    if not text:
        return {}
    return {word.replace("''", "'"): [int(x.rstrip("ABCD")) for x in places.split(",")]
            for word, places in _POSITIONS.findall(text)}


def _held(text: str | None, terms: list[str]) -> list[int]:
    """Each term's instances in a candidate's ``tsvector`` (its text, kept to the query's
    words): -1 where the ``tsvector`` may not hold them all (``_MOST_POSITIONS`` of them,
    or one at its last position). Counted from the text (its positions ascending), none
    parsed: a common word's are many."""
    at = {} if not text else {
        word.replace("''", "'"): places for word, places in _POSITIONS.findall(text)}
    out = []
    for term in terms:
        places = at.get(term)
        if places is None:
            out.append(0)
            continue
        n = places.count(",") + 1
        last = int(places[places.rfind(",") + 1:].rstrip("ABCD"))
        out.append(-1 if n >= _MOST_POSITIONS or last >= _LAST_POSITION else n)
    return out


def _from_positions(r: Any, held: list[int], title: Clause | None) -> list[float]:
    """Each clause's weighted instances, its word's positions in the commit's ``tsvector``
    (a field repeated as often as its weight is there as often: ``_held``), then the
    title phrase's, from its words' positions in the title, times the title's weight."""
    freqs = [float(n) for n in held]
    if title is not None:
        text, words, found = r["at_title"] or "", title[0], 0
        if all(f"'{w}':" in text for w in words):  # (else no instance: nothing to parse)
            places = _positions(text)
            found = sum(all(s + i in places.get(w, ()) for i, w in enumerate(words))
                        for s in places.get(words[0], []))
        freqs.append(float(WEIGHTS[0] * found))
    return freqs


def _frequencies(r: Any, q: LexicalQuery, title: Clause | None) -> list[float]:
    """Each clause's weighted instances counted in the commit's fields (each field's
    instances as often as its weight), then the title phrase's."""
    freqs = [0.0] * len(q.clauses)
    for i, weight in enumerate(WEIGHTS):
        text = str(r[f"f{i}"])
        if text:
            freqs = [f + weight * n for f, n in zip(
                freqs, frequencies(text, q.clauses), strict=True)]
    if title is not None:
        freqs.append(WEIGHTS[0] * frequencies(str(r["f0"]), [title])[0])
    return freqs
