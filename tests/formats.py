"""Files of the kinds Rifflux reads besides markdown, made by their own libraries for the
tests (PDFs with reportlab, a long one copied page by page with pypdfium2, decks with
python-pptx, Word documents with python-docx, a zip bomb with zipfile), and what the
indexer makes of a file (``prepared``) or an extractor alone (``extract``).

Test modules import from here and from ``helpers``, never from each other.
"""

from __future__ import annotations

import io
import struct
import time
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from rifflux.core.chunker import ParsedDocument
from rifflux.core.document import Prepared, Skipped, Unreadable, prepare_file
from rifflux.core.extract import Extracted, Source, extractor_for
from rifflux.core.extract.sections import chunked
from rifflux.core.packing import ChunkLimits

# ---------------------------------------------------------------- what is made of a file


def extract(name: str, data: bytes, limits: ChunkLimits | None = None) -> Extracted:
    """What ``name``'s extractor reads in ``data`` (``Refused`` raised as it is)."""
    limits = limits or ChunkLimits()
    source = Source(name, data, time.monotonic() + limits.extract_seconds)
    return extractor_for(name).extract(source, limits)


def chunks_of(name: str, data: bytes, limits: ChunkLimits | None = None) -> ParsedDocument:
    """The chunks ``prepare_file`` would make of ``data`` named ``name``."""
    limits = limits or ChunkLimits()
    return chunked(extract(name, data, limits), limits)


def prepared(folder: Path, name: str, data: bytes,
             limits: ChunkLimits | None = None) -> Prepared | Unreadable | Skipped:
    """``data`` written to ``folder/name`` and prepared as the indexer prepares a file."""
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    result = prepare_file(folder, name, None, False, limits or ChunkLimits())
    assert result is not None
    return result


def indexed(folder: Path, name: str, data: bytes,
            limits: ChunkLimits | None = None) -> tuple[Prepared, ParsedDocument]:
    """``prepared``, for a file that must be indexed: what was prepared, and its
    document (failing the test for a file skipped or in error)."""
    result = prepared(folder, name, data, limits)
    assert isinstance(result, Prepared) and result.document is not None, result
    return result, result.document


def skipped(result: Prepared | Unreadable | Skipped) -> str:
    """Why a file was skipped (failing the test for one indexed, or in error)."""
    assert isinstance(result, Skipped), result
    return result.reason


# ---------------------------------------------------------------- PDF


def pdf(pages: Sequence[Sequence[str]], *, outline: Mapping[str, int] | None = None,
        entries: Sequence[tuple[int, str]] = (), title: str | None = None,
        author: str | None = None, subject: str | None = None,
        password: str | None = None, compress: bool = True) -> bytes:
    """A PDF of ``pages``, each its lines from the top; a line named in ``outline`` (its
    level, 0 at the top) is a bookmark there, and each of ``entries`` (page, title) one
    at the top of its page (1-based), its title written nowhere. ``password``: encrypted
    for that user password (RC4, as reportlab writes it)."""
    from reportlab.lib.pdfencrypt import StandardEncryption
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    encrypt = StandardEncryption(password, ownerPassword=password) if password else None
    c = canvas.Canvas(buf, encrypt=encrypt, pageCompression=int(compress))
    c.setTitle(title or "")
    c.setAuthor(author or "")
    c.setSubject(subject or "")
    marks = dict(outline or {})
    for number, lines in enumerate(pages, 1):
        for at, (page, heading) in enumerate(entries):
            if page == number:
                c.bookmarkPage(f"e{at}")
                c.addOutlineEntry(heading, f"e{at}", level=0)
        y = 800.0
        for i, line in enumerate(lines):
            if line in marks:
                key = f"p{number}l{i}"
                c.bookmarkHorizontal(key, 0, y + 14)
                c.addOutlineEntry(line, key, level=marks[line])
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def scanned_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` pages with shapes and an image on them and no text: a scan."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    png = _png()
    buf = io.BytesIO()
    c = canvas.Canvas(buf)
    for i in range(pages):
        c.rect(72, 500, 300, 200, fill=1)
        c.circle(300, 300, 40 + i, fill=0)
        c.drawImage(ImageReader(io.BytesIO(png)), 100, 100, width=120, height=120)
        c.showPage()
    c.save()
    return buf.getvalue()


def _png() -> bytes:
    """A small greyscale PNG (a gradient), written with the standard library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    size = 16
    rows = b"".join(b"\x00" + bytes((x * 16 + y) % 256 for x in range(size))
                    for y in range(size))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 0,
                                                                0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = _png()


def pdf_of_pages(data: bytes, copies: int) -> bytes:
    """A PDF of ``copies`` copies of every page of ``data`` (pypdfium2: thousands of
    pages in a fraction of a second)."""
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(data)
    out = pdfium.PdfDocument.new()
    try:
        for _ in range(copies):
            out.import_pages(source)
        buf = io.BytesIO()
        out.save(buf)
        return buf.getvalue()
    finally:
        out.close()
        source.close()


# ---------------------------------------------------------------- Office


def deck(slides: Sequence[tuple[str, str, str]], *, title: str = "",
         author: str = "") -> bytes:
    """A PowerPoint deck of (title, body text, speaker notes) slides (python-pptx)."""
    from pptx import Presentation

    prs = Presentation()
    prs.core_properties.title = title
    prs.core_properties.author = author
    for heading, body, notes in slides:
        slide = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
        slide.shapes.title.text = heading
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def word(paragraphs: Sequence[tuple[str, str]], *, author: str = "") -> bytes:
    """A Word document of (style, text) paragraphs (python-docx): ``Title``,
    ``Heading 1``, ..., ``Normal``."""
    import docx

    document = docx.Document()
    document.core_properties.author = author
    for style, text in paragraphs:
        document.add_paragraph(text, style=style)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def zip_bomb(office: bytes, part: str, mib: int) -> bytes:
    """``office`` (a deck or document) with one more part of ``mib`` MiB of zeros: a
    kilobyte a MiB on disk, its directory saying the true size. Written by hand: zipfile
    takes seconds to deflate 256 MiB, and each MiB of zeros deflates to the same bytes
    after a full flush."""
    members: list[tuple[str, bytes, int, int]] = []  # name, deflated, size, CRC-32
    with zipfile.ZipFile(io.BytesIO(office)) as archive:
        for info in archive.infolist():
            raw = archive.read(info)
            squeeze = zlib.compressobj(6, zlib.DEFLATED, -15)
            members.append((info.filename, squeeze.compress(raw) + squeeze.flush(), len(raw),
                            zlib.crc32(raw)))
    zeros = bytes(1 << 20)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    once = squeeze.compress(zeros) + squeeze.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    members.append((part, once * mib + squeeze.flush(), mib << 20, crc))
    out = io.BytesIO()
    directory: list[bytes] = []
    for name, data, size, crc in members:
        offset, encoded = out.tell(), name.encode()
        # local header: version 2.0, deflated, 1980-01-01; then the central directory's
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data),
                              size, len(encoded), 0) + encoded + data)
        directory.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21,
                                     crc, len(data), size, len(encoded), 0, 0, 0, 0, 0,
                                     offset) + encoded)
    start = out.tell()
    out.write(b"".join(directory))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(directory), len(directory),
                          out.tell() - start, start, 0))
    return out.getvalue()
