"""A search answer, made once for every surface (MCP's ``search_rifflux``, ``GET
/api/search``, ``rifflux search --json``): SPEC's fields, ``pending_embeddings`` while
texts lack vectors, ``languages_pending`` while chunks wait for their language (where a
``lang`` filter or the hybrid ranking's language preference would weigh it),
``explain`` when asked, why an answer says less than it seems to (nothing indexed,
filters that match nothing, a query without a word, hits that are only close in
meaning), and, within a budget, what was cut and how to read on.

A surface gives only its own words (``Words``): for each ``Why``, a tool to call, a
route to use or a command to run, and how its callers name the arguments a hint
mentions. A ``Words`` that lacks a reason cannot be made. The index searched is a
``Searched``: the library's ``Rifflux``, or a one-shot read's ``direct.DirectIndex``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, get_args

from ..core.filters import make_filters
from ..core.fts_query import has_sentence
from ..core.snippets import Snippets
from .budget import Shaped, answer_text, body_size, cut, fit_texts, size, text_size, within

if TYPE_CHECKING:
    from ..core.filters import Filters
    from ..types import (
        Counts,
        EmbeddingServerStatus,
        Mode,
        SearchAnswer,
        SearchExplain,
        SearchResult,
    )

__all__ = ["FIRST_LOOK_CHARS", "SNIPPET_WIDTHS", "Answered", "Searched", "Why", "Words",
           "languages_waiting", "not_reranked", "search_answer", "semantic_off", "why"]

Why = Literal["no files", "rebuilt", "filters", "no words", "no match", "meaning only",
              "meaning only, sentence"]

#: What a first look's hit keeps (MCP's content='snippet'): SPEC's fields but the text, and
#: the snippet (where it is in the file, its note's title, tags and links are a read away).
_FIRST_LOOK = ("chunk_id", "path", "heading_path", "chunk_index", "score_breakdown",
               "snippet", "explain", "also_in", "also_in_count")
#: What a first look aims at, in characters of its JSON text: the snippets share what the
#: other fields leave, each from 80 to 240 characters wide.
FIRST_LOOK_CHARS = 4_000
SNIPPET_WIDTHS = (80, 240)


class Searched(Protocol):
    """What an answer asks of the index that was searched (each as ``Rifflux`` says it)."""

    @property
    def embedding_model(self) -> str | None: ...
    @property
    def recovered(self) -> dict[str, object] | None: ...
    def pending_embeddings(self) -> int | None: ...
    def languages_pending(self) -> int | None: ...
    def describe_search(self, query: str, filters: Filters | None = None, *,
                        mode: str = "hybrid", hypothesis: str | None = None,
                        rerank: bool | None = None, **given: Any) -> SearchExplain: ...
    def search_condition(self) -> str | None: ...
    def semantic_condition(self) -> str | None: ...
    def embedding_server(self) -> EmbeddingServerStatus | None: ...
    def reranks(self, rerank: bool | None = None) -> bool: ...
    def rerank_failure(self) -> str | None: ...
    def searchable(self, query: str) -> bool: ...
    async def counts(self) -> Counts: ...
    async def search_filtered(self, query: str, filters: Filters, top_k: int = 10,
                              mode: str = "hybrid", *, max_per_file: int | None = None,
                              content: str = "full", explain: bool = False,
                              snippet_chars: int = 240, duplicates: str = "collapse",
                              hypothesis: str | None = None,
                              rerank: bool | None = None) -> list[SearchResult]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Words:
    """What one surface says in an answer, in its own terms."""

    #: Why the answer says less than it seems, for every ``Why``.
    why: Mapping[Why, str]
    #: That ``n`` texts still lack a vector (semantic results cover part of the index).
    pending: Callable[[int], str]
    #: How to read one hit whole (``get_chunk(chunk_id)``, a route, a command).
    read_hit: str
    #: How this surface's callers spell an argument a hint names (``top_k``,
    #: ``max_per_file``, ``max_chars``, and ``snippet``: asking for snippets only).
    names: Mapping[str, str]

    def __post_init__(self) -> None:
        lacking = [reason for reason in get_args(Why) if not self.why.get(reason)]
        missing = {"top_k", "max_per_file", "max_chars", "snippet"} - self.names.keys()
        if lacking or missing:
            raise TypeError(f"these words lack {', '.join(lacking + sorted(missing))}")


@dataclass(frozen=True, slots=True)
class Answered:
    """An answer and what its hint says, part by part (a surface that prints them, such
    as the command line on stderr, prints each its own way)."""

    answer: SearchAnswer
    why: Why | None
    pending: str | None  # the words for texts still without a vector
    reason: str | None  # the words for ``why``
    #: How the lexical branch ranks now, when there is something to say (the store's
    #: words, the same on every surface).
    condition: str | None = None
    #: Why the semantic branch answered nothing: the embedding server does not answer
    #: (the same words on every surface).
    semantic: str | None = None
    #: That the reranker asked for failed, and why (``not_reranked``: the same words on
    #: every surface).
    rerank: str | None = None
    #: That chunks still wait for their language, where the search's ``lang`` filter or
    #: its preference for the question's language would weigh it (``languages_waiting``:
    #: the same words on every surface).
    languages: str | None = None


def languages_waiting(n: int, *, filtered: bool) -> str:
    """What an answer says while ``n`` chunks wait for their language (it is told just
    after their files are indexed, as vectors are made): ``filtered``, by a ``lang``
    filter, which leaves them out meanwhile; else hybrid ranking prefers the question's
    language without them."""
    what = ("the lang filter leaves them out" if filtered
            else "the question's language is preferred without them")
    return (f"{n:,} chunk{'s' if n != 1 else ''} still wait{'' if n != 1 else 's'} for "
            f"{'their' if n != 1 else 'its'} language (told just after indexing): {what} "
            "until then; search again in a moment for the whole index")


def not_reranked(failure: str | None) -> str:
    """What an answer says when its reranker failed (``failure``: why): the hits are as
    if no reranker had been asked, never an error."""
    why = failure or "it failed"
    return (f"not reranked ({why}): the hits are in their fused order, as without a "
            "reranker")


async def search_answer(
    rf: Searched, query: str, mode: Mode, results: list[SearchResult],
    filters: dict[str, Any], *, words: Words, explain: bool = False,
    applied: Filters | None = None, max_chars: int | None = None, first_look: bool = False,
    extra: Mapping[str, object] | None = None, hypothesis: str | None = None,
    rerank: bool | None = None,
) -> Answered:
    """The answer to a search that gave ``results``: SPEC's fields (with ``extra``, such as
    MCP's ``auto_reindex``), ``pending_embeddings``, ``explain`` (the filters as the search
    applied them: ``applied``, parsed once for the search and this answer, else made from
    ``filters``) and a ``hint`` in ``words``; a first look (``first_look``: compact hits,
    their snippets sized to ``FIRST_LOOK_CHARS``); within ``max_chars`` when given.
    ``hypothesis`` and ``rerank`` as the search was given them: ``explain`` names the
    text each branch used and the reranker, and a hint says when the reranker failed."""
    answer: SearchAnswer = {"query": query, "mode": mode, "count": len(results),
                            "embedding_model": rf.embedding_model, "results": results}
    pending = rf.pending_embeddings()
    if pending:
        answer["pending_embeddings"] = pending
    langs = applied.langs if applied is not None else filters.get("lang")
    waiting = rf.languages_pending() if langs or mode == "hybrid" else None
    if waiting:
        answer["languages_pending"] = waiting
    if explain:
        asked: dict[str, Any] = {"mode": mode, "hypothesis": hypothesis, "rerank": rerank}
        answer["explain"] = (rf.describe_search(query, **asked, **filters) if applied is None
                             else rf.describe_search(query, applied, **asked))
    if extra:
        cast(dict[str, Any], answer).update(extra)
    reason = await why(rf, query, mode, results, filters, applied)
    condition = rf.search_condition() if mode != "semantic" else None
    semantic = None if mode == "lexical" else (
        rf.semantic_condition() or semantic_off(rf.embedding_server(), mode))
    if semantic is not None and reason == "no match":
        reason = None  # (not a matter of words: the semantic branch could not search)
    failed = None
    if results and rf.reranks(rerank) and not any(
            "rerank" in r["score_breakdown"] for r in results):
        failed = not_reranked(rf.rerank_failure())
    said = Answered(answer, reason, words.pending(pending) if pending else None,
                    None if reason is None else words.why[reason], condition, semantic,
                    failed, languages_waiting(waiting, filtered=bool(langs)) if waiting
                    else None)
    hints = [h for h in (said.pending, said.languages, said.condition, said.semantic,
                         said.reason, said.rerank)
             if h is not None]
    if hints:  # (before a first look is sized: its hint counts too)
        answer["hint"] = "; ".join(hints)
    if first_look:  # (sized with the query as fit_results will echo it)
        echoed = answer["query"]
        if max_chars is not None:
            answer["query"] = cut(echoed, max_chars // 4)
        _first_look(answer, query)
        answer["query"] = echoed  # (and cut there, where the hint says so)
    if max_chars is None:
        return said
    limit = max_chars

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        parts, omitted = fit_results(out, budget)
        told = list(hints)
        if parts or omitted:
            told.append(_cut(parts, omitted, limit, words, first_look))
        return Shaped(out, cut=bool(parts or omitted), hints=told,
                      more={"omitted": omitted} if omitted else {})

    shaped = within(shape, cast(dict[str, Any], answer), max_chars)
    return Answered(cast("SearchAnswer", shaped), said.why, said.pending, said.reason,
                    said.condition, said.semantic, said.rerank, said.languages)


def semantic_off(server: EmbeddingServerStatus | None, mode: Mode) -> str | None:
    """Why a search's semantic branch found nothing, when the embedding server that makes
    query vectors does not answer (None: it answers, or there is none)."""
    if server is None or server["reachable"] is not False:
        return None
    since = server["unreachable_since"]
    when = "" if since is None else f" since {time.strftime('%H:%M:%S', time.localtime(since))}"
    then = ("these results are found by their words only" if mode == "hybrid"
            else "lexical search works meanwhile")
    return (f"semantic ranking is off{when}: the embedding server "
            f"{server['error'] or 'does not answer'}; {then}; nothing indexed is lost, and "
            "embedding resumes by itself when the server answers")


async def why(rf: Searched, query: str, mode: Mode, results: list[SearchResult],
              filters: Mapping[str, Any], applied: Filters | None = None) -> Why | None:
    """What the answer needs said, if anything: why it is empty, or that a hybrid
    search's hits all come from the semantic branch (no chunk holds the query's words:
    a misspelling, or a subject the notes do not cover; for a CJK question typed as a
    sentence, not a misspelling: none of the words inside it)."""
    if results:
        # When its lexical branch found anything, a hybrid search's first hit nearly always
        # has a lexical rank (the best lexical hit's fused score is 1/2 and more, that of a
        # hit found by meaning alone at most 1/2 when the lexical list holds every match:
        # core.fusion.combine); when no hit has one, the lexical branch is asked alone.
        if mode != "hybrid" or any(r["score_breakdown"].get("lexical_rank") is not None
                                   for r in results):
            return None
        if rf.searchable(query) and await rf.search_filtered(
                query, make_filters(**filters) if applied is None else applied, 1, "lexical",
                content="snippet", duplicates="all", rerank=False):
            return None  # (its words are held, by chunks fused below these hits)
        return "meaning only, sentence" if has_sentence(query) else "meaning only"
    if (await rf.counts())["files"] == 0:  # (a damaged index moved aside: not "empty")
        return "rebuilt" if rf.recovered is not None else "no files"
    if any(v is not None for v in filters.values()):
        return "filters"
    if not rf.searchable(query):
        return "no words"
    return "no match"


def fit_results(answer: dict[str, Any], max_chars: int) -> tuple[list[str], int]:
    """A search answer's body within ``max_chars``: an echoed query (or an explained
    expression) longer than a quarter of it is cut, then the contents and then the
    snippets (``fit_texts``); when even at their shortest the results do not all fit,
    the lowest-ranked are left out. What was cut (``query``, ``content``, ``snippet``),
    and how many results were left out."""
    parts: list[str] = []
    quarter = max_chars // 4
    if text_size(answer["query"]) > quarter:
        answer["query"] = cut(answer["query"], quarter)
        parts.append("query")
    explain = answer.get("explain") or {}
    for key in ("fts_query", "fts_every"):
        if isinstance(explain.get(key), str) and text_size(explain[key]) > quarter:
            explain[key] = cut(explain[key], quarter)
    results = answer["results"]
    kept = _fitting(answer, max_chars)
    if kept < len(results):
        answer["results"], answer["count"] = results[:kept], kept
    for name in ("content", "snippet"):
        slots = [(r, name) for r in answer["results"] if isinstance(r.get(name), str)]
        if fit_texts(answer, slots, max_chars):
            parts.append(name)
        if body_size(answer) <= max_chars:
            break
    return parts, len(results) - kept


def _fitting(answer: dict[str, Any], max_chars: int) -> int:
    """How many of the first results fit, with their texts at their shortest."""
    results = answer["results"]
    answer["results"] = []
    room = max_chars - body_size(answer)
    answer["results"] = results
    used, kept = -1, 0  # (n results take n - 1 commas)
    for result in results:
        used += size({k: cut(v, 0) if k in ("content", "snippet") and isinstance(v, str)
                      else v for k, v in result.items()}) + 1
        if used > room:
            break
        kept += 1
    return kept


def _cut(parts: list[str], omitted: int, max_chars: int, words: Words,
         first_look: bool) -> str:
    """What a search answer's hint says was cut to fit, and how to see the rest."""
    names = {"query": "the echoed query", "content": "contents", "snippet": "snippets"}
    said = []
    if parts:
        said.append(f"{' and '.join(names[p] for p in parts)} "
                    f"{'was' if parts == ['query'] else 'were'} cut (marked …[+N chars])")
    if omitted:
        said.append(f"the {omitted} lowest-ranked results were left out (omitted)")
    read = ""
    texts = bool({"content", "snippet"} & set(parts))
    if texts:
        read = f"; read a hit whole with {words.read_hit}"
    if omitted or texts:
        asked = words.names
        smaller = "" if first_look else f"{asked['snippet']}, "
        read += (f"; or ask with {smaller}a smaller {asked['top_k']} or "
                 f"{asked['max_per_file']}, or a larger {asked['max_chars']}")
    return f"{', and '.join(said)} to fit {words.names['max_chars']}={max_chars}{read}"


def _first_look(answer: SearchAnswer, query: str) -> None:
    """A compact answer an agent skims, then expands hit by hit. The root moves up when
    every hit shares it; scores keep 4 significant digits. The hits' snippets (made from
    the ``content`` they arrive with) share what the rest of the answer leaves of
    FIRST_LOOK_CHARS: a few hits get wide ones, ten hits with long breadcrumbs narrow
    ones, never narrower than SNIPPET_WIDTHS[0]."""
    results = answer["results"]
    roots = {r["root"] for r in results}
    shared = roots.pop() if len(roots) == 1 else None
    if shared is not None:
        answer["root"] = shared
    compact: list[Any] = []
    for hit in results:
        light: dict[str, Any] = {k: v for k, v in hit.items() if k in _FIRST_LOOK}
        if shared is None:
            light["root"] = hit["root"]
        light["score_breakdown"] = _rounded(hit["score_breakdown"])
        if "explain" in light:
            light["explain"] = _rounded(light["explain"])
        light["snippet"] = ""
        compact.append(light)
    answer["results"] = compact
    if not compact:
        return
    narrowest, widest = SNIPPET_WIDTHS
    snippets = Snippets(query)
    found = [snippets.find(hit["content"]) for hit in results]
    spare = FIRST_LOOK_CHARS - len(answer_text(answer))  # what the empty snippets leave
    width = spare // len(compact)
    while True:  # a snippet's marks and ellipses are beyond its width: measure
        width = max(narrowest, min(widest, width))
        clipped = [Snippets.clip(f, width) for f in found]
        over = sum(len(answer_text(c)) - 2 for c in clipped) - spare
        if over <= 0 or width == narrowest:
            break
        # (cut at word boundaries, a snippet shrinks by less than its width: a step more)
        width -= -(-over // len(compact)) + 1
    for light, snippet in zip(compact, clipped, strict=True):
        light["snippet"] = snippet


def _rounded(scores: Mapping[str, Any]) -> dict[str, Any]:
    """Floats to 4 significant digits (a first look's scores rank, they are not read)."""
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in scores.items()}
