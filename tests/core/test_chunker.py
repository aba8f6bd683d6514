from __future__ import annotations

from rifflux.core.chunker import ChunkLimits, parse_markdown


def contents(text: str, limits: ChunkLimits | None = None) -> list[str]:
    return [c.content for c in parse_markdown(text, limits).chunks]


def test_empty_file_has_no_chunks() -> None:
    doc = parse_markdown("")
    assert doc.chunks == ()


def test_front_matter_is_metadata_not_body() -> None:
    doc = parse_markdown(
        "---\ntitle: Guide\ntags: [a, b]\naliases: g\n---\n# Intro\n\nHello world.\n"
    )
    assert doc.metadata.title == "Guide"
    assert doc.metadata.tags == ("a", "b")
    assert doc.metadata.aliases == ("g",)
    text = "\n".join(c.content for c in doc.chunks)
    assert "title:" not in text and "Hello world." in text


def test_front_matter_only_file_has_metadata_and_no_chunks() -> None:
    doc = parse_markdown("---\ntitle: Only meta\n---\n")
    assert doc.metadata.title == "Only meta"
    assert doc.chunks == ()


def test_invalid_front_matter_stays_in_the_body() -> None:
    doc = parse_markdown("---\n: [unclosed\n---\nbody text\n")
    assert "unclosed" in "\n".join(c.content for c in doc.chunks)


def test_heading_breadcrumbs() -> None:
    body = "word " * 60
    doc = parse_markdown(f"# Guide\n\n{body}\n\n## Install\n\n{body}\n\n### Linux\n\n{body}\n")
    paths = [c.heading_path for c in doc.chunks]
    assert paths == ["Guide", "Guide > Install", "Guide > Install > Linux"]
    assert doc.chunks[2].content.startswith("### Linux")


def test_setext_headings_are_headings() -> None:
    body = "text " * 60
    doc = parse_markdown(f"Title\n=====\n\n{body}\n\nPart\n----\n\n{body}\n")
    assert [c.heading_path for c in doc.chunks] == ["Title", "Title > Part"]


def test_headings_with_no_body_are_kept_and_merged_forward() -> None:
    body = "content " * 40
    doc = parse_markdown(f"# A\n## B\n### C\n\n{body}\n")
    assert len(doc.chunks) == 1
    chunk = doc.chunks[0]
    assert chunk.heading_path == "A > B > C"
    assert "# A" in chunk.content and "## B" in chunk.content and "### C" in chunk.content


def test_lone_heading_is_not_dropped() -> None:
    doc = parse_markdown("# Just a title\n")
    assert [c.content for c in doc.chunks] == ["# Just a title"]


def test_fenced_code_is_kept_whole() -> None:
    code = "\n".join(f"line_{i} = {i}" for i in range(60))  # ~800 chars
    doc = parse_markdown(
        f"# Code\n\nIntro text.\n\n```python\n{code}\n```\n\nAfter.\n",
        ChunkLimits(max_chars=500, min_chars=50, code_max_chars=3000),
    )
    holders = [c for c in doc.chunks if "line_0 = 0" in c.content]
    assert len(holders) == 1
    assert "line_59 = 59" in holders[0].content
    assert "```python" in holders[0].content


def test_giant_code_block_is_split_at_line_boundaries() -> None:
    code = "\n".join(f"value_{i} = compute({i})" for i in range(1000))
    limits = ChunkLimits(max_chars=500, min_chars=50, code_max_chars=1000)
    doc = parse_markdown(f"```py\n{code}\n```\n", limits)
    assert len(doc.chunks) > 10
    for chunk in doc.chunks:
        assert len(chunk.content) <= limits.code_max_chars
        assert chunk.content.startswith("```py\n") and chunk.content.endswith("```")
    lines = [ln for c in doc.chunks for ln in c.content.split("\n") if ln.startswith("value_")]
    assert lines == code.split("\n")  # every line once, in order, never cut


def test_every_chunk_is_bounded_and_nothing_is_lost() -> None:
    para = " ".join(f"word{i}" for i in range(2000))  # one 15k-char paragraph
    limits = ChunkLimits(max_chars=400, min_chars=100, code_max_chars=800)
    doc = parse_markdown(f"# Big\n\n{para}\n", limits)
    assert all(len(c.content) <= limits.max_chars for c in doc.chunks)
    words = " ".join(c.content for c in doc.chunks).split()
    assert [w for w in words if w.startswith("word")] == para.split()


def test_short_sibling_sections_stay_chunks_of_their_own() -> None:
    doc = parse_markdown("# A\n\nshort a\n\n# B\n\nshort b\n\n# C\n\nshort c\n")
    assert [(c.heading_path, c.content) for c in doc.chunks] == [
        ("A", "# A\n\nshort a"), ("B", "# B\n\nshort b"), ("C", "# C\n\nshort c")]


def test_a_short_section_at_the_end_of_a_long_readme_keeps_its_own_chunk() -> None:
    long_body = "\n\n".join(f"Paragraph {i} about installing the tool. " * 4 for i in range(6))
    text = (f"# Tool\n\n## Install\n\n{long_body}\n\n"
            "## Zanzibar flamingo procedure\n\nFeed the flamingos at dawn.\n")
    last = parse_markdown(text).chunks[-1]
    assert last.heading_path == "Tool > Zanzibar flamingo procedure"
    assert last.content == "## Zanzibar flamingo procedure\n\nFeed the flamingos at dawn."
    assert (last.line_start, last.line_end) == (text.count("\n") - 2, text.count("\n"))


def test_a_bare_or_short_parent_merges_into_the_subsection_after_it() -> None:
    doc = parse_markdown("# Guide\n\n## Install\n\n### Linux\n\nRun the installer.\n")
    assert [(c.heading_path, c.content) for c in doc.chunks] == [
        ("Guide > Install > Linux", "# Guide\n\n## Install\n\n### Linux\n\nRun the installer.")]


def test_lists_are_readable_text_with_nesting() -> None:
    doc = parse_markdown(
        "- top item\n  - nested **bold** item\n- [link text](http://x.y) here\n1. first\n"
    )
    text = doc.chunks[0].content
    assert "- top item" in text
    assert "  - nested bold item" in text
    assert "- link text here" in text and "http://x.y" not in text
    assert "1. first" in text


def test_tables_become_rows_of_cells() -> None:
    doc = parse_markdown("| Name | Value |\n|------|-------|\n| alpha | `1` |\n| beta | 2 |\n")
    text = doc.chunks[0].content
    assert "Name | Value" in text
    assert "alpha | `1`" in text
    assert "beta | 2" in text


def test_inline_code_and_link_text_are_preserved() -> None:
    doc = parse_markdown("Use `pip install x` and see [the docs](https://example.com).\n")
    assert doc.chunks[0].content == "Use `pip install x` and see the docs."


def test_crlf_input_parses_like_lf() -> None:
    lf = "# Title\n\nSome text here.\n\n## Sub\n\nMore text.\n"
    assert parse_markdown(lf.replace("\n", "\r\n")).chunks == parse_markdown(lf).chunks


def test_heading_text_is_embedded_with_the_chunk() -> None:
    doc = parse_markdown("# Deploy\n\n" + "Steps to follow. " * 20)
    from rifflux.core.chunker import embed_text

    chunk = doc.chunks[0]
    assert embed_text(chunk.heading_path, chunk.content).startswith("Deploy\n")


def test_chunk_indexes_are_dense_from_zero() -> None:
    body = "sentence here. " * 100
    doc = parse_markdown("\n\n".join(f"## S{i}\n\n{body}" for i in range(5)))
    assert [c.chunk_index for c in doc.chunks] == list(range(len(doc.chunks)))


def test_a_heading_is_never_alone_before_its_oversized_body() -> None:
    limits = ChunkLimits(max_chars=300, min_chars=50, code_max_chars=600)
    para = " ".join(f"w{i}" for i in range(200))
    doc = parse_markdown(f"# Intro\n\n{'x ' * 100}\n\n## Long\n\n{para}\n", limits)
    assert all(c.content.strip() not in ("# Intro", "## Long") for c in doc.chunks)
    long_first = next(c for c in doc.chunks if c.heading_path == "Intro > Long")
    assert long_first.content.startswith("## Long\n\nw0 w1")
