"""Source lines, titles, tags and hidden text: what the chunker records of where a chunk
came from and what note it belongs to."""

from __future__ import annotations

from itertools import pairwise

import pytest

from rifflux.core.chunker import ChunkLimits, parse_markdown

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
