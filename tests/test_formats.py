"""Everything in the folder through the library, on both stores: a PDF, a deck, a Word
file, plain text and code beside a note are searched (each hit with its kind, its page or
slide), narrowed by kind in every mode, and read back by page, slide and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux import InvalidArgumentError, Rifflux

from .helpers import CountingEmbedder, Location, write, write_pdf

pytestmark = pytest.mark.anyio
MODES = ("lexical", "semantic", "hybrid")


def _deck(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Survey plan"
    first.placeholders[1].text = "Walk the moor at dawn"
    first.notes_slide.notes_text_frame.text = "Mention the snipe drumming."
    second = deck.slides.add_slide(deck.slide_layouts[5])
    second.shapes.title.text = "Counts"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, col), text in {(0, 0): "Species", (0, 1): "Pairs", (1, 0): "Curlew",
                             (1, 1): "seventeen"}.items():
        table.cell(row, col).text = text
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))


def _report(path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Moorland report", 0)
    document.add_heading("Methods", 1)
    document.add_paragraph("Transects were walked twice each season.")
    document.add_heading("Weather", 2)
    document.add_paragraph("Fog delayed the lapwing transect.")
    document.save(str(path))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "field"
    write(root, "note.md", "# Field note\n\nThe golden plover nests on the moor.\n")
    write_pdf(root / "papers/moor.pdf",
              ["Upland birds\nThe golden plover breeds on high ground.",
               "Waders\nThe dunlin probes the peat with its bill.",
               "Raptors\nThe merlin hunts meadow pipits low over heather."],
              outline=["Upland birds", "Waders", "Raptors"], title="Birds of the Moor",
              author="A. Warden")
    _deck(root / "talks/survey.pptx")
    _report(root / "report.docx")
    write(root, "readme.rst", "Moor data\n=========\n\nRaw counts of the ring ouzel.\n")
    write(root, "tools/count.py", "def tally_ouzels(sightings):\n"
                                  "    \"\"\"Sum the ring ouzel sightings.\"\"\"\n"
                                  "    return sum(sightings)\n")
    return root


async def test_every_kind_is_found_where_it_is(db: Location, folder: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder(), kinds=["default", "code"]) as rf:
        result = await rf.reindex(folder)
        assert result["indexed_files"] == 6 and not result["errors"], result
        where = {}
        for query in ("dunlin probes the peat", "snipe drumming", "Curlew seventeen",
                      "lapwing transect fog", "ring ouzel raw counts", "tally_ouzels"):
            hit = (await rf.search(query, mode="lexical", top_k=1))[0]
            where[query] = (hit["path"], hit["kind"], hit.get("page"), hit.get("slide"),
                            hit["heading_path"])
        status = await rf.status()
        files = {f["path"]: f["kind"] for f in await rf.files()}
    assert where == {
        "dunlin probes the peat": ("papers/moor.pdf", "pdf", 2, None, "Waders"),
        "snipe drumming": ("talks/survey.pptx", "pptx", None, 1, "Survey plan"),
        "Curlew seventeen": ("talks/survey.pptx", "pptx", None, 2, "Counts"),
        # (Word's Title is the file's title, a heading of the first level as Heading 1 is)
        "lapwing transect fog": ("report.docx", "docx", None, None, "Methods > Weather"),
        "ring ouzel raw counts": ("readme.rst", "text", None, None, "Moor data"),
        "tally_ouzels": ("tools/count.py", "code", None, None, "tally_ouzels"),
    }
    assert {k: v["files"] for k, v in status["kinds"].items()} == {
        "code": 1, "docx": 1, "markdown": 1, "pdf": 1, "pptx": 1, "text": 1}
    assert files["papers/moor.pdf"] == "pdf" and files["note.md"] == "markdown"


async def test_a_kind_filter_narrows_every_mode(db: Location, folder: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(folder)
        for mode in MODES:
            everywhere = await rf.search("golden plover moor", mode=mode, top_k=10)
            assert {h["kind"] for h in everywhere} >= {"markdown", "pdf"}, mode
            pdfs = await rf.search("golden plover moor", mode=mode, top_k=10, kinds=["pdf"])
            assert pdfs and {h["kind"] for h in pdfs} == {"pdf"}, mode
            both = await rf.search("golden plover moor", mode=mode, top_k=10,
                                   kinds=["pdf", "markdown"])
            assert {h["kind"] for h in both} == {"pdf", "markdown"}, mode
        assert await rf.search("tally_ouzels", mode="lexical") == []  # code: not by default
        with pytest.raises(InvalidArgumentError, match="no kind of file is called 'pfd'"):
            await rf.search("plover", kinds=["pfd"])


async def test_pages_slides_and_lines_are_read_back(db: Location, folder: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(folder)
        hit = (await rf.search("merlin hunts meadow pipits", mode="lexical", top_k=1))[0]
        page = await rf.get_file(hit["path"], page=hit["page"])
        assert page is not None and "text" in page
        assert (page["start_page"], page["end_page"], page["total_pages"],
                page["unit"]) == (3, 3, 3, "page")
        assert page["text"].startswith("Raptors\nThe merlin hunts")
        assert page["start_line"] <= hit["line_start"] <= hit["line_end"] <= page["end_line"]
        lines = await rf.get_file(hit["path"], start_line=hit["line_start"],
                                  end_line=hit["line_end"])
        assert lines is not None and "text" in lines and "merlin hunts" in lines["text"]
        two = await rf.get_file("papers/moor.pdf", page=1, end_page=2)
        assert two is not None and "golden plover" in two["text"] and "dunlin" in two["text"]
        assert "merlin" not in two["text"]
        slide = await rf.get_file("talks/survey.pptx", page=2)
        assert slide is not None and slide["unit"] == "slide"
        assert "Curlew | seventeen" in slide["text"] and "snipe" not in slide["text"]
        whole = await rf.get_file("papers/moor.pdf")
        assert whole is not None and "text" not in whole
        assert whole["title"] == "Birds of the Moor"
        assert whole["frontmatter"]["author"] == "A. Warden"
        assert [c["page"] for c in whole["chunks"]] == [1, 2, 3]
        with pytest.raises(InvalidArgumentError, match="page 4 is past the end"):
            await rf.get_file("papers/moor.pdf", page=4)
        with pytest.raises(InvalidArgumentError, match="has no pages or slides"):
            await rf.get_file("note.md", page=1)
        with pytest.raises(InvalidArgumentError, match="not both"):
            await rf.get_file("papers/moor.pdf", page=1, start_line=1)
