"""Source lines, titles, tags and hidden text: what the chunker records of where a chunk
came from and what note it belongs to; and what a location given to reindex or forget
means (``core.locations``)."""

from __future__ import annotations

import stat
from itertools import pairwise
from pathlib import Path

import pytest

from rifflux.core.chunker import ChunkLimits, parse_markdown
from rifflux.core.locations import (
    Found,
    Place,
    forget_place,
    one_root_relative,
    reads_as_root_relative,
    reindex_locations,
    reindex_place,
    too_many_files,
    too_wide,
)
from rifflux.core.scan import Globs
from rifflux.errors import InvalidArgumentError

from ..helpers import spans_point_at_the_text

CASES = {
    "front matter": "---\ntitle: Guide\ntags: [a]\n---\n# Guide\n\nIntro text here.\n\n"
                    "## Install\n\nRun the installer twice.\n",
    "setext headings": "Guide\n=====\n\nIntro text here.\n\nInstall\n-------\n\n"
                       "Run the installer twice.\n",
    "atx headings": "# Guide\n\nIntro text here.\n\n### Deep ###\n\nDeep body words.\n",
    "code fence": "# Code\n\nBefore the code.\n\n```python\ndef answer():\n    return 42\n```\n\n"
                  "After the code.\n",
    "crlf": "# Guide\r\n\r\nIntro text here.\r\n\r\n## Install\r\n\r\nRun it twice.\r\n",
    "no trailing newline": "# Guide\n\nIntro text.\n\n## End\n\nLast words here",
    "lists and tables": "# Lists\n\n1. first item\n1. second item\n\n| a | b |\n|---|---|\n"
                        "| cell one | cell two |\n",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_line_spans_point_at_the_text(case: str) -> None:
    text = CASES[case]
    doc = parse_markdown(text)
    assert doc.chunks
    spans_point_at_the_text(text, doc.chunks)


def test_line_spans_of_a_front_matter_file_count_the_front_matter() -> None:
    doc = parse_markdown(CASES["front matter"])
    # the short intro opens its subsection's chunk, which keeps the deeper breadcrumb
    assert [(c.heading_path, c.line_start, c.line_end) for c in doc.chunks] == [
        ("Guide > Install", 5, 11)]


def test_line_spans_in_a_5000_line_file_with_split_blocks() -> None:
    parts = ["# Big file", ""]
    for i in range(500):
        parts += [f"## Section {i}", "", f"Paragraph {i} talks about topic{i} at length.",
                  "", "```text", *(f"code line {i}.{j} value{j}" for j in range(4)), "```", ""]
    text = "\n".join(parts)
    total = len(text.splitlines())
    assert total > 5000
    doc = parse_markdown(text, ChunkLimits(max_chars=120, min_chars=40, code_max_chars=120))
    spans_point_at_the_text(text, doc.chunks)
    assert doc.chunks[-1].line_end == total  # the closing fence of the last code block
    # a piece of a split block ends on its own last code line, not on the block's closing
    # fence (its own closing fence is made up): no two chunks share a line
    assert all(a.line_end < b.line_start for a, b in pairwise(doc.chunks))
    assert doc.line_count == total


def test_line_counts_follow_str_splitlines() -> None:
    text = "# A\r\n\r\nx\x0cy\u2028z\n"
    assert parse_markdown(text).line_count == len(text.splitlines()) == 5


def test_html_comments_are_neither_indexed_nor_embedded() -> None:
    doc = parse_markdown("# Note\n\n<!-- secret plan, hidden -->\n\nVisible <!-- inline secret -->"
                         " words.\n\n```html\n<!-- kept: code is code -->\n```\n")
    text = "\n".join(c.content for c in doc.chunks)
    assert "secret" not in text and "Visible  words." in text
    assert "<!-- kept: code is code -->" in text


def test_inline_tags_join_front_matter_tags_normalised() -> None:
    doc = parse_markdown("---\ntags: [Project/Alpha, draft]\n---\n# Note #Heading-tag\n\n"
                         "Text with #idea and #area/sub/leaf, not #123 or a#b or `#code` "
                         "or http://x.org/#frag, nor colours #1f2328 #fff0 but #face.\n\n"
                         "```\n#not-a-tag\n```\n")
    assert doc.metadata.tags == ("project/alpha", "draft", "heading-tag", "idea",
                                 "area/sub/leaf", "face")


def test_title_is_front_matter_title_else_first_h1() -> None:
    assert parse_markdown("---\ntitle: From FM\n---\n# Heading\n").metadata.title == "From FM"
    assert parse_markdown("intro\n\n## Two\n\n# First H1\n").metadata.title == "First H1"
    assert parse_markdown("no heading at all\n").metadata.title is None


def test_front_matter_is_kept_whole_and_json_safe() -> None:
    doc = parse_markdown("---\nstatus: draft\ndate: 2026-11-01\nauthors: [ann, bo]\n"
                         "n: 3\n---\nbody\n")
    assert doc.metadata.frontmatter == {"status": "draft", "date": "2026-11-01",
                                        "authors": ["ann", "bo"], "n": 3}


def test_a_heading_that_is_only_a_comment_adds_no_text() -> None:
    doc = parse_markdown("# <!-- title here -->\n\n## Summary\n\nThe summary text.\n")
    assert doc.chunks[0].content == "## Summary\n\nThe summary text."
    assert doc.chunks[0].line_start == 3


def test_a_code_block_in_a_long_list_item_is_kept_whole_with_its_fence_lines() -> None:
    # From awesome-copilot's security-and-owasp.instructions.md: a list item longer than
    # a chunk, holding two code blocks. Split as text, it once cut the second block in
    # two, and the piece's line_end left its closing fence out.
    item = ("- **Secrets:** " + "Never hardcode secrets; read them from the environment. " * 14
            + "\n  ```javascript\n  // GOOD: Load from environment\n"
            "  const apiKey = process.env.API_KEY;\n  ```\n"
            "  ```python\n  # BAD: Hardcoded secret\n  api_key = \"sk_bad_idea\"\n  ```\n")
    text = "# Guide\n\n## Secrets\n\n" + item + "\n## Next\n\nMore text here.\n"
    lines = text.splitlines()
    for size in (800, 830, 870, 920, 950):  # (where line-by-line packing cut a block)
        doc = parse_markdown(text, ChunkLimits(max_chars=size, min_chars=100))
        spans_point_at_the_text(text, doc.chunks)
        for chunk in doc.chunks:
            fences = [ln for ln in chunk.content.split("\n") if ln.strip().startswith("```")]
            assert len(fences) % 2 == 0, (size, chunk.content)  # no block cut in two
        python = next(c for c in doc.chunks if "sk_bad_idea" in c.content)
        assert lines[python.line_end - 1].strip() == "```", size  # its closing fence


# ---------------------------------------------------------------- what a location means
# (core.locations: where a path given to reindex or forget points, decided without a disk)

DIR, FILE, FIFO = stat.S_IFDIR | 0o755, stat.S_IFREG | 0o644, stat.S_IFIFO | 0o644
GLOBS = Globs(("*.md",), ())
HOME = Path("/home/ann")


def _reindex(location: str, mode: int | None, roots: list[Path], *, yes: bool = False,
             named: bool = True, path: Path | None = None) -> Place:
    found = Found(path=path or Path(location), mode=mode)
    return reindex_place(location, found, roots, GLOBS, home=HOME, yes=yes, named=named)


def test_a_location_is_a_new_root_a_part_of_an_indexed_one_or_a_single_file() -> None:
    notes = Path("/data/notes")
    assert _reindex("/data/docs", DIR, [notes]) == Place(root=Path("/data/docs"))
    assert _reindex("/data/notes", DIR, [notes]) == Place(root=notes)  # the root itself
    assert _reindex("/data/notes/a/b", DIR, [notes]) == Place(root=notes, prefix="a/b/")
    assert _reindex("/data/notes/a/x.md", FILE, [notes]) == Place(
        root=notes, paths=frozenset({"a/x.md"}))
    assert _reindex("/elsewhere/x.md", FILE, [notes]) == Place(  # a file alone: its folder
        root=Path("/elsewhere"), paths=frozenset({"x.md"}))


def test_a_location_that_cannot_be_indexed_says_why() -> None:
    gone = _reindex("~/gone", None, [], path=Path("/home/ann/gone"))
    assert gone.root == Path("/home/ann/gone") and gone.missing is not None
    assert "path not found" in gone.missing
    fifo = _reindex("/tmp/pipe.md", FIFO, [])
    assert fifo.missing is not None and "FIFO" in fifo.missing
    text = _reindex("/data/notes/x.txt", FILE, [Path("/data/notes")])
    assert text.root == Path("/data/notes") and text.paths is None
    assert text.missing == "not indexed: the file does not match the include globs (*.md)"


def test_the_whole_file_system_and_the_home_folder_are_refused_unless_allowed() -> None:
    for folder, why in (("/", "the whole file system"), (str(HOME), "your home folder")):
        refused = _reindex(folder, DIR, [])
        assert refused.missing is not None and f"is {why}; " in refused.missing
        assert "yes=true" in refused.missing
        assert _reindex(folder, DIR, [], yes=True) == Place(root=Path(folder))
        assert _reindex(folder, DIR, [Path(folder)]) == Place(root=Path(folder))  # indexed
        implicit = _reindex(folder, DIR, [], named=False)  # the working directory, too
        assert implicit.missing is not None and f"is {why}; " in implicit.missing
    assert too_wide(HOME, None) is None  # no home folder: only / is too wide
    assert too_wide(HOME / "notes", HOME) is None


def test_only_a_new_folder_nobody_named_is_limited_in_size() -> None:
    big = Path("/data/big")
    assert _reindex(str(big), DIR, []) == Place(root=big)  # named: whatever its size
    assert _reindex(str(big), DIR, [], named=False) == Place(root=big, limited=True)
    assert _reindex(str(big), DIR, [], named=False, yes=True) == Place(root=big)
    assert _reindex(str(big), DIR, [big], named=False) == Place(root=big)  # indexed already
    assert _reindex(str(big / "a"), DIR, [big], named=False) == Place(root=big, prefix="a/")
    why = too_many_files(63_424, 50_000, big)
    assert why.startswith("refused: 63,424 files to index in /data/big, the working directory")
    assert "limit of 50,000" in why and "rifflux index PATH" in why and "--yes" in why


def test_forgetting_removes_a_part_of_a_root_or_the_roots_inside_a_folder() -> None:
    roots = [HOME / "notes", HOME / "work/docs"]
    assert forget_place("x", HOME / "notes/a", roots, home=HOME) == Place(
        root=HOME / "notes", prefix="a")
    assert forget_place("x", HOME / "work", roots, home=HOME) == Place(root=HOME / "work")
    with pytest.raises(InvalidArgumentError, match=r"is your home folder.*inside it \(2: "):
        forget_place("~", HOME, roots, home=HOME)
    assert forget_place("~", HOME, roots, home=HOME, yes=True) == Place(root=HOME)
    assert forget_place("/", Path("/"), [], home=HOME) == Place(root=Path("/"))  # none inside


def test_a_relative_path_that_names_nothing_indexed_is_read_as_results_give_it() -> None:
    roots = [Path("/data/notes")]
    assert reads_as_root_relative("a/x.md", Path("/cwd/a/x.md"), roots)
    assert not reads_as_root_relative("/cwd/a/x.md", Path("/cwd/a/x.md"), roots)
    assert not reads_as_root_relative("~/x.md", Path("/home/ann/x.md"), roots)
    assert not reads_as_root_relative("notes/a", Path("/data/notes/a"), roots)  # inside one
    assert not reads_as_root_relative("data", Path("/data"), roots)  # holds one
    assert one_root_relative("a", [Path("/data/notes/a")], "/cwd") == Path("/data/notes/a")
    with pytest.raises(InvalidArgumentError, match="no indexed folder holds it"):
        one_root_relative("a", [], "/cwd")
    with pytest.raises(InvalidArgumentError, match=r"several indexed folders \(/r1/a, /r2/a\)"):
        one_root_relative("a", [Path("/r1/a"), Path("/r2/a")], "/cwd")


def test_a_reindex_is_for_paths_else_path_else_the_working_directory() -> None:
    assert reindex_locations("p", ["a", "b"], "/cwd") == (["a", "b"], True)
    assert reindex_locations("p", [], "/cwd") == (["p"], True)
    assert reindex_locations("", None, "/cwd") == (["/cwd"], False)
    assert reindex_locations(None, None, "/cwd") == (["/cwd"], False)
    with pytest.raises(InvalidArgumentError, match=r"paths\[1\] is empty"):
        reindex_locations(None, ["a", " "], "/cwd")
