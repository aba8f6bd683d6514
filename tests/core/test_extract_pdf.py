"""PDFs as the indexer reads them (``core.extract.pdf``), made here with reportlab and
pypdfium2: by page under the outline, with the document's title and author; and every
PDF that cannot be read whole (a scan, encrypted, truncated, a damaged page, one too long
to read in the time a file has, one with too much text) costs itself alone and says
why."""

from __future__ import annotations

import re
import time
from pathlib import Path

from rifflux.core.packing import ChunkLimits

from ..formats import extract, indexed, pdf, pdf_of_pages, prepared, scanned_pdf, skipped
from ..helpers import spans_point_at_the_text

BARN = ["The barn owl has a heart shaped face that funnels sound to its ears.",
        "It screeches instead of hooting, and nests in barns and church towers.",
        "Farmers welcome it because a pair eats thousands of rodents a year."]
DIET = ["Barn owls eat voles and shrews, swallowed whole.",
        "The bones and fur come back up as pellets."]
PAGES = [
    ["Introduction", "Owls are nocturnal birds of prey.", "They hunt at night in silence."],
    ["Barn Owl", *BARN, "Diet", *DIET],
    ["Voles are small rodents; a barn owl hunts them over meadows at dusk."],
    ["Snowy Owl", "Snowy owls live in the arctic tundra and hunt lemmings by day."],
]
OUTLINE = {"Introduction": 0, "Barn Owl": 0, "Diet": 1, "Snowy Owl": 0}


def owls() -> bytes:
    return pdf(PAGES, outline=OUTLINE, title="Field Guide to Owls", author="Ada Lovelace",
               subject="Birds of prey")


def test_a_pdf_is_chunked_by_page_under_its_outline(tmp_path: Path) -> None:
    result, doc = indexed(tmp_path, "owls.pdf", owls())
    assert result.kind == "pdf" and result.warning is None
    assert [(c.heading_path, c.page) for c in doc.chunks] == [
        ("Introduction", 1),
        ("Barn Owl", 2),
        ("Barn Owl > Diet", 2),  # opened at its title's line, halfway down page 2
        ("Barn Owl > Diet", 3),  # a page with no entry of its own: the one before's
        ("Snowy Owl", 4),
    ]
    by_page = {c.page: c.content for c in doc.chunks if c.heading_path != "Barn Owl"}
    assert "heart shaped face" in doc.chunks[1].content and "Diet" not in doc.chunks[1].content
    assert by_page[2].startswith("Diet") and "pellets" in by_page[2]
    assert "Voles are small rodents" in by_page[3] and "lemmings" in by_page[4]


def test_a_pdfs_title_and_author_are_the_files(tmp_path: Path) -> None:
    _, doc = indexed(tmp_path, "owls.pdf", owls())
    assert doc.metadata.title == "Field Guide to Owls"
    assert doc.metadata.frontmatter == {"author": "Ada Lovelace", "subject": "Birds of prey"}
    _, untitled = indexed(tmp_path, "plain.pdf", pdf([["Just words on a page."]]))
    assert untitled.metadata.title is None and untitled.metadata.frontmatter == {}


def test_a_pdf_chunks_lines_point_into_its_extracted_text(tmp_path: Path) -> None:
    text = extract("owls.pdf", owls()).text
    _, doc = indexed(tmp_path, "owls.pdf", owls())
    lines = text.split("\n")
    # the pages, one after another, a blank line between two
    assert lines == [*PAGES[0], "", *PAGES[1], "", *PAGES[2], "", *PAGES[3]]
    spans_point_at_the_text(text, doc.chunks)
    for chunk in doc.chunks:
        assert chunk.content.split("\n")[0] == lines[chunk.line_start - 1]
        assert chunk.content.split("\n")[-1] == lines[chunk.line_end - 1]
    assert doc.line_count == len(lines)
    snowy = doc.chunks[-1]
    assert (snowy.line_start, snowy.line_end) == (len(lines) - 1, len(lines))


def test_an_outline_entry_whose_title_is_not_on_its_page_opens_at_the_page_top(
    tmp_path: Path
) -> None:
    data = pdf([["Some words on the first page."], ["A running header", "Words of page 2."]],
               entries=[(1, "Preface"), (2, "Appendix")])
    _, doc = indexed(tmp_path, "a.pdf", data)
    assert [(c.heading_path, c.page, c.content) for c in doc.chunks] == [
        ("Preface", 1, "Some words on the first page."),
        ("Appendix", 2, "A running header\nWords of page 2.")]


def test_a_scanned_pdf_is_indexed_with_no_chunks_saying_it_has_no_text_layer(
    tmp_path: Path
) -> None:
    result, doc = indexed(tmp_path, "scan.pdf", scanned_pdf(3))
    assert doc.chunks == ()
    assert result.warning is not None
    assert "no text layer" in result.warning and "OCR" in result.warning


def test_an_encrypted_pdf_is_skipped_saying_it_needs_a_password(tmp_path: Path) -> None:
    data = pdf([["Secret plans for the owl sanctuary."]], password="hoot")
    assert b"/Encrypt" in data
    reason = skipped(prepared(tmp_path, "secret.pdf", data))
    assert "encrypted" in reason and "password" in reason and "skipped" in reason


def test_a_truncated_pdf_is_skipped_saying_it_is_damaged_or_truncated(
    tmp_path: Path
) -> None:
    data = owls()
    reason = skipped(prepared(tmp_path, "cut.pdf", data[: len(data) // 2]))
    assert "damaged or truncated" in reason and "skipped" in reason


def test_a_page_that_cannot_be_loaded_costs_that_page_alone(tmp_path: Path) -> None:
    pages = [[f"Page {n} speaks of owl number {n}."] for n in range(1, 5)]
    data = pdf(pages, compress=False)
    # page 2's object made an array: PDFium opens the document, not that page
    kids = re.search(rb"/Kids \[ (\d+) 0 R (\d+) 0 R", data)
    assert kids is not None
    second = kids.group(2)
    damaged = data.replace(second + b" 0 obj\n<<", second + b" 0 obj\n[[", 1)
    assert damaged != data
    result, doc = indexed(tmp_path, "damaged.pdf", damaged)
    assert [c.page for c in doc.chunks] == [1, 3, 4]
    assert [c.content for c in doc.chunks] == [pages[0][0], pages[2][0], pages[3][0]]
    assert result.warning == ("page 2 of its 4 could not be read (damaged?): its text is "
                              "not indexed")


def test_a_pdf_of_2000_pages_is_read_whole_within_the_time_a_file_has(
    tmp_path: Path
) -> None:
    data = pdf_of_pages(pdf([[f"The long report, page {i}.",
                              "Barn owls and tawny owls share the wood."] for i in range(4)]),
                        500)
    started = time.monotonic()
    result, doc = indexed(tmp_path, "long.pdf", data)
    took = time.monotonic() - started
    assert result.warning is None
    assert {c.page for c in doc.chunks} == set(range(1, 2001))
    assert took < ChunkLimits().extract_seconds / 4, took


def test_a_pdf_too_long_to_read_in_time_is_cut_saying_where(tmp_path: Path) -> None:
    data = pdf_of_pages(pdf([["A page of the long report about owls."]]), 2000)
    limits = ChunkLimits(extract_seconds=0.001)
    result, doc = indexed(tmp_path, "long.pdf", data, limits)
    assert result.warning is not None
    said = re.fullmatch(r"cut after (\d+) of its 2000 pages: reading it took over the "
                        r"limit of 0\.001 s a file \(extract_seconds\)", result.warning)
    assert said is not None, result.warning
    read = int(said.group(1))
    assert read < 2000
    assert [c.page for c in doc.chunks] == list(range(1, read + 1))


def test_a_pdf_with_more_text_than_a_file_may_have_is_cut_saying_so(
    tmp_path: Path
) -> None:
    data = pdf([[f"Owl fact number {i} on page {p}." for i in range(20)] for p in range(6)])
    whole = extract("facts.pdf", data).text
    limits = ChunkLimits(max_text_chars=len(whole) // 2)
    result, doc = indexed(tmp_path, "facts.pdf", data, limits)
    assert result.warning == (f"cut after {len(whole) // 2:,} of its {len(whole):,} "
                              "characters (max_text_chars): the rest is not indexed")
    kept = "\n".join(c.content for c in doc.chunks)
    assert "page 0." in kept and "page 5." not in kept
    assert max(c.page or 0 for c in doc.chunks) in (3, 4)
