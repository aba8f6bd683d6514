"""A search's ranking: the lexical and the semantic branch side by side, fused by RRF,
read as deep as a per-file cap needs, and turned into results (snippets, scores, and
why each hit ranks where it does).

The query actor runs it on what it holds in memory (``Loaded``) as it is at each pass
(the actor changes it only between awaits, so a pass sees one consistent state); a
one-shot read (``rifflux.direct``) runs the same lexical ranking on a store whose
awaits answer at once, with no event loop: anyio is imported only by the branches
that wait (a hybrid search's two legs side by side, a query's embedding).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ..core.catalog import Catalog
from ..core.fusion import rrf
from ..core.snippets import Snippets
from ..errors import RiffluxError

if TYPE_CHECKING:  # (numpy and the model: the semantic branch's, loaded with them)
    import numpy as np
    import numpy.typing as npt
    from anyio import CapacityLimiter

    from ..core.catalog import Allowed
    from ..core.embedders import Embedder
    from ..core.vectors import F32, I64, GroupRanks, VectorIndex
    from ..store.protocols import LexicalLeg, MatrixStore, ReadStore, SemanticLeg
    from ..types import ChunkRecord, HitExplain, HybridScores, ScoreBreakdown, SearchResult
    from .asked import SearchShape

_HAS_WORD = re.compile(r"\w", re.UNICODE)
#: How far down each branch a search with a per-file cap reads at most.
_MAX_DEPTH = 1000
#: Row masks of filtered searches kept (per matrix version).
_MASKS = 16


class Flag(Protocol):
    """Whether something has happened yet (an ``anyio.Event``, a ``threading.Event``)."""

    def is_set(self) -> bool: ...


@dataclass(slots=True, kw_only=True)
class Loaded:
    """What a search reads in memory: the catalog of files (``catalog_ready`` is set once
    it is loaded: until then, hits have no ``backlink_count``), the model's embedder and
    the vector matrix (None: none yet)."""

    catalog_ready: Flag
    catalog: Catalog = field(default_factory=Catalog)
    embedder: Embedder | None = None
    matrix: VectorIndex | None = None


@dataclass(slots=True)
class _Asked:
    """What one search makes once, however many passes a per-file cap reads: whether it
    has a lexical branch, the snippet maker, the query's vector and the rows read so
    far."""

    query: str
    lexical: bool
    snippets: Snippets
    vector: F32 | None = None
    rows: dict[int, ChunkRecord] = field(default_factory=dict)


class Ranking:
    """Searches over a store's legs and ``loaded``: the semantic leg is the store's
    (``semantic``), or the in-memory matrix when the store keeps none (``matrix``: its
    float32 vectors and stable order; ``Capabilities``); ``rows`` reads the hits' rows.
    Without either, a search has its lexical branch alone."""

    def __init__(self, *, rows: ReadStore, lexical: LexicalLeg, loaded: Loaded, rrf_k: int,
                 semantic: SemanticLeg | None = None, matrix: MatrixStore | None = None,
                 feedback: int = 0, feedback_weight: float = 1.0) -> None:
        self._reader = rows
        self._lexical = lexical
        self._semantic_leg = semantic
        self._matrix_store = matrix
        self._loaded = loaded
        self._rrf_k = rrf_k
        self._feedback = feedback
        self._feedback_weight = feedback_weight
        self._embed_limiter: CapacityLimiter | None = None  # one query embedding at a time
        self._masks: dict[tuple[int, int, str], npt.NDArray[np.bool_]] = {}
        #: ``Catalog.places`` and its ``GroupRanks``, made again when the catalog changes.
        self._group_ranks: tuple[dict[int, int], GroupRanks] | None = None

    async def search(self, query: str, top_k: int, mode: str, allowed: Allowed | None,
                      shape: SearchShape) -> list[SearchResult]:
        """The results of a search for ``query`` among the ``allowed`` files (None: every
        file; their ids are the catalog's answer to the search's filters)."""
        if allowed is not None and not allowed.ids:
            return []  # no file passes: nothing to rank
        # SPEC: each branch fetches top_k * 2. A per-file cap reads further down both
        # lists, so that capped files leave room for the next ones, and further again
        # (four times as far each time) while one long file fills them and they go on.
        asked = _Asked(query, mode != "semantic", Snippets(query, shape.snippet_chars))
        if shape.max_per_file is None:
            # a lexical search alone keeps its first top_k: reading further finds nothing
            depth = top_k if mode == "lexical" else top_k * 2
            return (await self._ranked(asked, top_k, mode, allowed, shape, depth))[0]
        depth = min(top_k * 10, _MAX_DEPTH)
        while True:
            results, exhausted = await self._ranked(asked, top_k, mode, allowed, shape, depth)
            if len(results) >= top_k or exhausted or depth >= _MAX_DEPTH:
                return results
            depth = min(depth * 4, _MAX_DEPTH)

    async def _ranked(self, asked: _Asked, top_k: int, mode: str, allowed: Allowed | None,
                      shape: SearchShape, depth: int) -> tuple[list[SearchResult], bool]:
        """The results from both branches read ``depth`` deep, and whether the branches
        hold nothing further down."""
        lexical: list[tuple[int, float]] = []
        semantic: list[tuple[int, float]] = []
        rows = asked.rows

        async def run_lexical() -> None:
            nonlocal lexical
            if asked.lexical:
                lexical, found = await self._lexical.lexical(asked.query, depth, allowed)
                rows.update(found)

        async def run_semantic() -> None:
            nonlocal semantic
            semantic = await self._semantic(asked, depth, allowed)

        if mode == "hybrid":
            import anyio  # (a lexical search waits for nothing: it runs without a loop)

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(run_lexical)
                    tg.start_soon(run_semantic)
            except ExceptionGroup as group:  # a leg's own error, as a lone leg raises it
                own = [e for e in _leaves(group) if isinstance(e, RiffluxError)]
                if not own:
                    raise
                raise own[0] from group
        elif mode == "lexical":
            await run_lexical()
        else:
            await run_semantic()

        ranked: list[tuple[int, ScoreBreakdown]]
        if mode == "lexical":
            ranked = [(cid, {"bm25": score}) for cid, score in lexical]
        elif mode == "semantic":
            ranked = [(cid, {"cosine": score}) for cid, score in semantic]
        else:
            fused = rrf([[c for c, _ in lexical], [c for c, _ in semantic]], k=self._rrf_k)
            ranked = [(f.key, _hybrid(f.score, f.ranks)) for f in fused]
        # rows of hits beyond the lexical list are read in one go (more than top_k with a
        # cap: some of them will be passed over)
        wanted = ranked[: top_k if shape.max_per_file is None else len(ranked)]
        missing = [cid for cid, _ in wanted if cid not in rows]
        if missing:
            rows.update(await self._reader.rows(missing))
        why = _Explainer(lexical, semantic) if shape.explain else None
        snippets = asked.snippets
        per_file: Counter[tuple[str, str]] = Counter()
        results: list[SearchResult] = []
        for cid, breakdown in wanted:
            row = rows.get(cid)
            if row is None:
                continue  # deleted between ranking and reading
            if shape.max_per_file is not None:
                where = (row["root"], row["path"])
                if per_file[where] >= shape.max_per_file:
                    continue
                per_file[where] += 1
            result = _result(row, breakdown, snippets, shape, why, cid)
            if self._loaded.catalog_ready.is_set():  # until then, no count rather than a wrong one
                result["backlink_count"] = self._loaded.catalog.backlink_count(row["root"],
                                                                        row["path"])
            results.append(result)
            if len(results) == top_k:
                break
        return results, len(lexical) < depth and len(semantic) < depth

    async def _semantic(self, asked: _Asked, depth: int,
                        allowed: Allowed | None) -> list[tuple[int, float]]:
        embedder, matrix = self._loaded.embedder, self._loaded.matrix
        if not _HAS_WORD.search(asked.query) or embedder is None or (
                matrix is None and self._semantic_leg is None):
            return []  # no query vector can be made: semantic mode answers nothing
        vector = asked.vector
        if vector is None:
            import anyio

            if self._embed_limiter is None:
                self._embed_limiter = anyio.CapacityLimiter(1)
            vector = asked.vector = await anyio.to_thread.run_sync(
                embedder.embed_query, asked.query, limiter=self._embed_limiter)
        if self._semantic_leg is not None:  # the store ranks its vectors itself
            return await self._semantic_leg.semantic(
                vector, depth, allowed, feedback=self._feedback, weight=self._feedback_weight)
        assert matrix is not None and self._matrix_store is not None
        mask = None if allowed is None else self._mask(matrix, allowed)
        # the compact matrix's best rows, ranked exactly on their float32 vectors (of rows
        # tied at the cut, those of the files first by path: never by row id)
        candidates = matrix.candidates(vector, depth, feedback=self._feedback, mask=mask,
                                       ranks=self._ranks)
        found, exact = await self._matrix_store.exact_vectors(embedder.label, embedder.dim,
                                                              candidates)
        from ..core.ranking import rank  # (loaded already, with the matrix)

        ranked = rank(vector, found, exact, depth, feedback=self._feedback,
                      weight=self._feedback_weight, ties=True)
        return await self._matrix_store.in_stable_order(ranked, depth)  # equal cosines by path

    def _ranks(self, groups: I64) -> I64:
        """Each file's place by path (``Catalog.places``), for the matrix's rows tied at
        its cut; made again only when the catalog has changed."""
        from ..core.vectors import group_ranks

        places = self._loaded.catalog.places()
        if self._group_ranks is None or self._group_ranks[0] is not places:
            self._group_ranks = (places, group_ranks(places))
        return self._group_ranks[1](groups)

    def _mask(self, matrix: VectorIndex, allowed: Allowed) -> npt.NDArray[np.bool_]:
        """The matrix rows of the allowed files, kept while neither changes."""
        key = (id(matrix), matrix.version, allowed.json)
        mask = self._masks.get(key)
        if mask is None:
            mask = matrix.mask(allowed.array)
            if len(self._masks) >= _MASKS:
                self._masks.pop(next(iter(self._masks)))
            self._masks[key] = mask
        return mask


class _Explainer:
    """Each hit's rank and raw score in each branch that found it."""

    def __init__(self, lexical: list[tuple[int, float]],
                 semantic: list[tuple[int, float]]) -> None:
        self._lexical = {cid: (rank, score) for rank, (cid, score) in enumerate(lexical, 1)}
        self._semantic = {cid: (rank, score) for rank, (cid, score) in enumerate(semantic, 1)}

    def of(self, cid: int) -> HitExplain:
        out: HitExplain = {}
        if cid in self._lexical:
            out["lexical_rank"], out["bm25"] = self._lexical[cid]
        if cid in self._semantic:
            out["semantic_rank"], out["cosine"] = self._semantic[cid]
        return out


def _result(row: ChunkRecord, breakdown: ScoreBreakdown, snippets: Snippets,
            shape: SearchShape, why: _Explainer | None, cid: int) -> SearchResult:
    result: SearchResult = {
        "chunk_id": row["chunk_id"], "path": row["path"], "heading_path": row["heading_path"],
        "chunk_index": row["chunk_index"], "root": row["root"], "title": row["title"],
        "tags": row["tags"], "modified": row["modified"], "line_start": row["line_start"],
        "line_end": row["line_end"], "score_breakdown": breakdown,
        "snippet": snippets.make(row["content"]), "kind": row["kind"],
    }
    if "page" in row:
        result["page"] = row["page"]
    elif "slide" in row:
        result["slide"] = row["slide"]
    if shape.content == "full":
        result["content"] = row["content"]
    if why is not None:
        result["explain"] = why.of(cid)
    return result


def _hybrid(score: float, ranks: tuple[int | None, ...]) -> HybridScores:
    return {"rrf": score, "lexical_rank": ranks[0], "semantic_rank": ranks[1]}


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of a group and of the groups inside it."""
    return [leaf for e in group.exceptions
            for leaf in (_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])]
