"""The MCP tools' answers, shaped for an agent: within a budget, and honest about what is
missing (an empty index, filters that match nothing, embeddings not finished)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..answers import Why, base_answer, why
from ..api import Rifflux
from ..core.filters import Filters
from ..core.snippets import Snippets
from ..types import (
    ChunkDetail,
    FileLines,
    FileRecord,
    Mode,
    Neighbor,
    NoteLinks,
    SearchAnswer,
    SearchResult,
)
from .budget import (
    Shaped,
    answer_text,
    cut,
    fit_chunks,
    fit_lines,
    fit_lists,
    fit_results,
    fit_texts,
    within,
)

#: What a content='snippet' hit keeps: SPEC's fields but the text, and the snippet (where
#: it is in the file, its note's title, tags and links are a get_chunk away).
_FIRST_LOOK = ("chunk_id", "path", "heading_path", "chunk_index", "score_breakdown",
               "snippet", "explain")
#: What a content='snippet' answer aims at, in characters of its JSON text: the snippets
#: share what the other fields leave, each from 80 to 240 characters wide.
FIRST_LOOK_CHARS = 4_000
SNIPPET_WIDTHS = (80, 240)


#: What an answer says, over MCP, for each ``answers.Why``.
_WHY: dict[Why, str] = {
    "no files": "the index holds no files yet: call reindex with the folder to search (an "
                "absolute path), then search again",
    "rebuilt": "the index was found damaged and has started anew (index_status shows "
               "`recovered`: when, and the folders it held): those folders are being "
               "indexed again, so search again in a moment; call reindex for any folder "
               "not listed there",
    "filters": "no chunk matched within these filters: relax them (list_tags shows the "
               "tags in use, index_status the indexed folders), or search without them",
    "no words": "the query has no searchable word: ask with words",
    "no match": "nothing matched: try other words or mode='semantic'; if the files "
                "changed, reindex their folder",
    "meaning only": "no chunk contains the query's words: every hit is only close in "
                    "meaning (semantic); check the spelling, or try the words the notes "
                    "would use",
    "meaning only, sentence": "no chunk contains the words of this sentence: every hit is "
                              "only close in meaning (semantic); try its key words on their "
                              "own, separated by spaces",
}


async def search_answer(
    rf: Rifflux, query: str, mode: Mode, results: list[SearchResult],
    filters: dict[str, Any], *, explain: bool, max_chars: int, content: str = "full",
    applied: Filters | None = None, auto_reindex: dict[str, object] | None = None,
) -> SearchAnswer:
    """The answer as ``search_rifflux`` gives it, ``auto_reindex`` (what a search started)
    included, within ``max_chars`` (``budget``)."""
    answer = base_answer(rf, query, mode, results, filters, explain=explain, applied=applied)
    if auto_reindex is not None:
        answer["auto_reindex"] = auto_reindex
    reason = await why(rf, query, mode, results, filters)
    hints: list[str] = []
    if "pending_embeddings" in answer:
        hints.append(f"{answer['pending_embeddings']} chunks are still being embedded: "
                     "semantic results cover only part of the index; index_status shows "
                     "the progress")
    if reason is not None:
        hints.append(_WHY[reason])
    if hints:  # (before a first look is sized: its hint counts too)
        answer["hint"] = "; ".join(hints)
    if content == "snippet":  # (sized with the query as fit_results will echo it)
        echoed = answer["query"]
        answer["query"] = cut(echoed, max_chars // 4)
        _first_look(answer, query)
        answer["query"] = echoed  # (and cut there, where the hint says so)

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        parts, omitted = fit_results(out, budget)
        said = list(hints)
        if parts or omitted:
            said.append(_cut(parts, omitted, max_chars, content))
        return Shaped(out, cut=bool(parts or omitted), hints=said,
                      more={"omitted": omitted} if omitted else {})

    return cast(SearchAnswer, within(shape, cast(dict[str, Any], answer), max_chars))


def _cut(parts: list[str], omitted: int, max_chars: int, content: str) -> str:
    """What a search answer's hint says was cut to fit, and how to see the rest."""
    names = {"query": "the echoed query", "content": "contents", "snippet": "snippets"}
    said = []
    if parts:
        said.append(f"{' and '.join(names[p] for p in parts)} "
                    f"{'was' if parts == ['query'] else 'were'} cut (marked …[+N chars])")
    if omitted:
        said.append(f"the {omitted} lowest-ranked results were left out (omitted)")
    read = ""
    if {"content", "snippet"} & set(parts):
        read = "; read a hit whole with get_chunk(chunk_id)"
    if omitted or {"content", "snippet"} & set(parts):
        smaller = "" if content == "snippet" else "content='snippet', "
        read += f"; or ask with {smaller}a smaller top_k or max_per_file, or a larger max_chars"
    return f"{', and '.join(said)} to fit max_chars={max_chars}{read}"


def _first_look(answer: SearchAnswer, query: str) -> None:
    """content='snippet': a compact answer an agent skims, then expands with get_chunk.
    The root moves up when every hit shares it; scores keep 4 significant digits. The
    hits' snippets (made from the ``content`` they arrive with) share what the rest of the
    answer leaves of FIRST_LOOK_CHARS: a few hits get wide ones, ten hits with long
    breadcrumbs narrow ones, never narrower than SNIPPET_WIDTHS[0]."""
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
        cut = [Snippets.clip(f, width) for f in found]
        over = sum(len(answer_text(c)) - 2 for c in cut) - spare
        if over <= 0 or width == narrowest:
            break
        # (cut at word boundaries, a snippet shrinks by less than its width: a step more)
        width -= -(-over // len(compact)) + 1
    for light, snippet in zip(compact, cut, strict=True):
        light["snippet"] = snippet


def _rounded(scores: Mapping[str, Any]) -> dict[str, Any]:
    """Floats to 4 significant digits (a first look's scores rank, they are not read)."""
    return {k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in scores.items()}


def chunk_answer(chunk: ChunkDetail, max_chars: int) -> dict[str, Any]:
    def shape(out: dict[str, Any], budget: int) -> Shaped:
        if not fit_texts(out, [(out, "content")], budget):
            return Shaped(out)
        return Shaped(out, cut=True, hints=[
            f"the chunk was cut to fit max_chars={max_chars}: read its lines with "
            f"get_file(path, start_line={chunk['line_start']}, end_line={chunk['line_end']})"])

    return within(shape, dict(chunk), max_chars)


def file_answer(found: FileRecord | FileLines, max_chars: int) -> dict[str, Any]:
    def shape(out: dict[str, Any], budget: int) -> Shaped:
        hint = (fit_lines(out, budget, max_chars) if "text" in out
                else fit_chunks(out, budget, max_chars))
        hints = [hint] if hint is not None else []
        if out.get("changed_since_indexed"):
            hints.insert(0, "the file changed since it was indexed: these are its lines now, "
                            "and line numbers from search hits may point at other text; "
                            "reindex its folder, then search again")
        return Shaped(out, cut=hint is not None, hints=hints)

    return within(shape, dict(found), max_chars)


def links_answer(found: NoteLinks, limit: int, max_chars: int) -> dict[str, Any]:
    """A note's links, each list cut to ``limit`` entries (all of them counted), then to
    what fits ``max_chars`` characters of JSON text: ``unresolved`` first (its links are
    in ``outgoing`` too), then ``backlinks``, then ``outgoing``, from their ends."""
    answer: dict[str, Any] = dict(found)
    lists = ("outgoing", "backlinks", "unresolved")
    answer["counts"] = {name: len(answer[name]) for name in lists}
    for name in lists:
        answer[name] = answer[name][:limit]

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        fit_lists(out, lists[::-1], budget)
        cut = [name for name in lists if len(out[name]) < out["counts"][name]]
        if not cut:
            return Shaped(out)
        return Shaped(out, cut=True, hints=[
            f"{' and '.join(cut)} hold more links than shown (counts has them all; "
            f"limit={limit}, max_chars={max_chars}): call get_links again with a larger "
            "limit or max_chars to see them"])

    return within(shape, answer, max_chars)


def neighbors_answer(path: str, depth: int, found: list[Neighbor],
                     limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {"path": path, "depth": depth, "count": len(found),
                           "neighbors": found[:limit]}
    if len(found) > limit:
        out["truncated"] = True
        out["hint"] = (f"{len(found)} notes are within {depth} links; the nearest {limit} are "
                       "listed: call again with a larger limit or a smaller depth")
    elif not found:
        out["hint"] = ("no note links to or from this one (get_links shows its unresolved "
                       "links, which name notes that are not in the index)")
    return out
