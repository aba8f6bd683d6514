"""Links from notes to the other files the index reads (a PDF, a deck, a Word file, text),
through the library on both stores: real files made with reportlab, python-pptx and
python-docx, linked in every form Obsidian writes; backlinks, where outgoing links go,
neighbours both ways, search near a note, and files that appear and go after the notes
that link to them; and the same through the MCP server and the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux import Rifflux

from .helpers import CountingEmbedder, Location, call, mcp_session, rifflux_cli, write_vault

pytestmark = pytest.mark.anyio

HOME = """# Home

Read [[paper.pdf]] first, then the slides ![[deck.pptx]].
The [quarterly report](files/report.docx) and page two [[paper.pdf#page=2|of the paper]].
The note [[paper]], plain [[readme.txt]], a picture ![[diagram.png]] and [[missing.pdf]].
"""

#: The notes of the vault (the other files are made by ``attachments``).
NOTES = {
    "Home.md": HOME,
    "paper.md": "# Paper\n\nA note that shares its name with the PDF.\n",
    "readme.txt": "Plain text about the vault.\n",
    "other/Reader.md": "# Reader\n\nSee [the paper](../files/paper.pdf) on otters.\n",
    # a second paper.pdf: a note in its folder links to it, the others to the nearest
    "archive/Old.md": "# Old\n\nThe old [[paper.pdf]].\n",
}

#: Home's outgoing links, (target as written, where it resolves): no diagram.png.
HOME_OUT = [("paper.pdf", "files/paper.pdf"), ("deck.pptx", "slides/deck.pptx"),
            ("files/report.docx", "files/report.docx"), ("paper.pdf#page=2", "files/paper.pdf"),
            ("paper", "paper.md"), ("readme.txt", "readme.txt"), ("missing.pdf", None)]


def make_pdf(path: Path, pages: list[str], title: str | None = None) -> None:
    from reportlab.pdfgen import canvas

    path.parent.mkdir(parents=True, exist_ok=True)
    pdf = canvas.Canvas(str(path))
    if title:
        pdf.setTitle(title)
    for text in pages:
        pdf.drawString(72, 720, text)
        pdf.showPage()
    pdf.save()


def make_pptx(path: Path, slides: list[tuple[str, str]]) -> None:
    from pptx import Presentation

    deck = Presentation()
    deck.core_properties.title = ""  # (no title of its own: it is known by its name)
    for title, body in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))


def make_docx(path: Path, heading: str, text: str) -> None:
    from docx import Document

    document = Document()
    document.core_properties.title = "Quarterly report"
    document.add_heading(heading, level=1)
    document.add_paragraph(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))


def attachments(vault: Path) -> Path:
    """The notes' files: a PDF of two pages with a title, a second PDF of that name, a
    deck without a title, a Word file."""
    make_pdf(vault / "files/paper.pdf", ["Otters build dams across the river.",
                                         "Page two: the river currents and otter dens."],
             title="Otters in Rivers")
    make_pdf(vault / "archive/old/paper.pdf", ["An old draft about beavers."])
    make_pptx(vault / "slides/deck.pptx", [("Otter deck", "Slides about otters at play.")])
    make_docx(vault / "files/report.docx", "Report", "The quarterly otter count rose.")
    return vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return attachments(write_vault(tmp_path / "vault", NOTES).resolve())


async def outgoing(rf: Rifflux, path: str) -> list[tuple[str, str | None]]:
    return [(link["target"], link["path"]) for link in (await rf.links(path))["outgoing"]]


async def backlinks(rf: Rifflux, path: str) -> list[tuple[str, int, str]]:
    return [(b["path"], b["line"], b["target"]) for b in (await rf.links(path))["backlinks"]]


async def neighbours(rf: Rifflux, path: str, depth: int = 1) -> dict[str, tuple[int, str]]:
    return {n["path"]: (n["distance"], n["title"])
            for n in await rf.neighbors(path, depth=depth)}


async def near(rf: Rifflux, query: str, note: str, mode: str = "lexical") -> set[str]:
    return {h["path"] for h in await rf.search(query, top_k=50, mode=mode, near=note)}


async def test_notes_link_to_pdfs_decks_and_word_files_and_they_link_back(
    db: Location, vault: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        found = await rf.links("Home.md")
        assert [(o["target"], o["path"]) for o in found["outgoing"]] == HOME_OUT
        by_target = {o["target"]: o for o in found["outgoing"]}
        assert by_target["deck.pptx"]["embed"] is True
        assert by_target["files/report.docx"]["kind"] == "markdown"
        assert by_target["files/report.docx"]["text"] == "quarterly report"
        # a page of a PDF resolves to the chunk on that page
        page_two = by_target["paper.pdf#page=2"]
        assert (page_two["anchor"], page_two["text"]) == ("page=2", "of the paper")
        chunk = await rf.get_chunk(str(page_two["target_chunk_id"]))
        assert chunk is not None and chunk["path"] == "files/paper.pdf"
        assert chunk.get("page") == 2 and "currents" in chunk["content"]
        # an image is no link at all; a PDF the index does not hold is unresolved
        assert "diagram.png" not in by_target
        assert [u["target"] for u in found["unresolved"]] == ["missing.pdf"]
        # the other way: the notes that cite each file, and where
        assert await backlinks(rf, "files/paper.pdf") == [
            ("Home.md", 3, "paper.pdf"), ("Home.md", 4, "paper.pdf#page=2"),
            ("other/Reader.md", 3, "../files/paper.pdf")]
        assert await backlinks(rf, "archive/old/paper.pdf") == [
            ("archive/Old.md", 3, "paper.pdf")]  # the nearest of the two
        assert await backlinks(rf, "slides/deck.pptx") == [("Home.md", 3, "deck.pptx")]
        assert await backlinks(rf, "files/report.docx") == [("Home.md", 4, "files/report.docx")]
        assert await backlinks(rf, "paper.md") == [("Home.md", 5, "paper")]
        assert await backlinks(rf, "readme.txt") == [("Home.md", 5, "readme.txt")]
        assert (await rf.links("files/paper.pdf"))["outgoing"] == []
        status = await rf.status()
        assert (status["links"], status["unresolved_links"]) == (9, 1)


async def test_neighbours_and_search_near_a_note_cross_to_its_files_and_back(
    db: Location, vault: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        # a file's title is its own (the PDF's, the Word file's), else its whole name
        assert await neighbours(rf, "Home.md") == {
            "files/paper.pdf": (1, "Otters in Rivers"), "slides/deck.pptx": (1, "deck.pptx"),
            "files/report.docx": (1, "Quarterly report"), "paper.md": (1, "Paper"),
            "readme.txt": (1, "readme.txt")}
        assert await neighbours(rf, "files/paper.pdf") == {
            "Home.md": (1, "Home"), "other/Reader.md": (1, "Reader")}
        assert set(await neighbours(rf, "other/Reader.md", 2)) == {
            "files/paper.pdf", "Home.md"}
        assert set(await neighbours(rf, "other/Reader.md", 3)) == {
            "files/paper.pdf", "Home.md", "slides/deck.pptx", "files/report.docx",
            "paper.md", "readme.txt"}
        # search near a note finds the text of the files it cites, and only theirs
        cited = {"files/paper.pdf", "slides/deck.pptx", "files/report.docx"}
        assert await near(rf, "otters", "Home.md") == cited
        hybrid = await near(rf, "otters", "Home.md", "hybrid")
        assert cited <= hybrid <= {"Home.md", "paper.md", "readme.txt", *cited}
        assert await near(rf, "otters", "files/paper.pdf") == {
            "files/paper.pdf", "other/Reader.md"}
        assert await near(rf, "beavers", "Home.md") == set()  # the other paper.pdf
        counts = {h["path"]: h.get("backlink_count") for h in
                  await rf.search("otters", top_k=20, mode="lexical", max_per_file=1)}
        assert counts["files/paper.pdf"] == 2  # two notes cite it


async def test_a_file_added_after_the_notes_that_cite_it_resolves_and_deleted_unresolves(
    db: Location, tmp_path: Path
) -> None:
    vault = write_vault(tmp_path / "vault", NOTES).resolve()
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(vault)
        assert ("paper.pdf", None) in await outgoing(rf, "Home.md")
        assert ("../files/paper.pdf", None) in await outgoing(rf, "other/Reader.md")
        unresolved = (await rf.status())["unresolved_links"]
        assert unresolved == 7  # Home's five to files, Reader's and Old's (deck, report: 2)

        make_pdf(vault / "files/paper.pdf", ["Otters build dams."], title="Otters in Rivers")
        done = await rf.reindex(vault)
        assert done.get("changed", {}).get("indexed") == ["files/paper.pdf"]  # notes not read
        assert await outgoing(rf, "Home.md") == [
            ("paper.pdf", "files/paper.pdf"), ("deck.pptx", None), ("files/report.docx", None),
            ("paper.pdf#page=2", "files/paper.pdf"), ("paper", "paper.md"),
            ("readme.txt", "readme.txt"), ("missing.pdf", None)]
        assert [p for p, _, _ in await backlinks(rf, "files/paper.pdf")] == [
            "Home.md", "Home.md", "archive/Old.md", "other/Reader.md"]  # the only one
        assert set(await neighbours(rf, "files/paper.pdf")) == {
            "Home.md", "archive/Old.md", "other/Reader.md"}
        assert await near(rf, "otters", "other/Reader.md") == {"files/paper.pdf",
                                                               "other/Reader.md"}
        assert (await rf.status())["unresolved_links"] == unresolved - 4

        # a second paper.pdf nearer to archive/Old.md takes its link, and only that one
        make_pdf(vault / "archive/old/paper.pdf", ["An old draft about beavers."])
        await rf.reindex(vault)
        assert await outgoing(rf, "archive/Old.md") == [("paper.pdf", "archive/old/paper.pdf")]
        assert ("paper.pdf", "files/paper.pdf") in await outgoing(rf, "Home.md")

        (vault / "files/paper.pdf").unlink()
        done = await rf.reindex(vault)
        assert done.get("changed", {}).get("removed") == ["files/paper.pdf"]
        # Home's link by name finds the other paper.pdf; Reader's path names the one gone
        assert ("paper.pdf", "archive/old/paper.pdf") in await outgoing(rf, "Home.md")
        assert await outgoing(rf, "other/Reader.md") == [("../files/paper.pdf", None)]
        assert await neighbours(rf, "other/Reader.md") == {}
        assert await near(rf, "otters", "other/Reader.md") == {"other/Reader.md"}
        (vault / "archive/old/paper.pdf").unlink()
        await rf.reindex(vault)
        assert ("paper.pdf", None) in await outgoing(rf, "Home.md")
        assert await backlinks(rf, "paper.md") == [("Home.md", 5, "paper")]
        assert (await rf.status())["unresolved_links"] == unresolved


async def test_links_and_neighbours_of_files_through_mcp(tmp_path: Path) -> None:
    vault = attachments(write_vault(tmp_path / "vault", NOTES))
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(vault))
        paper = await call(session, "get_links", path="files/paper.pdf")
        assert paper["counts"] == {"outgoing": 0, "backlinks": 3, "unresolved": 0}
        assert [(b["path"], b["line"]) for b in paper["backlinks"]] == [
            ("Home.md", 3), ("Home.md", 4), ("other/Reader.md", 3)]
        home = await call(session, "get_links", path="Home.md")
        assert home["counts"] == {"outgoing": 7, "backlinks": 0, "unresolved": 1}
        assert [(o["target"], o["path"]) for o in home["outgoing"]] == HOME_OUT
        near_home = await call(session, "get_neighbors", path="Home.md")
        assert {(n["path"], n["title"]) for n in near_home["neighbors"]} >= {
            ("files/paper.pdf", "Otters in Rivers"), ("slides/deck.pptx", "deck.pptx")}
        near_paper = await call(session, "get_neighbors", path="files/paper.pdf")
        assert [n["path"] for n in near_paper["neighbors"]] == ["Home.md", "other/Reader.md"]
        hits = await call(session, "search_rifflux", query="otters", mode="lexical",
                          near="Home.md")
        assert {h["path"] for h in hits["results"]} == {
            "files/paper.pdf", "slides/deck.pptx", "files/report.docx"}
        status = await call(session, "index_status")
        assert (status["links"], status["unresolved_links"]) == (9, 1)


def test_links_and_neighbours_of_files_through_the_command_line(tmp_path: Path) -> None:
    vault = attachments(write_vault(tmp_path / "vault", NOTES))
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(vault)).returncode == 0

    done = rifflux_cli(tmp_path, "--db", "index.db", "links", "vault/Home.md")
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[1] == ["links", "to:", "7", "(1", "unresolved)"]
    for line in (["3", "[[paper.pdf]]", "vault/files/paper.pdf"],
                 ["3", "![[deck.pptx]]", "vault/slides/deck.pptx"],
                 ["4", "[quarterly", "report](files/report.docx)", "vault/files/report.docx"],
                 ["4", "[[paper.pdf#page=2]]", "vault/files/paper.pdf"],
                 ["5", "[[missing.pdf]]", "unresolved"]):
        assert line in lines, line
    assert not any("diagram.png" in " ".join(line) for line in lines)

    done = rifflux_cli(tmp_path, "--db", "index.db", "links", "vault/files/paper.pdf")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "links to: 0", "linked from: 3", "  vault/Home.md:3  Home  [[paper.pdf]]",
        "  vault/Home.md:4  Home  [[paper.pdf#page=2]]",
        "  vault/other/Reader.md:3  Reader  [the paper](../files/paper.pdf)"]

    done = rifflux_cli(tmp_path, "--db", "index.db", "neighbors", "vault/Home.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1  vault/files/paper.pdf  Otters in Rivers", "1  vault/files/report.docx  "
        "Quarterly report", "1  vault/paper.md  Paper", "1  vault/readme.txt  readme.txt",
        "1  vault/slides/deck.pptx  deck.pptx"]
    done = rifflux_cli(tmp_path, "--db", "index.db", "neighbors", "vault/files/paper.pdf")
    assert done.stdout.splitlines() == ["1  vault/Home.md  Home",
                                        "1  vault/other/Reader.md  Reader"]
    done = rifflux_cli(tmp_path, "--db", "index.db", "status")
    assert any(line.split()[:4] == ["links", "9", "(1", "unresolved)"]
               for line in done.stdout.splitlines())
