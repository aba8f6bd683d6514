"""Keeping MCP answers within a character budget: an agent pays for every character.

The budget covers the texts of an answer (``content``, ``snippet``, ``text``):
search results are never dropped, their contents are cut (the longest first,
down to an even share) with a visible marker; a file is paged by lines, and
the answer says where the next page starts. A cut answer has ``truncated:
true`` and a ``hint`` saying how to read the rest.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

DEFAULT_MAX_CHARS = 40_000
MIN_MAX_CHARS = 1_000


def answer_text(answer: Any) -> str:
    """An answer as an agent receives it: compact JSON, non-ASCII as is."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def marker(cut: int) -> str:
    return f"…[+{cut} chars]"


def _cut(text: str, keep: int) -> str:
    """``text`` cut to at most ``keep`` characters, marker included, at a word boundary."""
    if len(text) <= keep:
        return text
    room = max(0, keep - len(marker(len(text))))
    space = text.rfind(" ", 0, room)
    end = space if space > room * 3 // 4 else room
    return text[:end] + marker(len(text) - end)


def _cap(lengths: list[int], budget: int) -> int:
    """The largest ``c`` with ``sum(min(n, c)) <= budget`` (water-filling)."""
    low, high = 0, max(lengths, default=0)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(n, mid) for n in lengths) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


def fit_results(results: Sequence[Any], max_chars: int) -> bool:
    """Cut the results' ``content`` (then ``snippet``) so that all of them together stay
    within ``max_chars``; True when something was cut. Results are never dropped."""
    for field in ("content", "snippet"):
        texts = [r[field] for r in results if isinstance(r.get(field), str)]
        other = sum(len(r[f]) for r in results for f in ("content", "snippet")
                    if f != field and isinstance(r.get(f), str))
        if other + sum(map(len, texts)) <= max_chars:
            return field == "snippet"  # contents were cut already (or nothing was)
        cap = _cap([len(t) for t in texts], max(0, max_chars - other))
        for result in results:
            if isinstance(result.get(field), str):
                result[field] = _cut(result[field], cap)
        if other + sum(len(r[field]) for r in results if isinstance(r.get(field), str)) \
                <= max_chars:
            return True
    return True


def fit_lines(answer: dict[str, Any], max_chars: int) -> str | None:
    """Cut a ``get_file`` line range to whole lines within ``max_chars``: ``end_line`` says
    where it stopped, ``next_start_line`` where the next page starts (none after the
    file's last line). None when it fits; else how to read the rest (a single line
    longer than the budget is cut with a marker, and the hint says how to read it whole)."""
    text: str = answer["text"]
    if len(text) <= max_chars:
        return None
    lines = text.split("\n")
    used, kept = 0, 0
    for line in lines:
        if used + len(line) + (1 if kept else 0) > max_chars:
            break
        used += len(line) + (1 if kept else 0)
        kept += 1
    start, asked_end = answer["start_line"], answer["end_line"]
    long_line = None
    if kept == 0:  # one line longer than the budget: its start, cut
        long_line = len(lines[0])
        answer["text"] = _cut(lines[0], max_chars)
        kept = 1
    else:
        answer["text"] = "\n".join(lines[:kept])
    answer["end_line"] = start + kept - 1
    more = answer["end_line"] < asked_end
    if more:
        answer["next_start_line"] = answer["end_line"] + 1
    # reading on keeps to the range asked for, when it ended before the file does
    until = f", end_line={asked_end}" if asked_end < answer["total_lines"] else ""
    if long_line is None:
        return _read_on(answer, max_chars, until)
    whole = (f"line {start} has {long_line} characters, more than max_chars={max_chars}: "
             f"read it whole with start_line={start}, end_line={start}, "
             f"max_chars={long_line}")
    if not more:
        return whole
    return (f"{whole}; call again with start_line={answer['next_start_line']}{until} to "
            "read on after it")


def fit_chunks(answer: dict[str, Any], max_chars: int) -> str | None:
    """A whole file's chunks, as many as fit in ``max_chars`` (at least one, cut if need
    be); ``next_start_line`` is where the next page (a line range) starts. None when all
    fit; else how to read the rest. A page ends where a line ends: a long line that two
    chunks share is left whole to the next page, and a chunk cut to fit is read again
    from its first line, so that no text falls between two pages."""
    chunks: list[dict[str, Any]] = answer["chunks"]
    used, kept = 0, 0
    for chunk in chunks:
        if used + len(chunk["content"]) > max_chars and kept:
            break
        used += len(chunk["content"])
        kept += 1
    if kept == len(chunks) and used <= max_chars:
        return None
    while 1 < kept < len(chunks) and chunks[kept]["line_start"] <= chunks[kept - 1]["line_end"]:
        kept -= 1  # the next chunk goes on in the last one's last line
    answer["chunks"] = chunks[:kept]
    last = answer["chunks"][-1]
    following = chunks[kept]["line_start"] if kept < len(chunks) else last["line_end"] + 1
    answer["next_start_line"] = min(last["line_end"] + 1, following)
    if len(last["content"]) > max_chars:
        last["content"] = _cut(last["content"], max_chars)
        answer["next_start_line"] = last["line_start"]  # its lines, whole, on the next page
    return _read_on(answer, max_chars)


def _read_on(answer: dict[str, Any], max_chars: int, until: str = "") -> str:
    return (f"the answer stops before line {answer['next_start_line']} to fit "
            f"max_chars={max_chars}: call get_file again with "
            f"start_line={answer['next_start_line']}{until} to read on")
