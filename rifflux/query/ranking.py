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
from typing import TYPE_CHECKING, cast

from ..core.definitions import definitions_first, named
from ..core.fusion import combine, prefer
from ..core.hypothesis import semantic_text
from ..core.rerank import reordered
from ..core.snippets import Snippets
from ..core.steps import Steps, begin
from ..errors import EmbeddingUnavailableError, RerankError
from .distinct import distinct
from .loaded import AwaitsQueries, Loaded, Rescorer, TieRanks, Unranked
from .results import Explainer, also_in, hybrid_scores, result_of

if TYPE_CHECKING:  # (numpy and the model: the semantic branch's, loaded with them)
    from anyio import CapacityLimiter

    from ..core.catalog import Allowed
    from ..core.selection import GroupRanks
    from ..core.vectors import F32, Groups
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
        ChunkRecord,
        ScoreBreakdown,
        SearchResult,
    )
    from .asked import SearchShape
    from .exact import ByRows

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


@dataclass(slots=True)
class _Asked:
    """What one search makes once, however many passes a per-file cap reads: whether it
    has a lexical branch, the text the semantic branch embeds (``meaning``: the query,
    or a hypothesis with it), the snippet maker, the query's vector, the rows read so
    far, and the reranker's scores (``rerank``: None, no reranking; a failure ends it)."""

    query: str
    lexical: bool
    snippets: Snippets
    #: the names the query is when it is one name (``core.definitions``), else None
    names: tuple[str, ...] | None = None
    meaning: str = ""
    #: Where the search's time goes (``core.steps``: recorded for the benchmarks only).
    steps: Steps = field(default_factory=begin)
    vector: F32 | None = None
    rows: dict[int, ChunkRecord] = field(default_factory=dict)
    #: The text keys read with the lexical leg's rows (``Rows.texts``).
    texts: dict[int, tuple[str, int]] = field(default_factory=dict)
    #: The embedding server did not make the query's vector: no pass asks it again.
    no_vector: bool = False
    rerank: dict[int, float] | None = None
    prefer: str | None = None  # the question's language, preferred (None: none is)


class Ranking:
    """Searches over a store's legs and ``loaded``: the semantic leg is the store's
    (``semantic``), or the in-memory matrix when the store keeps none (``matrix``: its
    float32 vectors and stable order; ``Capabilities``); ``rows`` reads the hits' rows.
    Without either, a search has its lexical branch alone."""

    def __init__(self, *, rows: ReadStore, copies: CopyStore, lexical: LexicalLeg,
                 loaded: Loaded, rrf_k: int, semantic: SemanticLeg | None = None,
                 matrix: MatrixStore | None = None, feedback: int = 0,
                 feedback_weight: float = 1.0, reranker: Rescorer | None = None,
                 languages: LanguageStore | None = None,
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
        self._reranker = reranker
        self._other_language = other_language_share  # (1: no language preferred)
        self._embed_limiter: CapacityLimiter | None = None  # one query embedding at a time
        self._ties = TieRanks(loaded)  # (of rows tied at the matrix's cut: files by path)

    async def search(self, query: str, top_k: int, mode: str, allowed: Allowed | None,
                     shape: SearchShape, *, hypothesis: str | None = None,
                     ) -> list[SearchResult]:
        """The results of a search for ``query`` among the ``allowed`` files (None: every
        file; their ids are the catalog's answer to the search's filters); the semantic
        branch embeds ``hypothesis`` with the query when given (``core.hypothesis``)."""
        if allowed is not None and not allowed.ids:
            return []  # no file passes: nothing to rank
        # The contract: a hybrid search's branches read max(POOL, top_k * 2) each. A
        # per-file cap reads further down both lists, so that capped files leave room for
        # the next ones, and further again (four times as far each time) while one long
        # file fills them and they go on; so does a search whose copies of one text
        # collapsed into fewer hits than asked for.
        asked = _Asked(query, mode != "semantic", Snippets(query, shape.snippet_chars),
                       names=named(query) if mode != "semantic" and self._code() else None,
                       meaning=semantic_text(query, hypothesis), steps=begin())
        if mode == "hybrid" and self._languages is not None and self._other_language < 1 \
                and not (allowed and allowed.langs):  # (else a lang filter chose them)
            from ..core.language import preferred_language  # (hybrid only)

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
        if shape.rerank and self._reranker is not None:
            asked.rerank = {}  # (the reranker's first hits are read, whatever top_k)
            depth = max(depth, self._reranker.depth)
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
        clock = asked.steps.clock()
        # the rows the lexical branch reads with its hits: all of them where a name's
        # definitions or a per-file cap look at them; else those a lexical answer keeps
        # (a hybrid search reads the rows of the hits it keeps once, after fusion)
        with_rows = (None if asked.names or shape.max_per_file is not None
                     else top_k if mode == "lexical" else 0)

        async def run_lexical() -> None:
            nonlocal lexical
            if asked.lexical:
                lexical_clock = asked.steps.clock()
                lexical, found = await self._lexical.lexical(asked.query, depth, allowed,
                                                             rows=with_rows)
                rows.update(found)
                asked.texts.update(found.texts)
                lexical_clock.lap("lexical")

        async def run_semantic() -> None:
            nonlocal semantic
            semantic = await self._semantic(asked, depth, allowed)

        if mode == "hybrid":
            # (a lexical search waits for nothing: it runs without a loop, or anyio)
            from .together import together

            await together(run_lexical, run_semantic)
        elif mode == "lexical":
            await run_lexical()
        else:
            await run_semantic()
        clock.lap("branches")

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
            ranked = [(f.key, hybrid_scores(f)) for f in fused]
        clock.lap("fusion")
        defined: set[int] = set()
        if asked.names:  # a name's definitions first, in both modes that read words
            ranked, defined = definitions_first(ranked, rows, asked.names)
        also: dict[int, list[Place]] = {}
        head = top_k  # (the hits the answer keeps, or the reranker's more)
        if asked.rerank is not None and self._reranker is not None:
            head = max(top_k, self._reranker.depth)
        if shape.duplicates == "collapse":  # (before the cut: top_k distinct texts)
            ranked, also = await distinct(
                self._copies, ranked, allowed,
                head if shape.max_per_file is None else None, asked.texts)
            clock.lap("copies")
        fused_places: dict[int, int] = {}
        if asked.rerank is not None:
            ranked, fused_places = await self._reranked(asked, ranked)
        # rows of hits beyond the lexical list are read in one go (more than top_k with a
        # cap: some of them will be passed over)
        wanted = ranked[: top_k if shape.max_per_file is None else len(ranked)]
        missing = [cid for cid, _ in wanted if cid not in rows]
        if missing:
            rows.update(await self._reader.rows(missing))
        clock.lap("rows")
        why = Explainer(lexical, semantic, defined, fused_places) if shape.explain else None
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
            result = result_of(row, breakdown, snippets, shape, why, cid)
            if self._loaded.catalog_ready.is_set():  # until then, no count rather than a wrong one
                result["backlink_count"] = self._loaded.catalog.backlink_count(row["root"],
                                                                        row["path"])
            if cid in also:
                result["also_in"] = [also_in(p) for p in also[cid][:_ALSO_IN]]
                result["also_in_count"] = len(also[cid])
            results.append(result)
            if len(results) == top_k:
                break
        clock.lap("answer")
        return results, len(lexical) < depth and len(semantic) < depth

    async def _reranked(self, asked: _Asked, ranked: list[tuple[int, ScoreBreakdown]],
                        ) -> tuple[list[tuple[int, ScoreBreakdown]], dict[int, int]]:
        """``ranked`` with its first ``rerank_depth`` hits in the reranker's order, each
        with its ``rerank`` score (those below keep their order), and the fused place of
        each reranked hit (1-based); as it was when the reranker fails (which ends the
        reranking of this search: ``asked.rerank`` None)."""
        reranker, scored = self._reranker, asked.rerank
        assert reranker is not None and scored is not None
        rows = asked.rows
        missing = [cid for cid, _ in ranked[:reranker.depth] if cid not in rows]
        if missing:
            rows.update(await self._reader.rows(missing))
        # (a hit deleted since it was ranked is passed over, as the answer would)
        head = [(cid, b) for cid, b in ranked[:reranker.depth] if cid in rows]
        todo = [cid for cid, _ in head if cid not in scored]
        if todo:  # (a later pass of a capped search: only the hits new to the head)
            try:
                found = await reranker.scores(asked.query, [rows[cid]["content"]
                                                            for cid in todo])
            except RerankError:  # (said: the reranker keeps it for the answer's hint)
                asked.rerank = None
                return ranked, {}
            scored.update(zip(todo, found, strict=True))
        order = reordered(head, [scored[cid] for cid, _ in head])
        out: list[tuple[int, ScoreBreakdown]] = [
            (cid, cast("ScoreBreakdown", {**breakdown, "rerank": score}))
            for _, (cid, breakdown), score in order]
        places = {cid: place + 1 for place, (cid, _), _ in order}
        return out + ranked[reranker.depth:], places

    def _code(self) -> bool:
        """Whether the index may hold code (a name's definitions: ``core.definitions``);
        until the catalog is loaded, it may."""
        loaded = self._loaded
        return not loaded.catalog_ready.is_set() or "code" in loaded.catalog.kinds()

    async def _semantic(self, asked: _Asked, depth: int,
                        allowed: Allowed | None) -> list[tuple[int, float]]:
        embedder, matrix = self._loaded.embedder, self._loaded.matrix
        if not _HAS_WORD.search(asked.meaning) or embedder is None or asked.no_vector or (
                matrix is None and self._semantic_leg is None):
            return []  # no query vector can be made: semantic mode answers nothing
        clock = asked.steps.clock()
        vector = asked.vector
        if vector is None:
            if isinstance(embedder, AwaitsQueries):  # an embedding server: awaited
                try:
                    vector = await embedder.aembed_query(asked.meaning)
                except EmbeddingUnavailableError:
                    # the branch answers nothing; the answer's hint says why (its health)
                    asked.no_vector = True
                    return []
            else:
                import anyio

                if self._embed_limiter is None:
                    self._embed_limiter = anyio.CapacityLimiter(1)
                vector = await anyio.to_thread.run_sync(
                    embedder.embed_query, asked.meaning, limiter=self._embed_limiter)
            asked.vector = vector
        clock.lap("embed")
        if self._semantic_leg is not None:  # the store ranks its vectors itself
            return await self._semantic_leg.semantic(
                vector, depth, allowed, feedback=self._feedback, weight=self._feedback_weight)
        assert matrix is not None and self._matrix_store is not None
        groups: Groups | None = None
        if allowed is not None:  # (a language filter leaves the other chunks out)
            left_out = (await self._languages.left_out(allowed)
                        if self._languages is not None and allowed.langs else [])
            groups = (allowed.json + allowed.langs_json, allowed.array, left_out)
        # the compact matrix's best rows (of rows tied at the cut, those of the files
        # first by path: never by row id), ranked first as it holds them, those that can
        # reach the answer ranked exactly on their float32 vectors, read back in the
        # same worker thread. The scan (split across the cores: numkong releases the
        # GIL) shares them with a hybrid search's lexical branch, which goes on meanwhile
        import anyio  # (loaded already: a semantic branch runs under an event loop)

        from .exact import by_rows, through_texts  # (with the matrix: a semantic branch's)

        store = self._matrix_store

        def scan(ranks: GroupRanks) -> ByRows:  # (and the exact rows read where it ran)
            candidates = matrix.to_read(vector, depth, feedback=self._feedback,
                                        weight=self._feedback_weight, groups=groups,
                                        ranks=ranks, clock=clock)
            read = by_rows(matrix, store, embedder.dim, candidates)
            clock.lap("exact reads")
            return read

        try:
            read = await anyio.to_thread.run_sync(scan, self._ties.made)
        except Unranked:  # (seldom: rows tied at the cut, the catalog changed since)
            read = scan(self._ties.on_loop)  # (on the loop, which owns the catalog)
        clock.lap("hand-back")
        found, exact = await through_texts(store, embedder.label, embedder.dim, read)
        clock.lap("through texts")
        from ..core.ranking import rank  # (loaded already, with the matrix)

        ranked = rank(vector, found, exact, depth, feedback=self._feedback,
                      weight=self._feedback_weight, ties=True)
        clock.lap("re-rank")
        ordered = await self._matrix_store.in_stable_order(ranked, depth)  # equal cosines by path
        clock.lap("ties by path")
        return ordered
