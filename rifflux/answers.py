"""A search answer as every surface gives it (MCP's ``search_rifflux``, ``rifflux search
--json``): SPEC's fields, ``pending_embeddings`` while texts lack vectors, ``explain``
when asked, and why an answer says less than it seems to: nothing indexed, filters
that match nothing, a query without a word, or hits that are only close in meaning.
Each surface words that ``Why`` in its own terms (a tool to call, a command to run)."""

from __future__ import annotations

from typing import Any, Literal

from .api import Rifflux
from .core.fts_query import has_sentence
from .types import Mode, SearchAnswer, SearchResult

Why = Literal["no files", "rebuilt", "filters", "no words", "no match", "meaning only",
              "meaning only, sentence"]


def base_answer(rf: Rifflux, query: str, mode: Mode, results: list[SearchResult],
                filters: dict[str, Any], *, explain: bool) -> SearchAnswer:
    answer: SearchAnswer = {"query": query, "mode": mode, "count": len(results),
                            "embedding_model": rf.embedding_model, "results": results}
    pending = rf.pending_embeddings()
    if pending:
        answer["pending_embeddings"] = pending
    if explain:
        answer["explain"] = rf.describe_search(query, **filters)
    return answer


async def why(rf: Rifflux, query: str, mode: Mode, results: list[SearchResult],
              filters: dict[str, Any]) -> Why | None:
    """What the answer needs said, if anything: why it is empty, or that a hybrid
    search's hits all come from the semantic branch (no chunk holds the query's words:
    a misspelling, or a subject the notes do not cover; for a CJK question typed as a
    sentence, not a misspelling: none of the words inside it)."""
    if results:
        if mode != "hybrid" or any(r["score_breakdown"].get("lexical_rank") is not None
                                   for r in results):
            return None
        # (a lexical hit can rank below the semantic ones: ask that branch alone)
        lexical = await rf.search(query, top_k=1, mode="lexical", **filters)
        if lexical:
            return None
        return "meaning only, sentence" if has_sentence(query) else "meaning only"
    status = await rf.status()
    if status["files"] == 0:  # (a damaged index was moved aside: say so, not "empty")
        return "rebuilt" if "recovered" in status else "no files"
    if any(v is not None for v in filters.values()):
        return "filters"
    if rf.describe_search(query)["fts_query"] is None:
        return "no words"
    return "no match"
