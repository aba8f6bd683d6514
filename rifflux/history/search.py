"""Searching commits: the lexical leg (in the store: FTS5's bm25, or on PostgreSQL the
same bm25 computed from its own tables), the semantic leg (the query's
vector against every commit's, held in memory as chunks' are: an int8 matrix scanned
for candidates ranked exactly on their float32 vectors; loaded again after the
commits or their vectors change) and the two fused as chunks' are
(``core.fusion.combine``); each hit with its changed paths and the hunk it matches best.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio

from ..core.fusion import combine
from ..history_types import CommitHit, CommitPath, CommitRef
from ..query.together import together
from .lines import Blames
from .matching import best_hunk, shown
from .rows import HistoryFilters, HistoryRows

if TYPE_CHECKING:
    from ..core.embedders import Embedder
    from ..core.vectors import F32, I64, Exact, VectorIndex

#: How deep each leg is read for a hybrid search (as chunks' ``POOL``).
POOL = 100
#: The changed paths a hit lists, at most.
HIT_PATHS = 20


def iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def ref(row: Sequence[Any]) -> CommitRef:
    """A commit's row (``_ROW``) as an answer names it."""
    return {"hash": str(row[1]), "short": str(row[1])[:10], "repo": str(row[2]),
            "title": str(row[3]), "author": str(row[4]), "author_email": str(row[5]),
            "date": iso(int(row[6])), "committed": iso(int(row[7]))}


def commit_path(p: Sequence[Any]) -> CommitPath:
    return {"path": str(p[0]), "change": str(p[1]), "old_path": p[2], "added": int(p[3]),
            "removed": int(p[4]), "binary": bool(p[5])}


class HistorySearch:
    """The searches of one process, on a reader's connection."""

    def __init__(self, rows: HistoryRows, *, model: Callable[[], Embedder | None]) -> None:
        self.rows = rows
        self._model = model
        self._generation = 0
        self._loaded: tuple[int, str, VectorIndex, Exact] | None = None
        self._loading = anyio.Lock()
        self._limiter = anyio.CapacityLimiter(1)
        #: Files blamed whole, for line history.
        self.blames = Blames()

    def changed(self) -> None:
        """Commits or their vectors were written: the matrix is loaded again when needed."""
        self._generation += 1

    async def search(self, query: str, top_k: int, mode: str, filters: HistoryFilters
                     ) -> tuple[list[CommitHit], list[str]]:
        """The best ``top_k`` commits, and what the answer should say of how the lexical
        leg found them (``HistoryRows.lexical``'s note). A hybrid search's legs run side
        by side; the hits' rows and paths are read side by side."""
        depth = max(top_k, POOL) if mode == "hybrid" else top_k
        lexical: list[tuple[int, float]] = []
        semantic: list[tuple[int, float]] = []
        notes: list[str] = []

        async def run_lexical() -> None:
            nonlocal lexical
            lexical, note = await self.rows.lexical(query, depth, filters)
            notes.extend([note] if note else [])

        async def run_semantic() -> None:
            nonlocal semantic
            semantic = await self._semantic(query, depth, filters)

        await together(*([run_lexical] if mode in ("lexical", "hybrid") else []),
                        *([run_semantic] if mode in ("semantic", "hybrid") else []))
        ranked: list[tuple[int, float, int | None, int | None]]
        if mode == "lexical":
            ranked = [(cid, -score, i + 1, None) for i, (cid, score) in enumerate(lexical)]
        elif mode == "semantic":
            ranked = [(cid, score, None, i + 1) for i, (cid, score) in enumerate(semantic)]
        else:
            ranked = [(c.key, c.score, c.ranks[0], c.ranks[1])
                      for c in combine(lexical, semantic, depth=depth)]
        ranked = ranked[:top_k]
        ids = [r[0] for r in ranked]
        rows: dict[int, tuple[Any, ...]] = {}
        paths: dict[int, list[tuple[Any, ...]]] = {}

        async def read_rows() -> None:
            rows.update(await self.rows.rows(ids))

        async def read_paths() -> None:
            paths.update(await self.rows.paths(ids))

        if ids:
            await together(read_rows, read_paths)
        bm25 = dict(lexical)
        cosine = dict(semantic)
        hits: list[CommitHit] = []
        for cid, score, lrank, srank in ranked:
            row = rows.get(cid)
            if row is None:
                continue  # (dropped meanwhile)
            best = best_hunk(str(row[8]), query)
            changed = paths.get(cid, [])
            hit: CommitHit = {
                **ref(row),
                "paths": [commit_path(p) for p in changed[:HIT_PATHS]],
                "paths_total": len(changed),
                "match": None if best is None else {
                    "path": best[0].path or None, "hunk": best[0].header,
                    "text": shown(best[0], best[1])},
                "scores": {"score": round(float(score), 6), "lexical_rank": lrank,
                           "semantic_rank": srank,
                           "bm25": None if cid not in bm25 else round(bm25[cid], 6),
                           "cosine": None if cid not in cosine else round(cosine[cid], 6)},
            }
            hits.append(hit)
        return hits, notes

    async def _semantic(self, query: str, depth: int,
                        filters: HistoryFilters) -> list[tuple[int, float]]:
        """The query's vector against every commit's: the int8 matrix's scan (numkong,
        as chunks' ``core.vectors``) for candidates, their float32 vectors ranked
        exactly (``core.ranking``); the query's embedding and the ranking in one worker
        thread (one at a time: the model's)."""
        embedder = self._model()
        if embedder is None:
            return []
        import numpy as np

        matrix, exact = await self._matrix(embedder)
        if not len(matrix):
            return []
        mask = None
        if filters.any():
            allowed = await self.rows.allowed(filters)
            mask = np.isin(matrix.ids(), np.fromiter(allowed, dtype=np.int64,
                                                     count=len(allowed)))
            if not mask.any():
                return []

        def ranked() -> list[tuple[int, float]]:
            vector = embedder.embed_query(query)
            return matrix.top_k(np.asarray(vector, dtype=np.float32), depth, exact=exact,
                                mask=mask)

        # (the query embedded and the matrix scanned in a worker thread: the event loop
        # meanwhile goes on with the lexical leg's round trips and rows)
        found = await anyio.to_thread.run_sync(ranked, limiter=self._limiter)
        return [(int(i), float(score)) for i, score in found]

    async def _matrix(self, embedder: Embedder) -> tuple[VectorIndex, Exact]:
        """Every commit's vector of the model: compact for the scan, float32 (by commit
        id) for the exact ranking; loaded again after commits or vectors changed."""
        import numpy as np

        from ..core.vectors import VectorIndex

        async with self._loading:
            loaded = self._loaded
            if loaded is not None and loaded[0] == self._generation \
                    and loaded[1] == embedder.label:
                return loaded[2], loaded[3]
            generation = self._generation
            pairs = sorted(await self.rows.vectors(embedder.label))
            ids = np.fromiter((p[0] for p in pairs), dtype=np.int64, count=len(pairs))
            if pairs:
                vectors = np.frombuffer(b"".join(p[1] for p in pairs), dtype=np.float32)
                vectors = vectors.reshape(len(pairs), -1)
            else:
                vectors = np.zeros((0, embedder.dim), dtype=np.float32)
            matrix = VectorIndex(vectors.shape[1], capacity=len(pairs))
            matrix.append(ids, vectors, np.zeros(len(ids), dtype=np.int64))
            matrix.seal()

            def exact(wanted: I64) -> tuple[I64, F32]:
                at = np.searchsorted(ids, wanted)
                at = at[(at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == wanted)]
                return ids[at], vectors[at]

            self._loaded = (generation, embedder.label, matrix, exact)
            return matrix, exact
