"""Sizing and packing: rendered blocks -> chunk drafts within :class:`ChunkLimits`.

Oversized blocks are split (code at line boundaries, other text at paragraph, line,
sentence or word boundaries), headings travel with the block after them, blocks of
one section are packed together, and drafts under ``min_chars`` are merged into a
neighbour they fit with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lines import SourceMap

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkLimits:
    max_chars: int = 1000
    min_chars: int = 200
    code_max_chars: int = 3000
    #: Larger files are not read (they are skipped with a warning).
    max_file_bytes: int = 20 * 1024 * 1024
    #: A new folder nobody named (the working directory) with more candidate files is
    #: refused unless asked for.
    max_root_files: int = 50_000
    #: Reading one file that is not markdown (a PDF's pages, a deck's slides) stops after
    #: this many seconds: what was read is indexed, and the file says it was cut.
    extract_seconds: float = 60.0
    #: At most this many characters of text are taken from one such file (the rest is
    #: cut, and the file says so): about 2,500 pages of dense text.
    max_text_chars: int = 8_000_000


@dataclass(frozen=True, slots=True)
class Block:
    """One rendered block of a section: its heading path, its text, and the span of the
    source body it was rendered from (offsets)."""

    path: tuple[str, ...]
    text: str
    is_code: bool = False
    is_heading: bool = False
    src: tuple[int, int] = (0, 0)


@dataclass(slots=True)
class Draft:
    """A chunk being built: the parts of one section, joined by blank lines, and the
    source lines they came from."""

    path: tuple[str, ...]
    parts: list[str]
    lines: tuple[int, int]
    size: int = 0

    def __post_init__(self) -> None:
        self.size = sum(len(p) for p in self.parts) + 2 * max(0, len(self.parts) - 1)

    def add(self, parts: list[str], lines: tuple[int, int]) -> None:
        for part in parts:
            self.size += len(part) + (2 if self.parts else 0)
            self.parts.append(part)
        self.lines = (min(self.lines[0], lines[0]), max(self.lines[1], lines[1]))

    @property
    def text(self) -> str:
        return "\n\n".join(self.parts)


def _split_oversized(text: str, is_code: bool, limits: ChunkLimits) -> list[str]:
    if is_code:
        if len(text) <= limits.code_max_chars:
            return [text]
        return _split_code(text, limits.code_max_chars)
    if len(text) <= limits.max_chars:
        return [text]
    return _split_text(text, limits.max_chars)


def _split_code(fenced: str, cap: int) -> list[str]:
    lines = fenced.split("\n")
    opener, body = lines[0], lines[1:-1]
    # The opener is repeated in every piece: a huge info string (a language tag, not
    # code) is cut so that it leaves most of each piece to the code.
    opener = opener[: max(3, cap // 4)]
    budget = max(1, cap - len(opener) - 5)
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in body:
        for part in _hard_wrap(line, budget):
            if current and size + len(part) + 1 > budget:
                pieces.append("\n".join([opener, *current, "```"]))
                current, size = [], 0
            current.append(part)
            size += len(part) + 1
    if current or not pieces:
        pieces.append("\n".join([opener, *current, "```"]))
    return pieces


def _hard_wrap(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    return [text[i : i + width] for i in range(0, len(text), width)]


def _atoms(text: str, cap: int) -> list[tuple[str, str]]:
    """(piece, separator before it): lines, and where a line is too long, its sentences,
    words, and at worst fixed-width slices. A fenced code block inside the text (one in a
    list item) is one piece when it fits, so that it is not split between chunks."""
    out: list[tuple[str, str]] = []
    line_sep = "\n"
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            line_sep = "\n\n"  # a blank line: keep the paragraph break
            i += 1
            continue
        end = _fence_end(lines, i)
        if end is not None and len(block := "\n".join(lines[i:end])) <= cap:
            out.append((block, line_sep))
            line_sep, i = "\n", end
            continue
        if len(line) <= cap:
            out.append((line, line_sep))
        else:
            first = True
            for sentence in _SENTENCE_END.split(line):
                pieces = [sentence] if len(sentence) <= cap else sentence.split()
                for piece in pieces:
                    for part in _hard_wrap(piece, cap):
                        out.append((part, line_sep if first else " "))
                        first = False
        line_sep = "\n"
        i += 1
    return out


def _fence_end(lines: list[str], i: int) -> int | None:
    """After the closing fence of a code block whose opening fence is ``lines[i]``."""
    opened = _FENCE.match(lines[i])
    if opened is None:
        return None
    marker = opened.group(1)
    for j in range(i + 1, len(lines)):
        if lines[j].strip().startswith(marker) and not lines[j].strip().strip(marker[0]):
            return j + 1
    return None


def _split_text(text: str, cap: int) -> list[str]:
    """Pack lines (or, inside an overlong line, sentences and words) into pieces of at
    most ``cap`` characters, so nothing is cut mid-word unless a word is itself huge."""
    out: list[str] = []
    current = ""
    for atom, sep in _atoms(text, cap):
        if current and len(current) + len(sep) + len(atom) > cap:
            out.append(current)
            current = atom
        else:
            current = f"{current}{sep}{atom}" if current else atom
    if current:
        out.append(current)
    return out


def attach_headings(blocks: list[Block], limits: ChunkLimits) -> list[Block]:
    """A heading travels with the block after it, so no chunk is a bare heading line
    when its section has a body (an oversized block is then split after the heading)."""
    out: list[Block] = []
    i = 0
    while i < len(blocks):
        current = blocks[i]
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if (
            current.is_heading
            and nxt is not None
            and not nxt.is_heading
            and nxt.path == current.path
        ):
            joined = f"{current.text}\n\n{nxt.text}"
            src = (current.src[0], nxt.src[1])
            if not nxt.is_code:
                out.append(Block(current.path, joined, src=src))
                i += 2
                continue
            if len(joined) <= limits.code_max_chars:
                # kept whole, like the code block itself
                out.append(Block(current.path, joined, is_code=True, src=src))
                i += 2
                continue
        out.append(current)
        i += 1
    return out


def pack(blocks: list[Block], limits: ChunkLimits, source: SourceMap) -> list[Draft]:
    """Consecutive blocks of one section share a draft while it stays within ``max_chars``."""
    drafts: list[Draft] = []
    for block in blocks:
        pieces = _split_oversized(block.text, block.is_code, limits)
        located = pieces
        if block.is_code and len(pieces) > 1:
            # every piece of a split code block repeats its fence line: only the first
            # one's is in the source at that place
            located = [pieces[0], *(p.partition("\n")[2] for p in pieces[1:])]
        for piece, lines in zip(pieces, source.locate(located, *block.src), strict=True):
            last = drafts[-1] if drafts else None
            if (
                last is not None
                and last.path == block.path
                and last.size + 2 + len(piece) <= limits.max_chars
            ):
                last.add([piece], lines)
            else:
                drafts.append(Draft(block.path, [piece], lines))
    return drafts


def merge_small(drafts: list[Draft], limits: ChunkLimits) -> list[Draft]:
    """Merge a draft under ``min_chars`` into a neighbour, but never across sections: only
    with the rest of its own section, or (a section's short opening, a bare heading) with
    the subsection right after it, whose breadcrumb the merged chunk keeps. A short
    section of its own stays a chunk of its own."""
    out: list[Draft] = []
    carry: Draft | None = None
    for draft in drafts:
        if carry is not None:
            if (draft.path[: len(carry.path)] == carry.path
                    and carry.size + 2 + draft.size <= limits.max_chars):
                merged = Draft(draft.path, carry.parts + draft.parts, carry.lines)
                merged.lines = (carry.lines[0], max(carry.lines[1], draft.lines[1]))
                draft = merged
            else:
                out.append(carry)
            carry = None
        if draft.size < limits.min_chars:
            carry = draft
        else:
            out.append(draft)
    if carry is not None:
        last = out[-1] if out else None
        if (last is not None and last.path == carry.path
                and last.size + 2 + carry.size <= limits.max_chars):
            last.add(carry.parts, carry.lines)
        else:
            out.append(carry)
    return out
