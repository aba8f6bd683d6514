"""The edits ``edit_note`` makes, and the front matter ``write_note`` writes: pure functions
of a note's text (``note_text.NoteText``).

- ``append`` / ``prepend``: the text becomes a block of its own at the end of the note, or
  at the top of its body (right after the front matter), a blank line between it and
  what it touches (so a paragraph never runs into the one before it).
- ``replace_section(heading, text)``: the text under a heading (its subsections
  included, up to the next heading of its level or higher) becomes ``text``; the heading
  line stays. A heading is named by its text (``Decisions``, ``## Decisions``) or, when
  several have that text, by its breadcrumb (``Project > Decisions``). Headings in code
  blocks are not headings.
- ``find`` / ``replace``: the exact text, once (or every time with ``replace_all``).
  Text that is not there, or is there several times, is an error that says where it is.
- ``with_front_matter``: a title and tags merged into a note's front matter (made when
  it has none): ``title`` is set, tags are added to those it has.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import yaml

from ..errors import InvalidArgumentError
from .frontmatter import front_matter_end, normalise_tag, split_front_matter
from .links import fold
from .note_text import Edit, NoteText, normal
from .render import block_tokens, inline

_LEVEL = re.compile(r"^#{1,6}\s+")
#: Most matches listed in an error.
_SHOWN = 10


def _block(text: str, what: str) -> str:
    block = normal(text).strip("\n")
    if not block.strip():
        raise InvalidArgumentError(f"{what} is empty: give the text to add")
    return block + "\n"


def append(note: NoteText, text: str) -> Edit:
    """``text`` as a block of its own at the end of the note."""
    block, end = _block(text, "append"), len(note.text)
    before = note.text
    gap = "" if not before.strip() or before.endswith("\n\n") else \
        "\n" if before.endswith("\n") else "\n\n"
    return Edit(end, end, gap + block)


def prepend(note: NoteText, text: str) -> Edit:
    """``text`` as a block of its own at the top of the body, after the front matter."""
    block, at = _block(text, "prepend"), front_matter_end(note.text)
    rest = note.text[at:]
    return Edit(at, at, block + ("" if not rest or rest.startswith("\n") else "\n"))


def _headings(text: str) -> list[tuple[int, str, int, int]]:
    """Every heading of the body: (level, breadcrumb, start, end of its line(s))."""
    at = front_matter_end(text) if split_front_matter(text)[1] != text else 0
    found: list[tuple[int, str, int, int]] = []
    stack: list[tuple[int, str]] = []
    for tok, start, end in block_tokens(text[at:]):
        if tok.get("type") != "heading":
            continue
        level = int(tok.get("attrs", {}).get("level", 1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, inline(str(tok.get("text", ""))).strip()))
        found.append((level, " > ".join(t for _, t in stack), at + start, at + end))
    return found


def replace_section(note: NoteText, heading: str, text: str, name: str) -> Edit:
    """The section under ``heading`` (named by its text or breadcrumb) becomes ``text``."""
    wanted = [fold(p) for p in _LEVEL.sub("", heading.strip()).split(" > ") if p.strip()]
    if not wanted:
        raise InvalidArgumentError("replace_section needs a heading: its text, e.g. "
                                   "'Decisions', or its breadcrumb 'Project > Decisions'")
    headings = _headings(note.text)
    matches = [h for h in headings
               if [fold(p) for p in h[1].split(" > ")][-len(wanted):] == wanted]
    if not matches:
        have = "; ".join(f"line {_line(note, h[2])}: {h[1]}" for h in headings[:20])
        raise InvalidArgumentError(
            f"{name} has no heading {heading!r}" + (f"; its headings are {have}" if have
                                                    else "; it has no headings")
            + ". Give one of them, or append the section instead")
    if len(matches) > 1:
        where = "; ".join(f"line {_line(note, h[2])}: {h[1]!r}" for h in matches[:_SHOWN])
        raise InvalidArgumentError(f"{name} has {len(matches)} headings {heading!r} ({where})"
                                   "; give the breadcrumb of the one to replace")
    level, _, _, line_end = matches[0]
    after = [h for h in headings if h[2] >= line_end and h[0] <= level]
    end = after[0][2] if after else len(note.text)
    body = normal(text).strip("\n")
    new = (f"\n{body}\n" if body else "") + ("\n" if after else "")
    if not note.text[:line_end].endswith("\n"):  # the heading is the last line, unbroken
        new = "\n" + new
    elif new.startswith("\n") and note.text.startswith("\n", line_end) and line_end < end:
        line_end, new = line_end + 1, new[1:]  # (the blank line under the heading stays)
    return Edit(line_end, end, new)


def find_replace(note: NoteText, find: str, replace: str, name: str, *,
                 replace_all: bool = False) -> list[Edit]:
    """``find`` replaced by ``replace``: once, or every time with ``replace_all``."""
    wanted = normal(find)
    if not wanted:
        raise InvalidArgumentError("find is empty: give the exact text to replace")
    found: list[int] = []
    at = note.text.find(wanted)
    while at >= 0:
        found.append(at)
        at = note.text.find(wanted, at + len(wanted))
    if not found:
        loose = re.compile(r"\s+".join(re.escape(w) for w in wanted.split()), re.IGNORECASE)
        near = sorted({_line(note, m.start()) for m in loose.finditer(note.text)}) \
            if wanted.split() else []
        hint = (f"; text like it (other case or spacing) is at line "
                f"{', '.join(map(str, near[:_SHOWN]))}: copy it exactly" if near else "")
        raise InvalidArgumentError(f"find text not found in {name}{hint}; read the note's "
                                   "lines (get_file) and give text it holds")
    if len(found) > 1 and not replace_all:
        lines = ", ".join(str(_line(note, a)) for a in found[:_SHOWN])
        raise InvalidArgumentError(
            f"find text occurs {len(found)} times in {name} (at lines {lines}); add text "
            "around it so that it occurs once, or pass replace_all to replace every one")
    new = normal(replace)
    return [Edit(a, a + len(wanted), new) for a in found]


def _line(note: NoteText, pos: int) -> int:
    return note.text.count("\n", 0, pos) + 1


# ---------------------------------------------------------------- front matter


def _scalar(value: str, *, in_list: bool = False) -> str:
    """A string as YAML: plain when YAML reads it back as itself, else double-quoted."""
    probe = f"[{value}]" if in_list else value
    try:
        plain = value == value.strip() and value != "" and \
            yaml.safe_load(probe) == ([value] if in_list else value)
    except yaml.YAMLError:
        plain = False
    return value if plain and "#" not in value else json.dumps(value, ensure_ascii=False)


def _tags(tags: Sequence[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        name = str(tag).strip().lstrip("#")
        if not name or any(c.isspace() for c in name):
            raise InvalidArgumentError(f"tag {tag!r} cannot be used: a tag is one word "
                                       "(letters, digits, - _ /), without spaces")
        out.append(name)
    return out


def _entry(lines: list[str], key: str) -> tuple[int, int] | None:
    """The lines (start, end) of the top-level ``key:`` entry of front matter lines."""
    for i, line in enumerate(lines):
        if re.match(rf"{re.escape(key)}\s*:", line):
            end = i + 1
            while end < len(lines) and (lines[end][:1] in (" ", "\t", "-")
                                        or not lines[end].strip()):
                end += 1
            return i, end
    return None


def with_front_matter(content: str, title: str | None, tags: Sequence[str] | None) -> str:
    """``content`` with ``title`` set and ``tags`` added in its front matter."""
    if title is None and not tags:
        return content
    new_tags = _tags(tags or ())
    text = normal(content)
    end = front_matter_end(text)
    if end == 0:
        head = ([f"title: {_scalar(title)}"] if title is not None else []) + \
            ([f"tags: [{', '.join(_scalar(t, in_list=True) for t in new_tags)}]"]
             if new_tags else [])
        return "---\n" + "\n".join(head) + "\n---\n" + text
    block = text[:end]
    inner_start = block.index("\n") + 1
    closing = block.rstrip("\n").rfind("\n") + 1
    lines = block[inner_start:closing].splitlines()
    try:
        data = yaml.safe_load("\n".join(lines)) or {}
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        raise InvalidArgumentError("the content's front matter is not a YAML mapping; fix "
                                   "it, or leave title and tags out and write them in it")
    if new_tags:
        have = data.get("tags")
        old = re.split(r"[,\s]+", have) if isinstance(have, str) else \
            [str(t) for t in have] if isinstance(have, list) else []
        merged = [t for t in old if t.strip()]
        seen = {normalise_tag(t) for t in merged}
        merged += [t for t in new_tags if normalise_tag(t) not in seen]
        entry = f"tags: [{', '.join(_scalar(t, in_list=True) for t in merged)}]"
        span = _entry(lines, "tags")
        if span is None:
            lines.append(entry)
        else:
            lines[span[0]:span[1]] = [entry]
    if title is not None:
        span = _entry(lines, "title")
        entry = f"title: {_scalar(title)}"
        if span is None:
            lines.insert(0, entry)
        else:
            lines[span[0]:span[1]] = [entry]
    return block[:inner_start] + "".join(f"{line}\n" for line in lines) + \
        block[closing:] + text[end:]
