"""PowerPoint decks and Word documents as the indexer reads them (``core.extract.office``),
made here with python-pptx and python-docx: a deck by slide (titles as breadcrumbs, its
tables' cells and speaker notes searchable), a document under its headings; and every
one that cannot be read (a zip bomb, not a ZIP archive, another kind of document, a
damaged part) is skipped, saying why."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from rifflux.core.extract import office
from rifflux.core.packing import ChunkLimits

from ..formats import deck, extract, indexed, prepared, skipped, word, zip_bomb
from ..helpers import spans_point_at_the_text

#: Chunks as small as their sections (short sections are kept apart, not merged).
SMALL = ChunkLimits(min_chars=0)


def survey() -> bytes:
    """A deck: a title slide, a slide with a table and speaker notes, an untitled slide
    with a grouped text box."""
    from pptx import Presentation
    from pptx.util import Inches

    prs = Presentation()
    prs.core_properties.title = "Owl Survey"
    prs.core_properties.author = "Grace Hopper"
    first = prs.slides.add_slide(prs.slide_layouts[0])
    first.shapes.title.text = "Owl Survey 2026"
    first.placeholders[1].text = "Counting owls in the valley"
    second = prs.slides.add_slide(prs.slide_layouts[5])  # a title only
    second.shapes.title.text = "Counts by species"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for r, row in enumerate([("Species", "Count"), ("Barn owl", "12"), ("Tawny owl", "7")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    second.notes_slide.notes_text_frame.text = "Mention the pellets found near the barn."
    third = prs.slides.add_slide(prs.slide_layouts[6])  # blank: no title
    third.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = (
        "An untitled slide about wing spans")
    group = third.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(3), Inches(4), Inches(1)).text_frame.text = (
        "Grouped text about talons")
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def test_a_deck_is_chunked_by_slide_under_each_slides_title(tmp_path: Path) -> None:
    result, doc = indexed(tmp_path, "survey.pptx", survey(), SMALL)
    assert result.kind == "pptx" and result.warning is None
    assert [(c.heading_path, c.page) for c in doc.chunks] == [
        ("Owl Survey 2026", 1), ("Counts by species", 2), ("", 3)]
    assert doc.metadata.title == "Owl Survey"
    assert doc.metadata.frontmatter == {"author": "Grace Hopper"}


def test_a_slides_table_cells_and_speaker_notes_are_in_its_chunk(tmp_path: Path) -> None:
    _, doc = indexed(tmp_path, "survey.pptx", survey(), SMALL)
    counts = doc.chunks[1].content
    assert "Species | Count\nBarn owl | 12\nTawny owl | 7" in counts
    assert "Notes:\nMention the pellets found near the barn." in counts
    assert doc.chunks[2].content == ("An untitled slide about wing spans\n\n"
                                     "Grouped text about talons")


def test_a_decks_slides_are_apart_in_its_text_and_chunks_point_at_them(
    tmp_path: Path
) -> None:
    text = extract("survey.pptx", survey()).text
    _, doc = indexed(tmp_path, "survey.pptx", survey(), SMALL)
    spans_point_at_the_text(text, doc.chunks)
    lines = text.split("\n")
    # each slide after a blank line, the untitled one too
    starts = [c.line_start for c in doc.chunks]
    assert all(lines[s - 2] == "" for s in starts[1:]), lines
    assert lines[doc.chunks[2].line_start - 1] == "An untitled slide about wing spans"


def test_a_deck_read_past_its_time_is_cut_saying_how_many_slides(tmp_path: Path) -> None:
    data = deck([(f"Slide {i}", f"Owls, part {i}", "") for i in range(5)])
    result, doc = indexed(tmp_path, "long.pptx", data, ChunkLimits(extract_seconds=-1))
    assert doc.chunks == ()
    assert result.warning == ("cut after 0 of its 5 slides: reading it took over the limit "
                              "of -1 s a file (extract_seconds)")


FOSSILS = [
    ("Title", "Fossil Hunting Handbook"),
    ("Normal", "A preface before any heading."),
    ("Heading 1", "Cliffs"),
    ("Normal", "Lyme Regis cliffs shed ammonites after storms."),
    ("Heading 2", "Tools"),
    ("Normal", "Bring a hammer and chisel."),
    ("Heading 1", "Beaches"),
    ("Normal", "Charmouth beach is good for belemnites."),
]


def fossils() -> bytes:
    """A Word document with a title, headings and a table under the second heading."""
    import docx

    document = docx.Document(io.BytesIO(word(FOSSILS, author="Mary Anning")))
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("Tool", "Use"), ("Brush", "Cleaning ichthyosaur bones")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    # the table after "Bring a hammer and chisel.", under Cliffs > Tools
    body = document.element.body
    tools = [p for p in body.iterchildren() if "Bring a hammer" in "".join(p.itertext())][0]
    tools.addnext(table._tbl)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def test_a_word_document_is_chunked_under_its_headings(tmp_path: Path) -> None:
    result, doc = indexed(tmp_path, "fossils.docx", fossils(), SMALL)
    assert result.kind == "docx" and result.warning is None
    assert [c.heading_path for c in doc.chunks] == [
        "Fossil Hunting Handbook", "Cliffs", "Cliffs > Tools", "Beaches"]
    assert doc.chunks[2].content == ("Tools\n\nBring a hammer and chisel.\n\n"
                                     "Tool | Use\nBrush | Cleaning ichthyosaur bones")
    assert doc.metadata.title == "Fossil Hunting Handbook"  # (the Title style's text)
    assert doc.metadata.frontmatter == {"author": "Mary Anning"}
    spans_point_at_the_text(extract("fossils.docx", fossils()).text, doc.chunks)
    assert all(c.page is None for c in doc.chunks)


def test_a_word_documents_content_controls_are_read_in_their_place(tmp_path: Path) -> None:
    import docx
    from docx.oxml import parse_xml
    from docx.oxml.ns import nsdecls

    document = docx.Document(io.BytesIO(word(FOSSILS)))
    control = parse_xml(
        f"<w:sdt {nsdecls('w')}><w:sdtPr/><w:sdtContent>"
        "<w:p><w:r><w:t>Inside a content control: coprolites.</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt>")
    beaches = [p for p in document.element.body.iterchildren()
               if "Charmouth" in "".join(p.itertext())][0]
    beaches.addnext(control)  # (a cover page or a table of contents is one of these)
    buf = io.BytesIO()
    document.save(buf)
    _, doc = indexed(tmp_path, "controls.docx", buf.getvalue(), SMALL)
    assert doc.chunks[-1].heading_path == "Beaches"
    assert doc.chunks[-1].content.endswith(
        "Charmouth beach is good for belemnites.\n\nInside a content control: coprolites.")


# ---------------------------------------------------------------- what is not read


def test_a_deck_whose_directory_says_it_unpacks_past_the_limit_is_skipped(
    tmp_path: Path
) -> None:
    data = deck([("Owls", "words", "")])
    mib = office.MAX_UNPACKED // (1 << 20) + 1
    bomb = zip_bomb(data, "ppt/media/zeros.bin", mib)
    assert len(bomb) < len(data) + 2 * mib * 1024  # a kilobyte a MiB
    with zipfile.ZipFile(io.BytesIO(bomb)) as archive:
        parts = archive.infolist()
    unpacked = sum(p.file_size for p in parts)
    assert unpacked > office.MAX_UNPACKED
    reason = skipped(prepared(tmp_path, "bomb.pptx", bomb))
    assert reason == (f"{len(parts):,} parts that unpack to {unpacked:,} bytes, over the "
                      f"limit of {office.MAX_PARTS:,} parts and {office.MAX_UNPACKED:,} "
                      "bytes (a zip bomb?): it is skipped")
    # a real one: the same deck, rebuilt the same way with a part of 1 MiB of zeros, is
    # read (python-pptx unpacks every part, checking its CRC and size)
    assert indexed(tmp_path, "deck.pptx", zip_bomb(data, "ppt/media/z.bin", 1))[1].chunks


@pytest.mark.parametrize("name", ["bomb.pptx", "bomb.docx"])
def test_an_office_file_over_the_unpacked_limit_is_skipped_before_it_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(office, "MAX_UNPACKED", 2_000_000)
    data = deck([("Owls", "words", "")]) if name.endswith("pptx") else word(FOSSILS)
    bomb = zip_bomb(data, "extra/zeros.bin", 2)
    reason = skipped(prepared(tmp_path, name, bomb))
    assert "over the limit" in reason and "2,000,000 bytes (a zip bomb?)" in reason
    # the same file without the extra part is read
    assert indexed(tmp_path, "ok-" + name, data)[1].chunks


def test_an_office_file_of_too_many_parts_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(office, "MAX_PARTS", 5)
    reason = skipped(prepared(tmp_path, "many.docx", word(FOSSILS)))
    assert "parts that unpack to" in reason and "over the limit of 5 parts" in reason


def test_a_docx_that_is_not_a_zip_archive_is_skipped_saying_so(tmp_path: Path) -> None:
    reason = skipped(prepared(tmp_path, "notes.docx", b"Plain words, saved as .docx."))
    assert reason == ("not a Word document (not a ZIP archive: File is not a zip file); "
                      "damaged, or another kind of file with this name? it is skipped")


def test_a_deck_named_docx_is_skipped_naming_the_file(tmp_path: Path) -> None:
    reason = skipped(prepared(tmp_path, "slides.docx", deck([("Owls", "words", "")])))
    assert reason.startswith("not a Word document python-docx can read (file 'slides.docx' "
                             "is not a Word file, content type is ")
    assert "presentationml" in reason and "BytesIO" not in reason


def test_an_office_file_with_a_damaged_part_is_skipped_saying_it_is_damaged(
    tmp_path: Path
) -> None:
    data = word(FOSSILS)
    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as damaged:
        for item in source.infolist():
            part = source.read(item)
            damaged.writestr(item, part[: len(part) // 2] if item.filename ==
                             "word/document.xml" else part)
    reason = skipped(prepared(tmp_path, "cut.docx", out.getvalue()))
    assert reason.startswith("a damaged Word document: ") and reason.endswith("it is skipped")
    # a part that does not unpack: its compressed bytes overwritten
    raw = bytearray(data)
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + 40 : start + 80] = bytes(40)
    reason = skipped(prepared(tmp_path, "flipped.docx", bytes(raw)))
    assert reason.startswith("a damaged Word document: ") and reason.endswith("it is skipped")
