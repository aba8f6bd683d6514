"""A search's ranking: the lexical and the semantic branch side by side, each read at
least ``POOL`` deep in a hybrid search and fused (``core.fusion.combine``, the question's
language preferred: ``prefer``), each text once (its other places named), read as deep
as a per-file cap or collapsed copies need, and turned into results (snippets, scores,
and why each hit ranks where it does).

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
from ..core.definitions import definitions_first, named
from ..core.fusion import combine, prefer
from ..core.language import preferred_language
from ..core.snippets import Snippets
from ..errors import RiffluxError

if TYPE_CHECKING:  # (numpy and the model: the semantic branch's, loaded with them)
    import numpy as np
    import numpy.typing as npt
    from anyio import CapacityLimiter

    from ..core.catalog import Allowed
    from ..core.embedders import Embedder
    from ..core.fusion import Combined
    from ..core.vectors import F32, I64, GroupRanks, VectorIndex
    from ..store.copies import Place
    from ..store.protocols import (
        CopyStore,
        LanguageStore,
        LexicalLeg,
        MatrixStore,
        ReadStore,
        SemanticLeg,
    )
    from ..types import (
        AlsoIn,
        ChunkRecord,
        HitExplain,
        HybridScores,
        ScoreBreakdown,
        SearchResult,
    )
    from .asked import SearchShape

_HAS_WORD = re.compile(r"\w", re.UNICODE)
#: How far down each branch a hybrid search reads at least (``top_k * 2`` when more): so
#: that the order of the first hits does not depend on how many were asked for (any
#: top_k up to 50 ranks alike). Measured on Cranfield (``python -m benchmarks
#: --sections quality``): 50 and 100 rank alike there, 100 keeps top_k 50 in the same
#: pool as top_k 5.
POOL = 100
#: How far down each branch a search with a per-file cap (or whose copies collapsed)
#: reads at most.
_MAX_DEPTH = 1000
#: The most other places of a text a hit lists (``also_in``; ``also_in_count`` counts all).
_ALSO_IN = 100
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
    #: the names the query is when it is one name (``core.definitions``), else None
    names: tuple[str, ...] | None = None
    vector: F32 | None = None
    rows: dict[int, ChunkRecord] = field(default_factory=dict)
    prefer: str | None = None  # the question's language, preferred (None: none is)


class Ranking:
    """Searches over a store's legs and ``loaded``: the semantic leg is the store's
    (``semantic``), or the in-memory matrix when the store keeps none (``matrix``: its
    float32 vectors and stable order; ``Capabilities``); ``rows`` reads the hits' rows.
    Without either, a search has its lexical branch alone."""

    def __init__(self, *, rows: ReadStore, copies: CopyStore, lexical: LexicalLeg,
                 loaded: Loaded, rrf_k: int, semantic: SemanticLeg | None = None,
                 matrix: MatrixStore | None = None, feedback: int = 0,
                 feedback_weight: float = 1.0, languages: LanguageStore | None = None,
                 other_language_share: float = 1.0) -> None:
        self._reader = rows
        self._copies = copies
        self._languages = languages  # (None: no language is told or filtered)
        self._lexical = lexical
        self._semantic_leg = semantic
        self._matrix_store = matrix
        self._loaded = loaded
        self._rrf_k = rrf_k
        self._feedback = feedback
        self._feedback_weight = feedback_weight
        self._other_language = other_language_share  # (1: no language preferred)
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
        # The contract: a hybrid search's branches read max(POOL, top_k * 2) each. A
        # per-file cap reads further down both lists, so that capped files leave room for
        # the next ones, and further again (four times as far each time) while one long
        # file fills them and they go on; so does a search whose copies of one text
        # collapsed into fewer hits than asked for.
        asked = _Asked(query, mode != "semantic", Snippets(query, shape.snippet_chars),
                       names=named(query) if mode != "semantic" and self._code() else None)
        if mode == "hybrid" and self._languages is not None and self._other_language < 1 \
                and not (allowed and allowed.langs):  # (else a lang filter chose them)
            asked.prefer = preferred_language(query, self._loaded.catalog.languages())
        if shape.max_per_file is None:
            # a branch alone keeps its first top_k: reading further changes nothing above
            # (and a semantic branch read top_k deep is the one a hybrid search reads as
            # deep: the lists fused can be had from the single modes); but a name's
            # definition may rank below its first top_k uses (core.definitions)
            depth = (max(POOL, top_k * 2) if mode == "hybrid"
                     else max(POOL, top_k) if asked.names else top_k)
        else:
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
            fused = combine(lexical, semantic, depth=depth, k=self._rrf_k)
            if asked.prefer is not None and self._languages is not None:
                fused = prefer(fused, await self._languages.of([f.key for f in fused]),
                               asked.prefer, factor=self._other_language)
            ranked = [(f.key, _hybrid(f)) for f in fused]
        defined: set[int] = set()
        if asked.names:  # a name's definitions first, in both modes that read words
            ranked, defined = definitions_first(ranked, rows, asked.names)
        also: dict[int, list[Place]] = {}
        if shape.duplicates == "collapse":  # (before the cut: top_k distinct texts)
            ranked, also = await self._distinct(
                ranked, allowed, top_k if shape.max_per_file is None else None)
        # rows of hits beyond the lexical list are read in one go (more than top_k with a
        # cap: some of them will be passed over)
        wanted = ranked[: top_k if shape.max_per_file is None else len(ranked)]
        missing = [cid for cid, _ in wanted if cid not in rows]
        if missing:
            rows.update(await self._reader.rows(missing))
        why = _Explainer(lexical, semantic, defined) if shape.explain else None
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
            if cid in also:
                result["also_in"] = [_also_in(p) for p in also[cid][:_ALSO_IN]]
                result["also_in_count"] = len(also[cid])
            results.append(result)
            if len(results) == top_k:
                break
        return results, len(lexical) < depth and len(semantic) < depth

    def _code(self) -> bool:
        """Whether the index may hold code (a name's definitions: ``core.definitions``);
        until the catalog is loaded, it may."""
        loaded = self._loaded
        return not loaded.catalog_ready.is_set() or "code" in loaded.catalog.kinds()

    async def _distinct(self, ranked: list[tuple[int, ScoreBreakdown]], allowed: Allowed | None,
                        limit: int | None) -> tuple[list[tuple[int, ScoreBreakdown]],
                                                    dict[int, list[Place]]]:
        """``ranked`` with each text once, at its best-ranked chunk (copies of one text
        score alike in both branches: of equal ones, the first in the branches' stable
        order), the first ``limit`` of them (None: all); and for each kept chunk whose
        text other chunks hold, those places within the filters (``allowed``)."""
        texts: dict[int, tuple[str, int]] = {}
        kept: list[tuple[int, ScoreBreakdown]] = []
        seen: set[str] = set()
        shared: dict[int, str] = {}
        step = max(2 * (limit or len(ranked)), 20)  # (the texts of a few more than kept)
        for i, (cid, breakdown) in enumerate(ranked):
            if i % step == 0:
                texts.update(await self._copies.texts([c for c, _ in ranked[i:i + step]]))
            text = texts.get(cid)
            if text is not None:  # (else deleted since it was ranked: its row is not read)
                key, count = text
                if key in seen:
                    continue
                seen.add(key)
                if count > 1:
                    shared[cid] = key
            kept.append((cid, breakdown))
            if limit is not None and len(kept) == limit:
                break
        if not shared:
            return kept, {}
        places = await self._copies.places(set(shared.values()))
        also = {cid: [p for p in places.get(key, []) if p.rowid != cid
                      and (allowed is None or p.file_id in allowed.ids)]
                for cid, key in shared.items()}
        return kept, {cid: found for cid, found in also.items() if found}

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
        mask = None if allowed is None else await self._mask(matrix, allowed)
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

    async def _mask(self, matrix: VectorIndex, allowed: Allowed) -> npt.NDArray[np.bool_]:
        """The matrix rows of the allowed files (of their chunks in ``allowed.langs``,
        when given), kept while neither changes."""
        key = (id(matrix), matrix.version, allowed.json + allowed.langs_json)
        mask = self._masks.get(key)
        if mask is not None:
            return mask
        left_out = await self._languages.left_out(allowed) if self._languages else []
        # (made after the read, from the matrix as it is now, and kept for that version)
        key = (id(matrix), matrix.version, allowed.json + allowed.langs_json)
        mask = matrix.mask(allowed.array, without=left_out)
        if len(self._masks) >= _MASKS:
            self._masks.pop(next(iter(self._masks)))
        self._masks[key] = mask
        return mask


class _Explainer:
    """Each hit's rank and raw score in each branch that found it."""

    def __init__(self, lexical: list[tuple[int, float]],
                 semantic: list[tuple[int, float]], defined: set[int]) -> None:
        self._lexical = {cid: (rank, score) for rank, (cid, score) in enumerate(lexical, 1)}
        self._semantic = {cid: (rank, score) for rank, (cid, score) in enumerate(semantic, 1)}
        self._defined = defined

    def of(self, cid: int) -> HitExplain:
        out: HitExplain = {}
        if cid in self._lexical:
            out["lexical_rank"], out["bm25"] = self._lexical[cid]
        if cid in self._semantic:
            out["semantic_rank"], out["cosine"] = self._semantic[cid]
        if cid in self._defined:
            out["definition"] = True
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
    if "lang" in row:
        result["lang"] = row["lang"]
    if shape.content == "full":
        result["content"] = row["content"]
    if why is not None:
        result["explain"] = why.of(cid)
    return result


def _hybrid(fused: Combined[int]) -> HybridScores:
    return {"rrf": fused.rrf, "lexical_rank": fused.ranks[0], "semantic_rank": fused.ranks[1],
            "fused": fused.score}


def _also_in(place: Place) -> AlsoIn:
    return {"path": place.path, "root": place.root, "line_start": place.line_start}


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of a group and of the groups inside it."""
    return [leaf for e in group.exceptions
            for leaf in (_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])]
