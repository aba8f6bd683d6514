"""A ranked chunk made a search result: its row's fields, its scores, its snippet, and
why it ranks where it does (``Explainer``: each branch's rank and raw score, and
whether it moved as a definition or was reranked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.fusion import Combined
    from ..core.snippets import Snippets
    from ..store.copies import Place
    from ..types import (
        AlsoIn,
        ChunkRecord,
        HitExplain,
        HybridScores,
        ScoreBreakdown,
        SearchResult,
    )
    from .asked import SearchShape


class Explainer:
    """Each hit's rank and raw score in each branch that found it."""

    def __init__(self, lexical: list[tuple[int, float]],
                 semantic: list[tuple[int, float]], defined: set[int],
                 fused_places: dict[int, int] | None = None) -> None:
        self._lexical = {cid: (rank, score) for rank, (cid, score) in enumerate(lexical, 1)}
        self._semantic = {cid: (rank, score) for rank, (cid, score) in enumerate(semantic, 1)}
        self._defined = defined
        self._fused = fused_places or {}

    def of(self, cid: int) -> HitExplain:
        out: HitExplain = {}
        if cid in self._lexical:
            out["lexical_rank"], out["bm25"] = self._lexical[cid]
        if cid in self._semantic:
            out["semantic_rank"], out["cosine"] = self._semantic[cid]
        if cid in self._defined:
            out["definition"] = True
        if cid in self._fused:
            out["fused_rank"] = self._fused[cid]
        return out


def result_of(row: ChunkRecord, breakdown: ScoreBreakdown, snippets: Snippets,
            shape: SearchShape, why: Explainer | None, cid: int) -> SearchResult:
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


def hybrid_scores(fused: Combined[int]) -> HybridScores:
    return {"rrf": fused.rrf, "lexical_rank": fused.ranks[0], "semantic_rank": fused.ranks[1],
            "fused": fused.score}


def also_in(place: Place) -> AlsoIn:
    return {"path": place.path, "root": place.root, "line_start": place.line_start}
