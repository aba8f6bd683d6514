"""Keeping answers within a character budget: an agent pays for every character.

``max_chars`` bounds the whole answer as the client receives it, its compact JSON
text, escapes and all. What says what was cut and how to read on (``truncated``,
``omitted``, ``next_start_line``, ``hint``: the envelope) is counted in too when there
is room; it never takes more than ``ENVELOPE`` characters beyond ``max_chars``
(``within``). The rest, the body, is cut by each tool's own rule: search contents
and snippets (the longest first, down to an even share, with a visible marker) and
then the lowest-ranked results, a file's lines or chunks by page, a note's links
from the ends of their lists. Whatever metadata is still over after that (a file
with hundreds of tags, say) is shortened last (``squeeze``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The most characters an answer takes beyond ``max_chars``: its envelope (what says what
#: was cut and how to read on), when the body cannot leave it room.
ENVELOPE = 800
ENVELOPE_FIELDS = ("truncated", "omitted", "next_start_line", "hint")


def answer_text(answer: Any) -> str:
    """An answer as an agent receives it: compact JSON, non-ASCII as is."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def size(value: Any) -> int:
    """The characters ``value`` takes in an answer's JSON text."""
    return len(answer_text(value))


def text_size(text: str) -> int:
    """The characters a string's text takes in JSON (escapes counted, quotes not)."""
    return size(text) - 2


def body_size(answer: dict[str, Any]) -> int:
    """The size of an answer but its envelope."""
    return size({k: v for k, v in answer.items() if k not in ENVELOPE_FIELDS})


def marker(cut: int) -> str:
    return f"…[+{cut} chars]"


def cut(text: str, keep: int) -> str:
    """``text`` in at most ``keep`` characters of JSON text, marker included, cut at a word
    boundary when one is near. Never longer than ``text``: when even the marker alone is
    longer than ``keep``, that is what is left (or the text, if shorter still)."""
    whole = text_size(text)
    if whole <= keep:
        return text
    room = max(0, keep - len(marker(len(text))))
    if whole == len(text):  # nothing escaped: a character is a character
        end = room
    else:  # the longest prefix whose JSON text fits
        low, high = 0, min(len(text), room)
        while low < high:
            mid = (low + high + 1) // 2
            if text_size(text[:mid]) <= room:
                low = mid
            else:
                high = mid - 1
        end = low
    space = text.rfind(" ", 0, end)
    if space > end * 3 // 4:
        end = space
    shorter = text[:end] + marker(len(text) - end)
    return shorter if text_size(shorter) < whole else text


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


Slot = tuple[dict[str, Any], str]


def fit_texts(answer: dict[str, Any], slots: Sequence[Slot], max_chars: int) -> bool:
    """Cut the texts in ``slots`` (the longest first, down to an even share) so that the
    answer's body fits in ``max_chars``; True when one was cut. Texts that cannot shrink
    enough are each left at their shortest (the marker alone)."""
    if not slots or body_size(answer) <= max_chars:
        return False
    texts = [holder[key] for holder, key in slots]
    for holder, key in slots:
        holder[key] = ""
    room = max_chars - body_size(answer)
    cap = _cap([text_size(t) for t in texts], max(room, 0))
    for (holder, key), text in zip(slots, texts, strict=True):
        holder[key] = cut(text, cap)
    if body_size(answer) > max_chars:
        for (holder, key), text in zip(slots, texts, strict=True):
            holder[key] = cut(text, 0)
    return True


# ---------------------------------------------------------------- the last resort

#: Cut only when nothing else is left: what a caller needs to ask for more.
_IDS = frozenset({"chunk_id", "prev_chunk_id", "next_chunk_id", "target_chunk_id", "path",
                  "root", "job_id"})
#: Lists that their tools shorten, and count: left alone here.
_PAGED = frozenset({"results", "chunks", "outgoing", "backlinks", "unresolved", "neighbors"})
#: Objects whose entries are the user's own (a note's front matter): shortened like lists.
_FREE = frozenset({"frontmatter"})

Holder = dict[str, Any] | list[Any]


def squeeze(answer: dict[str, Any], max_chars: int) -> bool:
    """Shorten what is left of the body until it fits: the largest list (from its end) or
    text (with a marker) first, ids and paths last. True when anything was shortened."""
    squeezed = False
    for ids_too in (False, True):
        while (over := body_size(answer) - max_chars) > 0:
            found = max(_shrinkable(answer, ids_too, top=True), default=None,
                        key=lambda c: c[0])
            if found is None:
                break
            _, holder, key, value = found
            if isinstance(value, str):
                shorter: Any = cut(value, max(0, text_size(value) - over))
            else:
                shorter = _fewer(value, over)
            holder[key] = shorter
            squeezed = True
    return squeezed


def _shrinkable(node: Holder, ids_too: bool,
                top: bool = False) -> list[tuple[int, Holder, Any, Any]]:
    """(size, holder, key, value) of every text, list or free object that can shrink."""
    found: list[tuple[int, Holder, Any, Any]] = []
    items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
    for key, value in items:
        if top and key in ENVELOPE_FIELDS:
            continue
        if isinstance(value, str):
            if (ids_too or key not in _IDS) and cut(value, 0) != value:
                found.append((size(value), node, key, value))
            continue
        if isinstance(value, list | dict):
            if value and (isinstance(value, list) and key not in _PAGED or key in _FREE):
                found.append((size(value), node, key, value))
            found += _shrinkable(value, ids_too)
    return found


def _fewer(value: list[Any] | dict[str, Any], over: int) -> list[Any] | dict[str, Any]:
    """``value`` without as many of its last entries as take ``over`` characters."""
    entries = list(value.items()) if isinstance(value, dict) else list(value)
    kept, dropped = len(entries), 0
    while kept and dropped < over:
        kept -= 1
        dropped += size(entries[kept]) + 1
    return dict(entries[:kept]) if isinstance(value, dict) else entries[:kept]


# ---------------------------------------------------------------- the whole answer


@dataclass(slots=True)
class Shaped:
    """An answer's body fitted to a budget, what was cut, and what says how to read on."""

    body: dict[str, Any]
    cut: bool = False
    hints: list[str] = field(default_factory=list)
    more: dict[str, Any] = field(default_factory=dict)  # (omitted)


def within(shape: Callable[[dict[str, Any], int], Shaped], answer: dict[str, Any],
           max_chars: int) -> dict[str, Any]:
    """``answer`` shaped (by ``shape``, on a copy) for a body of ``max_chars``; when its
    envelope then takes it over, shaped again for a body that leaves the envelope room."""
    out = _finish(shape(copy.deepcopy(answer), max_chars), max_chars, max_chars)
    envelope = size(out) - body_size(out)
    if size(out) > max_chars and envelope < max_chars:
        budget = max_chars - envelope
        out = _finish(shape(copy.deepcopy(answer), budget), budget, max_chars)
    return out


def _finish(shaped: Shaped, budget: int, max_chars: int) -> dict[str, Any]:
    out = shaped.body
    squeezed = squeeze(out, budget)
    hints = list(shaped.hints)
    if squeezed:
        hints.append(f"lists and texts (tags, titles, headings) were shortened to fit "
                     f"max_chars={max_chars}")
    if shaped.cut or squeezed:
        out["truncated"] = True
    out.update(shaped.more)
    if hints:
        out["hint"] = "; ".join(hints)
    return out
