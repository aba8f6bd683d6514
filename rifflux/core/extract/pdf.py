"""PDF: each page's text in reading order with its page number, under the outline.

Read with pypdfium2 (PDFium, the engine of Chrome's viewer): chosen by measurement
beside pypdf and pdfplumber on real PDFs (the text as ``pdftotext`` reads it, pages a
second, memory: ``benchmarks/_formats.py``). The text is PDFium's in its reading order,
its lines as the page breaks them; the pages follow one another in ``Extracted.text``,
a blank line between two. The document's outline (bookmarks) is its headings: an entry
opens a section at its title's line on its page (at the page's top when the title is
not found there), and the pages after it carry its breadcrumb. The ``Title`` and
``Author`` of the document's information are the file's title and its metadata.

What it cannot read costs the file alone: an encrypted PDF or one PDFium cannot open
(damaged, truncated) is skipped saying so; a page PDFium cannot load costs that page
alone (the others are indexed, the file says which); a PDF with no text layer (a scan) is
indexed with no text and says so (a warning); reading stops at the time limit per file
(``ChunkLimits.extract_seconds``), the pages read kept and the file said to be cut.
PDFium is not thread-safe: one PDF is read at a time in a process (parse workers are
processes of their own).
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Any

from ...kinds import KIND_GLOBS, Unit
from .base import Extracted, Refused, Section, Source

if TYPE_CHECKING:
    from ..packing import ChunkLimits

_LOCK = threading.Lock()
#: Control characters but the line breaks ``splitlines`` reads (tab is kept as space).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")


class Pdf:
    kind: str = "pdf"
    suffixes: tuple[str, ...] = (".pdf",)
    unit: Unit = "page"
    globs: tuple[str, ...] = KIND_GLOBS["pdf"]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted:
        with _LOCK:
            return _read(source, limits)


PDF = Pdf()


def _read(source: Source, limits: ChunkLimits) -> Extracted:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(source.data)
    except pdfium.PdfiumError as exc:
        raise Refused(_why_not(str(exc))) from None
    try:
        info = _info(pdf)
        count = len(pdf)
        outline = _outline(pdf, count)
        texts: list[str] = []
        damaged: list[int] = []  # pages PDFium cannot load: no text, the others kept
        for index in range(count):
            if source.out_of_time():
                break
            try:
                texts.append(page_text(pdf, index))
            except pdfium.PdfiumError:
                damaged.append(index + 1)
                texts.append("")
    finally:
        pdf.close()
    parts: list[str] = []
    sections: list[Section] = []
    offset = 0
    path: tuple[str, ...] = ()
    for number, page in enumerate(texts, start=1):
        if parts:
            offset += 2  # the blank line between two pages
        cuts = [(0, path)]
        for at, heading_path in _places(page, outline.get(number, [])):
            if at == cuts[-1][0]:
                cuts[-1] = (at, heading_path)
            else:
                cuts.append((at, heading_path))
        for (at, crumbs), (until, _) in zip(cuts, [*cuts[1:], (len(page), ())], strict=True):
            if page[at:until].strip():
                sections.append(Section(start=offset + at, end=offset + until,
                                        headings=crumbs, page=number))
        path = cuts[-1][1]
        parts.append(page)
        offset += len(page)
    text = "\n\n".join(parts)
    said: list[str] = []
    if damaged:
        said.append(f"{_listed(damaged)} of its {count} could not be read (damaged?): "
                    f"{'its' if len(damaged) == 1 else 'their'} text is not indexed")
    if len(texts) < count:
        said.append(f"cut after {len(texts)} of its {count} pages: reading it took over "
                    f"the limit of {limits.extract_seconds:g} s a file (extract_seconds)")
    elif count > len(damaged) and not text.strip():
        said.append("no text layer (a scan, or pages of images): indexed with no text; "
                    "OCR it (ocrmypdf) to make its words searchable")
    warning = "; ".join(said) or None
    return Extracted(text=text, sections=sections, pages=count, title=info.pop("title", None),
                     metadata=info, warning=warning)


def page_text(pdf: Any, index: int) -> str:
    """One page's text in reading order, its lines joined by ``\\n``, without the
    blank space at its ends. A word PDFium found hyphenated at a line's end it gives
    whole on the first line with a mark where the hyphen was (``ap\\x02ply``): the mark
    is dropped, so the word is indexed and found whole (``apply``, as ``pdftotext``
    reads it), not as two pieces. Other control characters (a font that maps its glyphs
    to none gives them) are not text: they are dropped too, line breaks aside."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            raw = textpage.get_text_bounded()
        finally:
            textpage.close()
    finally:
        page.close()
    raw = _CONTROL.sub("", raw.replace("\x02", "").replace("\ufffe", ""))
    return "\n".join(line.rstrip() for line in raw.splitlines()).strip("\n")


def _info(pdf: Any) -> dict[str, str]:
    """The document's title and author (and subject, keywords) where it gives them."""
    out: dict[str, str] = {}
    try:
        meta = pdf.get_metadata_dict(skip_empty=True)
    except Exception:  # a damaged information dictionary is no reason to lose the text
        return out
    for key in ("Title", "Author", "Subject", "Keywords"):
        value = str(meta.get(key, "")).strip()
        if value:
            out[key.lower()] = value
    return out


def _outline(pdf: Any, count: int) -> dict[int, list[tuple[str, tuple[str, ...]]]]:
    """Each page's outline entries (1-based page -> (title, breadcrumb)), in order."""
    out: dict[int, list[tuple[str, tuple[str, ...]]]] = {}
    stack: list[str] = []
    try:
        for item in pdf.get_toc(max_depth=8):
            title = " ".join(str(item.get_title() or "").split())
            del stack[item.level:]
            stack.append(title)
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            if title and index is not None and 0 <= index < count:
                out.setdefault(index + 1, []).append((title, tuple(stack)))
    except Exception:  # a broken outline (a cycle, bad destinations): pages without one
        return out
    return out


def _places(page: str, entries: list[tuple[str, tuple[str, ...]]]
            ) -> list[tuple[int, tuple[str, ...]]]:
    """Where each outline entry of a page opens: the start of the first line at or after
    the previous one's that begins with its title (folded), else that same place."""
    folded = page.casefold()
    out: list[tuple[int, tuple[str, ...]]] = []
    at = 0
    for title, crumbs in entries:
        found = _line_starting(folded, title.casefold(), at)
        at = found if found >= 0 else at
        out.append((at, crumbs))
    return out


def _line_starting(folded: str, title: str, after: int) -> int:
    probe = " ".join(title.split()[:6])
    pos = folded.find(probe, after)
    while pos >= 0:
        if pos == 0 or folded[pos - 1] == "\n":
            return pos
        pos = folded.find(probe, pos + 1)
    return -1


def _listed(pages: list[int]) -> str:
    """"page 3", "pages 3, 7 and 9", "pages 1, 2, ... 10 and 40 more"."""
    if len(pages) == 1:
        return f"page {pages[0]}"
    if len(pages) > 10:
        return f"pages {', '.join(map(str, pages[:10]))} and {len(pages) - 10} more"
    return f"pages {', '.join(map(str, pages[:-1]))} and {pages[-1]}"


def _why_not(error: str) -> str:
    if "password" in error.lower():
        return ("an encrypted PDF (it needs a password to be read): it is skipped; save a "
                "copy without the password (qpdf --decrypt) to index it")
    return (f"not a PDF PDFium can read, damaged or truncated? "
            f"({error.strip().rstrip('.')}): it is skipped")
