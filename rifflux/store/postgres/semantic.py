"""The PostgreSQL store's semantic leg: nearest vectors by an HNSW index scan in the
database (pgvector, cosine), so that a process's memory does not grow with the index.

A filter applies inside the scan, before the best are taken: pgvector's iterative
index scan (``hnsw.iterative_scan = strict_order``) reads on past ``ef_search``
until enough chunks pass it. A narrow filter, or a small index (at most
``EXACT_MOST`` chunks with vectors), is searched exactly instead (every allowed
vector compared): for so few, that costs less than the index scan, and an HNSW
graph over a few near-identical vectors, rewritten often, can miss the nearest. Equal
cosines are ordered by path, then chunk index, then root.

The nearest are read with their vectors and ranked again in Python by
``core.ranking.rank``, as the SQLite store ranks the candidates of its in-memory
matrix: exact cosines, and pseudo-relevance feedback (``Settings.semantic_feedback``:
the best ``max(200, limit)`` of the first pass are read, the query moves towards the
mean of its best few, and those are scored again against it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pgvector import Vector

from ...core.catalog import Allowed
from ...core.codes import F32, normalise
from ...core.ranking import rank
from ...location import DatabaseUrl
from ..protocols import Ranked
from .connection import Pool, mapped_errors

#: A filter passing at most this many chunks with vectors is searched exactly (more:
#: by the HNSW index, whose iterative scan reads up to 20,000 tuples for them).
EXACT_MOST = 2_000
#: The candidates feedback rescores (``core.ranking.rank``'s ``pool``).
FEEDBACK_POOL = 200
#: Candidates read past those wanted (``FEEDBACK_POOL``, or as many as asked), so that
#: near-equal cosines at the cut are ordered by the exact cosine, not by pgvector's float
#: arithmetic. The HNSW index is searched deeper (``hnsw.ef_search``: the wanted and as
#: many again as asked, at least ``_MARGIN``), for its recall: at 100,571 chunks a hybrid
#: search reading 220 of a search 300 deep fuses the same top 10 as reading all 300 (60
#: queries), where a search 220 deep agrees with SQLite's for 0.92 of its hits, not 0.95.
_MARGIN = 20
#: pgvector's ceiling for ``hnsw.ef_search``.
_EF_MOST = 1000
#: Vectors the HNSW graph holds per step of its search's depth (``search_depth``): a
#: graph's recall at one depth falls as it grows. On 100,571 hash vectors (graph
#: ``writer.HNSW_LINKS``/``HNSW_BUILD_DEPTH``, 30 queries) a search 400 deep found 0.90
#: of the exact top 10 and 700 deep 0.95 (the old graph: 0.92 at 220): 150 vectors a step
#: search it 670 deep; from 150,000 vectors on, pgvector's ceiling (at a million the old
#: graph searched 220 deep agreed with SQLite's top 10 for 0.53 of its hits).
_VECTORS_PER_STEP = 150

#: A vector's chunk is in one of the languages ``${n}`` (``Allowed.langs``).
_IN_LANGS = ("EXISTS (SELECT 1 FROM chunks l WHERE l.id = {v}.chunk_id "
             "AND l.lang = ANY(${n}))")

_KEYS = ("SELECT n.id, n.d, f.rel_path, c.chunk_index, r.path, n.embedding FROM ({nearest}) n "
         "JOIN chunks c ON c.id = n.id JOIN files f ON f.id = c.file_id "
         "JOIN roots r ON r.id = f.root_id")


class Semantic:
    def __init__(self, pool: Pool, where: DatabaseUrl) -> None:
        self._pool = pool
        self._where = where

    async def semantic(self, vector: F32, limit: int, allowed: Allowed | None, *,
                       feedback: int, weight: float) -> Ranked:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if limit < 1:
            return []
        if norm == 0.0 or not np.isfinite(norm):  # every cosine is 0.0: the first, in order
            with mapped_errors(self._where):
                return await self._any(limit, allowed)
        pool = max(FEEDBACK_POOL, limit) if feedback > 0 else limit
        with mapped_errors(self._where):
            rows = await self._nearest(normalise(q), pool + _MARGIN, allowed,
                                       search=pool + max(limit, _MARGIN))
        if not rows:
            return []
        # ranked again here as the SQLite store ranks its matrix's candidates (the same
        # float64 sums of unit float32 vectors, the same feedback), so that both stores
        # order near-equal cosines alike; equal cosines then by path, chunk index, root
        keys = {int(r[0]): (str(r[2]), int(r[3]), str(r[4])) for r in rows}
        ids = np.asarray([int(r[0]) for r in rows], dtype=np.int64)
        ranked = rank(vector, ids, np.stack([r[5].to_numpy() for r in rows]), limit,
                      feedback=feedback, weight=weight, pool=FEEDBACK_POOL, ties=True)
        return sorted(ranked, key=lambda hit: (-hit[1], keys[hit[0]]))[:limit]

    async def _any(self, limit: int, allowed: Allowed | None) -> Ranked:
        """``limit`` chunks with vectors, cosine 0.0, in the stable order of ties."""
        rows = await self._pool.fetch(
            "SELECT v.chunk_id FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
            "JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id "
            "WHERE ($2::bigint[] IS NULL OR v.file_id = ANY($2)) "
            "AND ($3::text[] IS NULL OR c.lang = ANY($3)) "
            'ORDER BY f.rel_path COLLATE "C", c.chunk_index, r.path COLLATE "C" LIMIT $1',
            limit, None if allowed is None else list(allowed.ids),
            list(allowed.langs) if allowed is not None and allowed.langs else None)
        return [(int(r[0]), 0.0) for r in rows]

    async def _nearest(self, q: F32, want: int, allowed: Allowed | None, *,
                       search: int) -> list[Any]:
        """About the ``want`` nearest chunks (and every one tied with the last): id,
        distance, the keys of tied chunks' order, the vector; the HNSW index searched
        ``search`` deep (``hnsw.ef_search``: its recall of the ``want``)."""
        dim = len(q)
        async with self._pool.acquire() as conn, conn.transaction(readonly=True):
            files = None if allowed is None else list(allowed.ids)
            langs = list(allowed.langs) if allowed is not None and allowed.langs else None
            counted = await conn.fetchrow(  # (at most EXACT_MOST + 1 rows read)
                "SELECT (SELECT count(*) FROM (SELECT 1 FROM chunk_vectors v WHERE "
                "($1::bigint[] IS NULL OR file_id = ANY($1)) AND ($3::text[] IS NULL OR "
                f"{_IN_LANGS.format(v='v', n=3)}) LIMIT $2) few), (SELECT reltuples FROM "
                "pg_class WHERE oid = 'chunk_vectors'::regclass)", files, EXACT_MOST + 1,
                langs)
            few, held = (0, None) if counted is None else counted
            exact = int(few) <= EXACT_MOST
            where = "" if files is None else "WHERE v.file_id = ANY($3) " + (
                "" if langs is None else f"AND {_IN_LANGS.format(v='v', n=4)} ")
            if exact:  # every allowed vector compared (the order is not the index's)
                nearest = ("SELECT v.chunk_id AS id, v.embedding <=> $1 AS d, v.embedding "
                           "FROM chunk_vectors v " + where
                           + "ORDER BY d FETCH FIRST ($2) ROWS WITH TIES")
            else:
                ef = search_depth(max(want, search), held or 0.0)  # (both in one round trip)
                await conn.execute(f"SET LOCAL hnsw.ef_search = {ef}; "
                                   "SET LOCAL hnsw.iterative_scan = strict_order")
                cast = f"v.embedding::vector({dim}) <=> $1::vector({dim})"
                nearest = (f"SELECT v.chunk_id AS id, {cast} AS d, v.embedding "
                           "FROM chunk_vectors v " + where
                           + f"ORDER BY {cast} FETCH FIRST ($2) ROWS WITH TIES")
            args: list[Any] = [Vector(q), want]
            if files is not None:
                args.append(files)
                if langs is not None:
                    args.append(langs)
            return list(await conn.fetch(_KEYS.format(nearest=nearest), *args))


def search_depth(wanted: int, vectors: float) -> int:
    """``hnsw.ef_search`` for ``wanted`` candidates from a graph of about ``vectors``
    (the planner's estimate; negative before the table's first ``ANALYZE``): at least
    40 and the wanted, one step per ``_VECTORS_PER_STEP`` vectors the graph holds, at
    most pgvector's ceiling."""
    return min(max(40, wanted, int(vectors) // _VECTORS_PER_STEP), _EF_MOST)
