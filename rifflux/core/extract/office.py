"""Office documents: PowerPoint decks (``.pptx``) by slide, Word files (``.docx``) under
their headings.

Read with python-pptx and python-docx (maintained, pure Python over lxml, no office
suite needed). A deck's slide is its unit: its title (the breadcrumb), the text of its
shapes (grouped ones too), its tables (a row a line, cells between ``|``) and its
speaker notes (after ``Notes:``), with its slide number. A Word file's paragraphs come
under its headings (its ``Heading 1``-``9`` styles; ``Title`` too), tables as text, its
core properties' title and author as the file's.

Both are ZIP archives, opened only after their directory is checked: one that would
unpack to more than ``MAX_UNPACKED`` bytes or holds more than ``MAX_PARTS`` parts (a
zip bomb) is skipped, as is a file that is not a ZIP archive at all, one that is not a
deck (a document) and a damaged one (a part that does not unpack or parse), saying so.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...kinds import KIND_GLOBS, Unit
from .base import Extracted, Refused, Section, Source

if TYPE_CHECKING:
    from ..packing import ChunkLimits

#: Larger unpacked contents are not read (the archive's own directory says the size,
#: and reading stops there whatever it says).
MAX_UNPACKED = 256 * 1024 * 1024
MAX_PARTS = 20_000
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


#: What a damaged archive raises while its parts are read: a part that does not unpack
#: (zlib, a CRC or size that is not what the directory says, a part cut short) or XML
#: that does not parse (lxml's XMLSyntaxError is a SyntaxError).
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, SyntaxError)


def _damaged(what: str, exc: Exception, stream: io.BytesIO, source: Source) -> Refused:
    return Refused(f"a damaged {what}: {_said(exc, stream, source)}; it is skipped")


def _said(exc: Exception, stream: io.BytesIO, source: Source) -> str:
    """What an error says, naming the file where it names the stream it was read from
    ("file '<_io.BytesIO object at 0x...>' is not a Word file")."""
    return " ".join(str(exc).replace(str(stream), source.name).split()) \
        or type(exc).__name__


def checked_zip(source: Source, what: str) -> None:
    """Refuse ``source`` unless it is a ZIP archive of a sane size."""
    try:
        with zipfile.ZipFile(io.BytesIO(source.data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise Refused(f"not {what} (not a ZIP archive: {exc}); damaged, or another kind "
                      "of file with this name? it is skipped") from None
    unpacked = sum(p.file_size for p in parts)
    if len(parts) > MAX_PARTS or unpacked > MAX_UNPACKED:
        raise Refused(f"{len(parts):,} parts that unpack to {unpacked:,} bytes, over the "
                      f"limit of {MAX_PARTS:,} parts and {MAX_UNPACKED:,} bytes (a zip "
                      "bomb?): it is skipped")


class _Writer:
    """Builds ``Extracted.text`` and its sections, a part at a time."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.sections: list[Section] = []
        self.offset = 0
        self._gap = False

    def gap_next(self) -> None:
        """The next text added comes after a blank line (a new slide's first)."""
        self._gap = True

    def add(self, text: str, headings: tuple[str, ...], page: int | None = None, *,
            heading: bool = False, gap: bool = False) -> None:
        text = "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
        if not text.strip():
            return
        gap, self._gap = gap or self._gap, False
        if self.parts:
            sep = "\n\n" if gap else "\n"
            self.parts.append(sep)
            self.offset += len(sep)
        self.sections.append(Section(start=self.offset, end=self.offset + len(text),
                                     headings=headings, page=page, heading=heading))
        self.parts.append(text)
        self.offset += len(text)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _table_text(rows: Iterable[Iterable[Any]]) -> str:
    """A table as text: a row a line, its cells (merged ones once) between `` | ``."""
    lines = []
    for row in rows:
        seen: list[Any] = []
        cells = []
        for cell in row:
            key = getattr(cell, "_tc", cell)
            if any(key is s for s in seen):
                continue
            seen.append(key)
            cells.append(" ".join(cell.text.split()))
        if any(cells):
            lines.append(" | ".join(cells))
    return "\n".join(lines)


class Pptx:
    kind: str = "pptx"
    suffixes: tuple[str, ...] = (".pptx",)
    unit: Unit = "slide"
    globs: tuple[str, ...] = KIND_GLOBS["pptx"]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted:
        checked_zip(source, "a PowerPoint deck")
        from pptx import Presentation
        from pptx.exc import PackageNotFoundError

        stream = io.BytesIO(source.data)
        try:
            deck = Presentation(stream)
        except (PackageNotFoundError, KeyError, ValueError) as exc:
            raise Refused(f"not a PowerPoint deck python-pptx can read "
                          f"({_said(exc, stream, source)}): it is skipped") from None
        except _DAMAGED as exc:
            raise _damaged("PowerPoint deck", exc, stream, source) from None
        try:
            return _deck(deck, source, limits)
        except _DAMAGED as exc:  # (a slide's XML is parsed when it is read)
            raise _damaged("PowerPoint deck", exc, stream, source) from None


def _deck(deck: Any, source: Source, limits: ChunkLimits) -> Extracted:
    """A deck's slides, each after a blank line: its title (a heading), its shapes' text,
    its speaker notes."""
    out = _Writer()
    slides = list(deck.slides)
    read = 0
    for number, slide in enumerate(slides, start=1):
        if source.out_of_time():
            break
        read += 1
        out.gap_next()  # (a slide without a title: its first text)
        title_shape = slide.shapes.title
        title = " ".join((title_shape.text if title_shape is not None else "").split())
        crumbs = (title,) if title else ()
        out.add(title, crumbs, number, heading=True)
        for shape in _shapes(slide.shapes):
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                out.add(_table_text(r.cells for r in shape.table.rows), crumbs, number)
            elif getattr(shape, "has_text_frame", False) and shape.has_text_frame:
                out.add(shape.text_frame.text, crumbs, number)
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            if frame is not None and frame.text.strip():
                out.add(f"Notes:\n{frame.text}", crumbs, number)
    props = deck.core_properties
    warning = None if read == len(slides) else (
        f"cut after {read} of its {len(slides)} slides: reading it took over the limit "
        f"of {limits.extract_seconds:g} s a file (extract_seconds)")
    return Extracted(text=out.text, sections=out.sections, pages=len(slides),
                     title=(props.title or None), metadata=_authors(props), warning=warning)


def _shapes(shapes: Iterable[Any]) -> Iterator[Any]:
    """Every shape, a group's shapes in its place, in the deck's order."""
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None and shape.shape_type == 6:  # a group
            yield from _shapes(shape.shapes)
        else:
            yield shape


def _authors(props: Any) -> dict[str, str]:
    out = {}
    for name in ("author", "subject", "keywords"):
        value = str(getattr(props, name, "") or "").strip()
        if value:
            out[name] = value
    return out


class Docx:
    kind: str = "docx"
    suffixes: tuple[str, ...] = (".docx",)
    unit: Unit = "line"
    globs: tuple[str, ...] = KIND_GLOBS["docx"]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted:
        checked_zip(source, "a Word document")
        import docx
        from docx.opc.exceptions import PackageNotFoundError

        stream = io.BytesIO(source.data)
        try:
            document = docx.Document(stream)
        except (PackageNotFoundError, KeyError, ValueError) as exc:
            raise Refused(f"not a Word document python-docx can read "
                          f"({_said(exc, stream, source)}): it is skipped") from None
        except _DAMAGED as exc:
            raise _damaged("Word document", exc, stream, source) from None
        try:
            return _word(document)
        except _DAMAGED as exc:  # (its styles' XML is parsed when a style is read)
            raise _damaged("Word document", exc, stream, source) from None


def _word(document: Any) -> Extracted:
    """A Word document's paragraphs and tables, in order, under its headings."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    out = _Writer()
    stack: list[tuple[int, str]] = []
    title: str | None = None
    for child, tag in _blocks(document.element.body):
        crumbs = tuple(t for _, t in stack)
        if tag == "tbl":
            out.add(_table_text(r.cells for r in Table(child, document).rows), crumbs,
                    gap=True)
            continue
        paragraph = Paragraph(child, document)
        level = _heading_level(paragraph)
        text = paragraph.text
        if level is None:
            out.add(text, crumbs, gap=True)
            continue
        name = " ".join(text.split())
        if not name:
            continue
        if level == 0:
            title, level = title or name, 1
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, name))
        out.add(name, tuple(t for _, t in stack), heading=True, gap=True)
    props = document.core_properties
    return Extracted(text=out.text, sections=out.sections,
                     title=(props.title or title or None), metadata=_authors(props))


def _blocks(body: Any) -> Iterator[tuple[Any, str]]:
    """The paragraphs and tables of a document's body (their elements, tags ``p`` and
    ``tbl``) in order, those in content controls too (``w:sdt``: a cover page, a table
    of contents, a form's fields) and in custom XML (``w:customXml``)."""
    for child in body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1] if isinstance(child.tag, str) else ""
        if tag in ("p", "tbl"):
            yield child, tag
        elif tag == "sdt":
            for content in child.iterchildren():
                if content.tag.rsplit("}", 1)[-1] == "sdtContent":
                    yield from _blocks(content)
        elif tag == "customXml":
            yield from _blocks(child)


def _heading_level(paragraph: Any) -> int | None:
    """0 for the Title style, 1-9 for Heading 1-9, None for any other paragraph."""
    try:
        name = str(paragraph.style.name or "") if paragraph.style is not None else ""
    except (KeyError, ValueError, AttributeError):  # a style the document does not define
        return None
    if name.lower() == "title":
        return 0
    match = _HEADING_STYLE.match(name.strip())
    return int(match.group(1)) if match else None


PPTX = Pptx()
DOCX = Docx()
