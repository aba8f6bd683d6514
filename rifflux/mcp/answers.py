"""The MCP tools' answers, shaped for an agent: within a budget, and honest about what is
missing (an empty index, filters that match nothing, embeddings not finished)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from .budget import answer_text, fit_chunks, fit_lines, fit_results

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
    applied: Filters | None = None,
) -> SearchAnswer:
    answer = base_answer(rf, query, mode, results, filters, explain=explain, applied=applied)
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
    if content == "snippet":
        _first_look(answer, query)
    if fit_results(answer["results"], max_chars):  # (the compact ones, for a first look)
        answer["truncated"] = True
        smaller = ("a smaller top_k or max_per_file" if content == "snippet"
                   else "content='snippet', a smaller top_k or max_per_file")
        hints.append(f"{'snippets' if content == 'snippet' else 'contents'} were cut to fit "
                     f"max_chars={max_chars} (marked …[+N chars]): read a hit whole with "
                     f"get_chunk(chunk_id), or ask with {smaller}")
    if hints:
        answer["hint"] = "; ".join(hints)
    return answer


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
    out: dict[str, Any] = dict(chunk)
    if fit_results([out], max_chars):
        out["truncated"] = True
        out["hint"] = (f"the chunk was cut to fit max_chars={max_chars}: read its lines with "
                       f"get_file(path, start_line={chunk['line_start']}, "
                       f"end_line={chunk['line_end']})")
    return out


def file_answer(found: FileRecord | FileLines, max_chars: int) -> dict[str, Any]:
    out: dict[str, Any] = dict(found)
    hint = fit_lines(out, max_chars) if "text" in found else fit_chunks(out, max_chars)
    hints = [hint] if hint is not None else []
    if hint is not None:
        out["truncated"] = True
    if found.get("changed_since_indexed"):
        hints.insert(0, "the file changed since it was indexed: these are its lines now, "
                        "and line numbers from search hits may point at other text; "
                        "reindex its folder, then search again")
    if hints:
        out["hint"] = "; ".join(hints)
    return out


def links_answer(found: NoteLinks, limit: int, max_chars: int) -> dict[str, Any]:
    """A note's links, each list cut to ``limit`` entries (all of them counted), then to
    what fits ``max_chars`` characters of JSON text: ``unresolved`` first (its links are
    in ``outgoing`` too), then ``backlinks``, then ``outgoing``, from their ends."""
    out: dict[str, Any] = dict(found)
    lists = ("outgoing", "backlinks", "unresolved")
    out["counts"] = {name: len(out[name]) for name in lists}
    for name in lists:
        out[name] = out[name][:limit]
    over = len(answer_text(out)) + 200 - max_chars  # (room for the hint)
    for name in reversed(lists):
        kept = out[name]
        while over > 0 and kept:
            over -= len(answer_text(kept.pop())) + 1
    cut = [name for name in lists if len(out[name]) < out["counts"][name]]
    if cut:
        out["truncated"] = True
        out["hint"] = (f"{' and '.join(cut)} hold more links than shown (counts has them "
                       f"all; limit={limit}, max_chars={max_chars}): call get_links again "
                       "with a larger limit or max_chars to see them")
    return out


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
