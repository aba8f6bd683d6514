"""Sections of an extracted text -> chunks, by the chunker's rules and limits.

Prose sections are packed as markdown's blocks are (``core.packing``): consecutive
sections with the same breadcrumb and page share a chunk while it stays within
``max_chars``, an oversized one is split at paragraph, line, sentence or word
boundaries, a heading travels with what follows it, and a short chunk merges only within
its section. Code sections are split only at line boundaries (``split_code``), at a
statement's first line where one is near, and never merged: a definition is a chunk of
its own, however short. A chunk never holds text of two pages (or
slides): its ``page`` is one. Every chunk knows the lines of ``Extracted.text`` it came
from: all of them, from its first character's to its last's (``Verbatim``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import replace

from ..chunker import FileMetadata, ParsedDocument, make_chunk
from ..lines import SourceMap
from ..packing import Block, ChunkLimits, Draft, attach_headings, merge_small, pack
from .base import Extracted

#: A breadcrumb's first element, which no heading is: the page a section is on, so that
#: packing (which joins and merges along breadcrumbs) never crosses a page.
_PAGE_MARK = "\x00"
_TOKEN = re.compile(r"\S+")


class Verbatim(SourceMap):
    """The lines of pieces of an extracted text, found token by token.

    Markdown's chunks are rendered, so ``SourceMap`` finds a piece by its words, and a
    piece that ends with a line of no word ("42", "--") ends, it says, on its last word's
    line. An extracted text is not rendered: the packer only cuts it (at whitespace, and
    a token longer than a chunk into slices) and joins the cuts with whitespace, so every
    run of non-space of a piece is the text's, in order, and its lines are exactly those
    from its first character to its last."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._text = text

    def locate(self, pieces: list[str], start: int, end: int) -> list[tuple[int, int]]:
        found = [(m.start(), m.end()) for m in _TOKEN.finditer(self._text, start, end)]
        out: list[tuple[int, int]] = []
        j, k = 0, 0  # the next character to match: ``k`` into the token ``found[j]``
        for piece in pieces:
            first = last = -1
            for token in piece.split():
                x, y = j, k
                while x < len(found) and not (
                        self._text.startswith(token, found[x][0] + y)
                        and found[x][0] + y + len(token) <= found[x][1]):
                    x, y = x + 1, 0
                if x == len(found):
                    continue  # (not the text's: nothing the packer makes)
                at = found[x][0] + y
                first = at if first < 0 else first
                last = at + len(token) - 1
                j, k = (x + 1, 0) if last + 1 == found[x][1] else (x, y + len(token))
            if first < 0:  # (a piece of no token: none is made) the last one's line
                line = out[-1][1] if out else self.line(start)
                out.append((line, line))
            else:
                out.append((self.line(first), self.line(last)))
        return out


def chunked(extracted: Extracted, limits: ChunkLimits) -> ParsedDocument:
    """The chunks of ``extracted`` (its own when the extractor chunked it), with the
    file's metadata."""
    if extracted.document is not None:
        return extracted.document
    text = extracted.text
    source = Verbatim(text)
    drafts: list[Draft] = []
    prose: list[Block] = []
    pages: dict[tuple[str, ...], int | None] = {}

    def flush() -> None:
        drafts.extend(merge_small(pack(attach_headings(prose, limits), limits, source),
                                  limits))
        prose.clear()

    for section in extracted.sections:
        body = text[section.start : section.end]
        if not body.strip():
            continue
        path = (f"{_PAGE_MARK}{section.page or ''}", *section.headings)
        pages[path] = section.page
        if section.code:
            flush()
            first = source.line(section.start)
            drafts.extend(Draft(path, [piece], (first + a, first + b))
                          for piece, a, b in split_code(body, section.breaks,
                                                        limits.code_max_chars))
        else:
            prose.append(Block(path, body.strip("\n"), is_heading=section.heading,
                               src=(section.start, section.end)))
    flush()
    chunks = tuple(
        make_chunk(i, " > ".join(p for p in d.path[1:] if p), d.text, d.lines, pages[d.path])
        for i, d in enumerate(drafts))
    # (the text's lines are joined by "\n": a last empty line is one too, which
    # ``text.splitlines()`` would not count)
    return ParsedDocument(
        metadata=FileMetadata(title=extracted.title, frontmatter=dict(extracted.metadata)),
        chunks=chunks, line_count=text.count("\n") + 1 if text else 0)


def split_code(body: str, breaks: Sequence[int], cap: int) -> list[tuple[str, int, int]]:
    """Pieces of code of at most ``cap`` characters (a single longer line is a piece of its
    own: code is never cut inside a line), each with its first and last line (0-based,
    within ``body``), without blank lines at either end. A piece ends before the last
    statement (``breaks``) that still fits, else before the line that does not."""
    lines = body.split("\n")
    starts = sorted({b for b in breaks if 0 < b < len(lines)})
    pieces: list[tuple[int, int]] = []
    first, size = 0, 0
    for i, line in enumerate(lines):
        if i > first and size + len(line) + 1 > cap:
            at = bisect.bisect_right(starts, i) - 1
            cut = starts[at] if at >= 0 and starts[at] > first else i
            carried = sum(len(x) + 1 for x in lines[cut:i])
            if carried + len(line) + 1 > cap:  # the statement's lines and this one would
                cut, carried = i, 0             # not fit either: cut before this line
            pieces.append((first, cut))
            first, size = cut, carried
        size += len(line) + 1
    pieces.append((first, len(lines)))
    out: list[tuple[str, int, int]] = []
    for a, b in pieces:
        while a < b and not lines[a].strip():
            a += 1
        while b > a and not lines[b - 1].strip():
            b -= 1
        if a < b:
            out.append(("\n".join(lines[a:b]), a, b - 1))
    return out


def cut_to(extracted: Extracted, limit: int) -> Extracted:
    """``extracted`` with no text past ``limit`` characters (sections ending later are
    cut or left out), saying so in its warning; as it is when it is shorter."""
    if len(extracted.text) <= limit:
        return extracted
    kept = [s if s.end <= limit else replace(s, end=limit)
            for s in extracted.sections if s.start < limit]
    said = (f"cut after {limit:,} of its {len(extracted.text):,} characters "
            "(max_text_chars): the rest is not indexed")
    warning = f"{extracted.warning}; {said}" if extracted.warning else said
    return replace(extracted, text=extracted.text[:limit], sections=kept, warning=warning)
