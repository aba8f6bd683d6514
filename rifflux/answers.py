"""A search answer as every surface gives it (MCP's ``search_rifflux``, ``rifflux search
--json``): SPEC's fields, ``pending_embeddings`` while texts lack vectors, ``explain``
when asked, and why an answer says less than it seems to: nothing indexed, filters
that match nothing, a query without a word, or hits that are only close in meaning.
Each surface words that ``Why`` in its own terms (a tool to call, a command to run)."""

from __future__ import annotations

from typing import Any, Literal

from .api import Rifflux
from .core.filters import Filters
from .core.fts_query import has_sentence
from .types import Mode, SearchAnswer, SearchResult

Why = Literal["no files", "rebuilt", "filters", "no words", "no match", "meaning only",
              "meaning only, sentence"]


def base_answer(rf: Rifflux, query: str, mode: Mode, results: list[SearchResult],
                filters: dict[str, Any], *, explain: bool,
                applied: Filters | None = None) -> SearchAnswer:
    """SPEC's fields, ``pending_embeddings`` and, with ``explain``, the filters as the
    search applied them (``applied``: parsed once, for the search and this answer; else
    made from ``filters``)."""
    answer: SearchAnswer = {"query": query, "mode": mode, "count": len(results),
                            "embedding_model": rf.embedding_model, "results": results}
    pending = rf.pending_embeddings()
    if pending:
        answer["pending_embeddings"] = pending
    if explain:
        answer["explain"] = (rf.describe_search(query, **filters) if applied is None
                             else rf.describe_search(query, applied))
    return answer


async def why(rf: Rifflux, query: str, mode: Mode, results: list[SearchResult],
              filters: dict[str, Any]) -> Why | None:
    """What the answer needs said, if anything: why it is empty, or that a hybrid
    search's hits all come from the semantic branch (no chunk holds the query's words:
    a misspelling, or a subject the notes do not cover; for a CJK question typed as a
    sentence, not a misspelling: none of the words inside it)."""
    if results:
        # When its lexical branch found anything, a hybrid search's first hit has a lexical
        # rank: the best lexical hit's fused score is at least that of any hit found by
        # meaning alone, and it wins the tie (core.fusion.rrf).
        if mode != "hybrid" or any(r["score_breakdown"].get("lexical_rank") is not None
                                   for r in results):
            return None
        return "meaning only, sentence" if has_sentence(query) else "meaning only"
    if (await rf.counts())["files"] == 0:  # (a damaged index moved aside: not "empty")
        return "rebuilt" if rf.recovered is not None else "no files"
    if any(v is not None for v in filters.values()):
        return "filters"
    if rf.describe_search(query)["fts_query"] is None:
        return "no words"
    return "no match"
