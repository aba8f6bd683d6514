"""Plain text: paragraphs into chunks, under the headings it is cheap to read.

``.txt``, ``.text`` and ``.log`` have no headings; a reStructuredText title (a line
underlined, perhaps overlined, with one repeated punctuation character: levels in the
order their styles first appear), an Org headline (``** Title``) and an AsciiDoc title
(``== Title``) open a section whose breadcrumb the chunks under it carry. Bytes are
decoded by the rule every text file is (``core.decode``); a binary file named ``.txt``
is skipped, saying what it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ...kinds import KIND_GLOBS, TEXT_SUFFIXES, Unit
from ..decode import Binary, Decoded, decode
from .base import Extracted, Refused, Section, Source

if TYPE_CHECKING:
    from ..packing import ChunkLimits

#: A reStructuredText adornment: one punctuation character repeated (at least 3 times).
_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:._!$%&,;<>?@\\/|])\1{2,}\s*$")
_ORG = re.compile(r"^(\*+)\s+(\S.*?)\s*$")
_ADOC = re.compile(r"^(={1,6})\s+(\S.*?)\s*$")


def decoded(source: Source, *, lines: bool = True) -> Decoded:
    """The file's text, with ``lines`` its lines as ``str.splitlines()`` counts them
    joined by ``\\n`` (line ``n`` of the file is line ``n`` of the text); a binary file
    is refused, saying what it is."""
    found = decode(source.data)
    if isinstance(found, Binary):
        # (``decode`` words it for markdown, whose reader it was written for: this file
        # has a name of its own kind)
        dot = source.name.rfind(".")
        if dot > source.name.rfind("/"):
            raise Refused(found.reason.replace("a markdown name", f"a {source.name[dot:]} name"))
        raise Refused(found.reason)
    if not lines:
        return found
    text = "\n".join(found.text.lstrip("\ufeff").splitlines())
    return Decoded(text, found.encoding, found.warning)


class PlainText:
    kind: str = "text"
    suffixes: tuple[str, ...] = TEXT_SUFFIXES
    unit: Unit = "line"
    globs: tuple[str, ...] = KIND_GLOBS["text"]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted:
        text = decoded(source)
        style = source.name[source.name.rfind("."):].lower()
        sections = list(paragraphs(text.text, _headings(text.text, style)))
        return Extracted(text=text.text, sections=sections, encoding=text.encoding,
                         warning=text.warning)


TEXT = PlainText()


def _headings(text: str, style: str) -> dict[int, tuple[int, str, int]]:
    """Heading lines: line number -> (level, title, lines the heading takes after it).
    A reStructuredText title's overline is the line before it: a key of its own, the
    title ``""`` at level 0 (a line in no chunk, as its underline)."""
    lines = text.split("\n")
    found: dict[int, tuple[int, str, int]] = {}
    if style == ".org" or style in (".adoc", ".asciidoc"):
        pattern = _ORG if style == ".org" else _ADOC
        for i, line in enumerate(lines):
            if (m := pattern.match(line)) is not None:
                found[i] = (len(m.group(1)), m.group(2), 0)
    elif style == ".rst":
        levels: list[tuple[str, bool]] = []
        i = free = 0  # (lines before ``free`` are a title's: no overline among them)
        while i + 1 < len(lines):
            title, under = lines[i].strip(), _ADORNMENT.match(lines[i + 1])
            above = _ADORNMENT.match(lines[i - 1]) if i > free else None
            over = above is not None and under is not None \
                and above.group(1) == under.group(1)
            if (title and under is not None and not _ADORNMENT.match(lines[i])
                    and len(lines[i + 1].rstrip()) >= len(title)
                    and (over or not lines[i][:1].isspace())):  # (an overlined one: inset)
                key = (under.group(1), over)
                if key not in levels:
                    levels.append(key)
                if over:
                    found[i - 1] = (0, "", 0)
                found[i] = (levels.index(key) + 1, title, 1)
                i = free = i + 2
                continue
            i += 1
    return found


def paragraphs(text: str, headings: dict[int, tuple[int, str, int]]) -> Iterator[Section]:
    """Sections of ``text``: each heading line (a heading section), and each run of
    non-blank lines between blank lines or headings, under the headings above it. The
    lines a heading takes after it, and a level-0 heading (an overline), are in none."""
    stack: list[tuple[int, str]] = []
    offset, start, skip = 0, -1, 0
    path: tuple[str, ...] = ()
    for i, line in enumerate(text.split("\n")):
        end = offset + len(line)
        heading = headings.get(i)
        if heading is not None or not line.strip() or skip:
            if start >= 0:
                yield Section(start=start, end=offset - 1, headings=path)
                start = -1
            if heading is not None and heading[0] > 0:
                level, title, skip = heading
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, title))
                path = tuple(t for _, t in stack)
                yield Section(start=offset, end=end, headings=path, heading=True)
            elif skip:
                skip -= 1  # a heading's underline: in no chunk
        elif start < 0:
            start = offset
        offset = end + 1
    if start >= 0:
        yield Section(start=start, end=len(text), headings=path)
