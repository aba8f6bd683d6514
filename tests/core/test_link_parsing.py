"""Links found while chunking, their keys, and how a target resolves (pure functions)."""

from __future__ import annotations

from rifflux.core.chunker import ChunkLimits, Link, parse_markdown
from rifflux.core.extract.code import CODE
from rifflux.core.extract.markdown import MARKDOWN
from rifflux.core.extract.office import DOCX, PPTX
from rifflux.core.extract.pdf import PDF
from rifflux.core.extract.text import TEXT
from rifflux.core.graph import LinkGraph
from rifflux.core.links import NoteKey, anchor_matches, link_keys, note_keys, resolve, target_parts
from rifflux.kinds import BUILT_IN_SUFFIXES


def links_of(text: str) -> list[Link]:
    return list(parse_markdown(text).links)


def test_every_link_form_is_found_with_its_line_and_shown_text() -> None:
    found = links_of(
        "# Home\n"
        "\n"
        "Plain [[Note]], shown [[Note|the note]], heading [[Note#Setup]].\n"
        "Block [[Note#^key-1]] and embed ![[Diagram Note]].\n"
        "Markdown [the guide](../docs/Guide%20One.md?plain=1#install-it) and "
        "[angle](<My Note.md>).\n")
    assert [(link.kind, link.embed, link.target, link.text, link.line) for link in found] == [
        ("wikilink", False, "Note", "Note", 3),
        ("wikilink", False, "Note", "the note", 3),
        ("wikilink", False, "Note#Setup", "Note#Setup", 3),
        ("wikilink", False, "Note#^key-1", "Note#^key-1", 4),
        ("wikilink", True, "Diagram Note", "Diagram Note", 4),
        ("markdown", False, "../docs/Guide%20One.md?plain=1#install-it", "the guide", 5),
        ("markdown", False, "My Note.md", "angle", 5),
    ]
    assert found[0].context == "Plain [[Note]], shown [[Note|the note]], heading [[Note#Setup]]."


def test_links_in_code_comments_and_to_other_things_are_not_links_to_notes() -> None:
    found = links_of(
        "Inline `[[InCode]]` and ``[[Double]]``. <!-- [[Commented]] -->\n"
        "\n"
        "```\n[[Fenced]] [x](fenced.md) [[paper.pdf]]\n```\n"
        "\n"
        "- item\n\n      [[Indented code]]\n"
        "\n"
        "[site](https://example.org/page.md) [mail](mailto:a@b.org) [up](//host/x.md) "
        "[here](#a-heading) [[#Own heading]] ![[diagram.png]] ![pic](pic.jpg) "
        "[web](https://example.org/paper.pdf) [sheet](data.xlsx) [[song.mp3]] "
        "[licence](LICENSE) [page](site.html) [real](Real.md)\n")
    assert [link.target for link in found] == ["Real.md"]


def test_links_to_files_the_index_reads_are_links_and_to_images_are_not() -> None:
    # a PDF, a deck, a Word file, text and code, in every form; an image, audio or a
    # spreadsheet no extractor reads is not a link (it could never resolve)
    found = links_of(
        "Read [[paper.pdf]], ![[deck.pptx]] and [[paper.pdf#page=3|page three]].\n"
        "The [report](files/report.docx), [notes](<../a b/notes.txt#x>) and "
        "![[guide.rst]].\n"
        "Code [main](src/main.py) and [[tool.go]]; ![[diagram.png]] ![pic](pic.jpg) "
        "[[song.mp3]] [sheet](data.xlsx).\n"
        "A site written without its scheme, [the org](www.example.org), is no file.\n")
    assert [(link.kind, link.embed, link.target, link.text) for link in found] == [
        ("wikilink", False, "paper.pdf", "paper.pdf"),
        ("wikilink", True, "deck.pptx", "deck.pptx"),
        ("wikilink", False, "paper.pdf#page=3", "page three"),
        ("markdown", False, "files/report.docx", "report"),
        ("markdown", False, "../a b/notes.txt#x", "notes"),
        ("wikilink", True, "guide.rst", "guide.rst"),
        ("markdown", False, "src/main.py", "main"),
        ("wikilink", False, "tool.go", "tool.go"),
    ]


def test_links_in_lists_quotes_tables_and_headings_keep_their_lines() -> None:
    found = links_of(
        "# About [[Topic]]\n"
        "\n"
        "- first [[A]]\n"
        "  ```\n  [[NotThis]]\n  ```\n"
        "- second [[B]]\n"
        "\n"
        "> quoted [[Q]]\n"
        "> and a [link over\n"
        "> two lines](two.md)\n"
        "\n"
        "| a | b |\n|---|---|\n| [[T\\|shown]] | x |\n")
    assert [(link.target, link.text, link.line) for link in found] == [
        ("Topic", "Topic", 1), ("A", "A", 3), ("B", "B", 7), ("Q", "Q", 9),
        ("two.md", "link over two lines", 10), ("T", "shown", 15)]
    assert {link.heading for link in found} == {"About [[Topic]]"}


def test_a_file_of_every_suffix_a_built_in_extractor_reads_can_be_linked_to() -> None:
    claimed = {suffix for extractor in (MARKDOWN, TEXT, PDF, PPTX, DOCX, CODE)
               for suffix in extractor.suffixes}
    assert claimed == BUILT_IN_SUFFIXES
    for suffix in sorted(claimed):
        assert [link.target for link in links_of(f"[x](dir/file{suffix})")] == [
            f"dir/file{suffix}"], suffix


def test_a_link_knows_the_chunk_it_is_in() -> None:
    body = "word " * 60
    doc = parse_markdown(f"# One\n\n{body}[[First]]\n\n# Two\n\n{body}[[Second]]\n",
                         ChunkLimits(max_chars=400, min_chars=10))
    assert len(doc.chunks) == 2
    assert [(link.target, link.heading, link.chunk_index) for link in doc.links] == [
        ("First", "One", 0), ("Second", "Two", 1)]


def test_a_markdown_target_is_url_decoded_without_its_query() -> None:
    assert target_parts("markdown", "../docs/Guide%20One.md?plain=1#install-it") == (
        "../docs/Guide One.md", "install-it")
    assert target_parts("wikilink", "Note#Setup#Linux") == ("Note", "Setup#Linux")
    assert target_parts("wikilink", "Note") == ("Note", None)


def _notes(*paths: str) -> list[NoteKey]:
    return [NoteKey(i, p, note_keys(p)[0]) for i, p in enumerate(paths, 1)]


def _resolve(source: str, kind: str, target: str, notes: list[NoteKey],
             aliases: dict[str, list[NoteKey]] | None = None) -> str | None:
    keys = link_keys(source, "markdown" if kind == "markdown" else "wikilink", target)
    found = resolve(keys, notes, (aliases or {}).get(keys.alias, []), source)
    return next((n.rel_path for n in notes if n.file_id == found), None)


def test_a_target_resolves_by_path_first_then_by_name_then_by_alias() -> None:
    notes = _notes("Note.md", "a/Note.md", "a/b/Deep.md", "z/b/Deep.md", "docs/Guide One.md",
                   "archive/Guide One.md", "q/Twin.md", "p/Twin.md", "x/Beta.md")
    # relative to the linking file, then from the root
    assert _resolve("a/x.md", "wikilink", "Note", notes) == "a/Note.md"
    assert _resolve("c/x.md", "wikilink", "Note", notes) == "Note.md"
    assert _resolve("a/x.md", "wikilink", "/Note", notes) == "Note.md"
    assert _resolve("a/b/x.md", "markdown", "../../docs/Guide%20One.md", notes) \
        == "docs/Guide One.md"
    # a name anywhere: fewest folders, then shortest path, then alphabetical
    assert _resolve("q/x.md", "wikilink", "Guide One", notes) == "docs/Guide One.md"
    assert _resolve("r/x.md", "wikilink", "Twin", notes) == "p/Twin.md"
    assert _resolve("q/x.md", "wikilink", "Twin", notes) == "q/Twin.md"  # its own folder
    assert _resolve("q/x.md", "wikilink", "Deep", notes) == "a/b/Deep.md"
    assert _resolve("q/x.md", "wikilink", "z/b/Deep", notes) == "z/b/Deep.md"
    assert _resolve("q/x.md", "wikilink", "beta.MD", notes) == "x/Beta.md"  # any case
    # an alias last; none of them: unresolved
    aliases = {"the b": [notes[-1]]}
    assert _resolve("q/x.md", "wikilink", "The B", notes, aliases) == "x/Beta.md"
    assert _resolve("q/x.md", "wikilink", "Missing", notes, aliases) is None
    assert _resolve("q/x.md", "wikilink", "other/Note", notes) is None


def test_of_several_notes_of_one_name_the_nearest_to_the_linking_note_wins() -> None:
    # one help vault, a folder per language: each links within its own language
    notes = _notes("en/Plugins/Canvas.md", "ja/プラグイン/Canvas.md", "zh/插件/Canvas.md",
                   "zh/插件/更多/Deep.md", "zh/Deep.md", "en/a/b/Deep.md", "x/Lone.md")
    assert _resolve("en/Basics/Links.md", "wikilink", "Canvas", notes) == "en/Plugins/Canvas.md"
    assert _resolve("ja/Index.md", "wikilink", "Canvas", notes) == "ja/プラグイン/Canvas.md"
    assert _resolve("zh/a/b/c.md", "wikilink", "canvas", notes) == "zh/插件/Canvas.md"
    # the most folders shared wins over the fewest folders deep
    assert _resolve("zh/插件/更多/x.md", "wikilink", "Deep", notes) == "zh/插件/更多/Deep.md"
    assert _resolve("zh/其他/x.md", "wikilink", "Deep", notes) == "zh/Deep.md"
    assert _resolve("en/x.md", "wikilink", "Deep", notes) == "en/a/b/Deep.md"
    # nothing shared: the fewest folders deep, then the shortest path, then alphabetical
    assert _resolve("fr/x.md", "wikilink", "Deep", notes) == "zh/Deep.md"
    assert _resolve("Home.md", "wikilink", "Canvas", notes) == "zh/插件/Canvas.md"
    assert _resolve("en/x.md", "wikilink", "Lone", notes) == "x/Lone.md"
    # aliases by the same rule
    aliases = {"board": [notes[0], notes[1], notes[2]]}
    assert _resolve("zh/x.md", "wikilink", "Board", notes, aliases) == "zh/插件/Canvas.md"


def test_an_anchor_names_a_heading_anywhere_in_a_breadcrumb() -> None:
    assert anchor_matches("Setup", "Guide > Setup")
    assert anchor_matches("Guide#Setup", "Guide > Setup")
    assert anchor_matches("install-it", "Guide > Install it")  # a markdown slug
    # a chunk under a subheading is in the heading's section
    assert anchor_matches("Setup", "Guide > Setup > Linux")
    assert anchor_matches("Guide#Setup", "Guide > Setup > Linux")
    assert not anchor_matches("Other#Setup", "Guide > Setup")
    assert not anchor_matches("Setup#Guide", "Guide > Setup")
    assert not anchor_matches("Linux", "Guide > Setup")


def test_the_link_graph_walks_links_either_way_and_forgets_removed_files() -> None:
    graph = LinkGraph()
    graph.replace([(1, 2), (3, 1), (2, 4), (5, 4)])
    assert graph.within(1, 1) == {2: 1, 3: 1}
    assert graph.within(1, 2) == {2: 1, 3: 1, 4: 2}
    assert graph.within(1, 3) == {2: 1, 3: 1, 4: 2, 5: 3}
    assert graph.backlinks(4) == 2 and graph.backlinks(3) == 0
    graph.update([(1, (4, 1))])  # 1 now links to 4 (and to itself, which is no edge)
    assert graph.within(1, 1) == {3: 1, 4: 1}
    graph.remove([4])
    assert graph.within(1, 5) == {3: 1} and graph.backlinks(4) == 0
    assert len(graph) == 1
