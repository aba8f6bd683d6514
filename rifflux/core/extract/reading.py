"""A file's text as it is on disk now, by lines or by pages (``get_file`` with a range).

A text file's lines are its own (``core.decode.read_lines``). A file whose text is
extracted (a PDF, a deck, a Word file) is read again by its extractor: its lines are
those of the text as indexed (pages one after another), and a page (or slide) range is
the text of those pages, with the lines it spans.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ...errors import InvalidArgumentError, RiffluxError
from ...kinds import UNITS, Unit
from ..decode import read_indexed, read_lines
from . import extractor_for
from .base import Extracted, Refused, Source

#: Kinds whose text is the file's own: read by lines from disk, never extracted again.
_OWN_TEXT = frozenset({"markdown", "text", "code"})


@dataclass(frozen=True, slots=True)
class Span:
    """What was read: lines ``first``-``last`` of ``total``, and for a page range, pages
    ``pages[0]``-``pages[1]`` of ``pages[2]`` (slides for a deck: ``unit``)."""

    first: int
    last: int
    total: int
    text: str
    sha256: str
    unit: Unit = "line"
    pages: tuple[int, int, int] | None = None


def unit_of(path: str) -> Unit:
    """What a file's locations count besides lines, by its name."""
    extractor = extractor_for(path)
    return UNITS.get(extractor.kind, extractor.unit)


def read_span(path: Path, start: int | None, end: int | None, *, by_page: bool = False
              ) -> Span:
    """Lines (or with ``by_page``, pages or slides) ``start``..``end`` of the file at
    ``path``, 1-based and inclusive, clamped to the file. Raises ``InvalidArgumentError``
    for a range that cannot be read (pages of a file without any), ``RiffluxError`` when
    the file is gone or cannot be read."""
    extractor = extractor_for(path.name)
    unit = UNITS.get(extractor.kind, extractor.unit)
    if by_page and unit == "line":
        raise InvalidArgumentError(
            f"{path.name} has no pages or slides ({extractor.kind}): read it by lines, "
            "start_line and end_line")
    if extractor.kind in _OWN_TEXT and not by_page:
        first, last, total, text, sha = read_lines(path, start, end)
        return Span(first, last, total, text, sha)
    extracted, sha = _extracted(path)
    lines = extracted.text.split("\n") if extracted.text else []
    if not by_page:
        first, last = clamped(start, end, len(lines), "line", path)
        return Span(first, last, len(lines), "\n".join(lines[first - 1 : last]), sha, unit)
    first_page, last_page = clamped(start, end, extracted.pages, unit, path)
    spans = [(s.start, s.end) for s in extracted.sections
             if s.page is not None and first_page <= s.page <= last_page]
    if not spans:  # pages without text (a scan's): nothing, at the lines of what is there
        return Span(0, 0, len(lines), "", sha, unit, (first_page, last_page, extracted.pages))
    begin, finish = min(a for a, _ in spans), max(b for _, b in spans)
    text = extracted.text
    first = text.count("\n", 0, begin) + 1
    return Span(first, first + text.count("\n", begin, finish), len(lines),
                text[begin:finish], sha, unit, (first_page, last_page, extracted.pages))


def _extracted(path: Path) -> tuple[Extracted, str]:
    from ..packing import ChunkLimits

    data = read_indexed(path)
    try:
        extracted = extractor_for(path.name).extract(Source(path.name, data), ChunkLimits())
    except Refused as exc:
        raise RiffluxError(f"{path} cannot be read now: {exc}") from None
    return extracted, hashlib.sha256(data).hexdigest()


def clamped(start: int | None, end: int | None, total: int, unit: str,
            path: Path) -> tuple[int, int]:
    """``start``..``end`` (1-based, inclusive; None: the first, the last) within ``total``
    ``unit``s of ``path``: a range that is not one, or starts past the end, is refused
    saying so (a file's lines, a PDF's pages, the lines of a file's history)."""
    first = 1 if start is None else max(start, 1)
    if end is not None and end < first:
        raise InvalidArgumentError(f"{unit}s {start}-{end} are not a range: the end is 1 or "
                                   f"more and not before the start")
    if first > max(total, 1):
        raise InvalidArgumentError(f"{unit} {first} is past the end of {path.name} "
                                   f"({total} {unit}s)")
    return first, total if end is None else min(end, total)
