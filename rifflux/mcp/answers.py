"""The MCP tools' answers, shaped for an agent: MCP's words for what a search answer says
(the answer itself is ``rifflux.answers``'), and the reading tools' answers (a chunk, a
file's lines or chunks, a note's links and neighbours), each within its budget with
how to read on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..answers import Words, within
from ..answers.budget import Shaped, body_size, cut, fit_texts, size, text_size
from ..types import ChunkDetail, FileLines, FileRecord, Neighbor, NoteLinks

#: What a search answer says over MCP.
WORDS = Words(
    why={
        "no files": "the index holds no files yet: call reindex with the folder to search "
                    "(an absolute path), then search again",
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
        "meaning only, sentence": "no chunk contains the words of this sentence: every hit "
                                  "is only close in meaning (semantic); try its key words on "
                                  "their own, separated by spaces",
    },
    pending=lambda n: (f"{n} chunks are still being embedded: semantic results cover only "
                       "part of the index; index_status shows the progress"),
    read_hit="get_chunk(chunk_id)",
    names={"top_k": "top_k", "max_per_file": "max_per_file", "max_chars": "max_chars",
           "snippet": "content='snippet'"},
)


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
                       "links, which name notes or files that are not in the index)")
    return out


# ---------------------------------------------------------------- each reading tool's body


def fit_lines(answer: dict[str, Any], budget: int, max_chars: int) -> str | None:
    """Cut a ``get_file`` line range to whole lines within ``budget``: ``end_line`` says
    where it stopped, ``next_start_line`` where the next page starts (none after the
    file's last line). None when it fits; else how to read the rest (a single line
    longer than the budget is cut with a marker, and the hint says how to read it whole)."""
    if body_size(answer) <= budget:
        return None
    lines = answer["text"].split("\n")
    start, asked_end = answer["start_line"], answer["end_line"]
    answer["text"] = ""
    room = budget - body_size(answer)
    used, kept = -2, 0  # (a newline is two characters of JSON text: \\n)
    for line in lines:
        used += text_size(line) + 2
        if used > room:
            break
        kept += 1
    whole = None
    if kept == 0:  # one line longer than the budget: its start, cut
        answer["text"], answer["end_line"] = lines[0], start
        whole = body_size(answer)  # what reads it whole
        answer["text"], kept = cut(lines[0], room), 1
    else:
        answer["text"] = "\n".join(lines[:kept])
    answer["end_line"] = start + kept - 1
    more = answer["end_line"] < asked_end
    if more:
        answer["next_start_line"] = answer["end_line"] + 1
    # reading on keeps to the range asked for, when it ended before the file does
    until = f", end_line={asked_end}" if asked_end < answer["total_lines"] else ""
    if whole is None:
        return _read_on(answer, max_chars, until)
    said = (f"line {start} has {len(lines[0])} characters, cut to fit max_chars={max_chars}: "
            f"read it whole with start_line={start}, end_line={start}, "
            f"max_chars={max(whole, max_chars)}")
    if not more:
        return said
    return (f"{said}; call again with start_line={answer['next_start_line']}{until} to "
            "read on after it")


def fit_chunks(answer: dict[str, Any], budget: int, max_chars: int) -> str | None:
    """A whole file's chunks, as many as fit in ``budget`` (at least one, cut if need
    be); ``next_start_line`` is where the next page (a line range) starts. None when all
    fit; else how to read the rest. A page ends where a line ends: a long line that two
    chunks share is left whole to the next page, and a chunk cut to fit is read again
    from its first line, so that no text falls between two pages."""
    if body_size(answer) <= budget:
        return None
    chunks: list[dict[str, Any]] = answer["chunks"]
    answer["chunks"] = []
    room = budget - body_size(answer)
    used, kept = -1, 0
    for chunk in chunks:
        used += size(chunk) + 1
        if used > room and kept:
            break
        kept += 1
    while 1 < kept < len(chunks) and chunks[kept]["line_start"] <= chunks[kept - 1]["line_end"]:
        kept -= 1  # the next chunk goes on in the last one's last line
    answer["chunks"] = chunks[:kept]
    last = chunks[kept - 1]
    following = chunks[kept]["line_start"] if kept < len(chunks) else last["line_end"] + 1
    answer["next_start_line"] = min(last["line_end"] + 1, following)
    if body_size(answer) > budget:  # one chunk, too long: its lines, whole, on the next page
        fit_texts(answer, [(last, "content")], budget)
        answer["next_start_line"] = last["line_start"]
    return _read_on(answer, max_chars)


def _read_on(answer: dict[str, Any], max_chars: int, until: str = "") -> str:
    return (f"the answer stops before line {answer['next_start_line']} to fit "
            f"max_chars={max_chars}: call get_file again with "
            f"start_line={answer['next_start_line']}{until} to read on")


def fit_lists(answer: dict[str, Any], names: Sequence[str], budget: int) -> None:
    """Entries dropped from the ends of the lists ``names``, in that order, until the body
    fits in ``budget``."""
    for name in names:
        entries = answer[name]
        while entries and (over := body_size(answer) - budget) > 0:
            while entries and over > 0:
                over -= size(entries.pop()) + 1
