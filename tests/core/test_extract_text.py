"""Plain text as the indexer reads it (``core.extract.text``): ``.txt`` by paragraphs,
reStructuredText titles (underlined, over- and underlined), Org headlines and AsciiDoc
titles as breadcrumbs, each chunk at its lines; a binary file with a text name is
skipped, saying what it is."""

from __future__ import annotations

from pathlib import Path

from rifflux.core.packing import ChunkLimits

from ..formats import PNG, chunks_of, indexed, prepared, skipped
from ..helpers import spans_point_at_the_text

#: Chunks as small as their sections (short sections are kept apart, not merged).
SMALL = ChunkLimits(max_chars=1000, min_chars=0)


def crumbs_and_lines(name: str, text: str) -> list[tuple[str, int, int]]:
    doc = chunks_of(name, text.encode("utf-8"), SMALL)
    spans_point_at_the_text(text, doc.chunks)
    return [(c.heading_path, c.line_start, c.line_end) for c in doc.chunks]


def test_a_txt_file_is_chunked_by_paragraphs_at_their_lines() -> None:
    paragraph = " ".join(["Herons stand still in the shallows, waiting for fish to pass."] * 8)
    text = f"{paragraph}\nsecond line of the first paragraph\n\n\n{paragraph}\n\nThe end.\n"
    doc = chunks_of("notes.txt", text.encode(), ChunkLimits(max_chars=600, min_chars=0))
    assert [(c.heading_path, c.line_start, c.line_end) for c in doc.chunks] == [
        ("", 1, 2), ("", 5, 7)]
    assert doc.chunks[0].content == f"{paragraph}\nsecond line of the first paragraph"
    assert doc.chunks[1].content.endswith("\n\nThe end.")
    spans_point_at_the_text(text, doc.chunks)


def test_rst_titles_underlined_and_overlined_are_breadcrumbs_by_their_style() -> None:
    text = ("=============\n"
            " Field Notes\n"
            "=============\n"
            "\n"
            "Intro about herons.\n"
            "\n"
            "Wading birds\n"
            "============\n"
            "\n"
            "Herons wade.\n"
            "\n"
            "Feeding\n"
            "-------\n"
            "\n"
            "They eat fish.\n"
            "\n"
            "Songbirds\n"
            "=========\n"
            "\n"
            "Wrens sing.\n")
    assert crumbs_and_lines("notes.rst", text) == [
        ("Field Notes", 2, 5),
        ("Field Notes > Wading birds", 7, 10),
        ("Field Notes > Wading birds > Feeding", 12, 15),
        ("Field Notes > Songbirds", 17, 20),
    ]
    doc = chunks_of("notes.rst", text.encode(), SMALL)
    # the adornment lines are in no chunk: the overline neither, nor its own chunk
    assert all("===" not in c.content and "---" not in c.content for c in doc.chunks)
    assert doc.chunks[0].content == " Field Notes\n\nIntro about herons."  # (as written)


def test_an_rst_transition_and_a_short_underline_are_not_titles() -> None:
    text = ("Some intro text.\n\n----------\n\nAfter a transition.\n\n"
            "Too long a title\n=====\n\nBody.\n")
    doc = chunks_of("notes.rst", text.encode(), SMALL)
    assert {c.heading_path for c in doc.chunks} == {""}
    assert "Too long a title\n=====" in "\n".join(c.content for c in doc.chunks)


def test_org_headlines_are_breadcrumbs_by_their_stars() -> None:
    text = ("#+TITLE: Garden log\n"
            "* Vegetables\n"
            "Tomatoes ripen in August.\n"
            "** Beans\n"
            "Runner beans climb.\n"
            "*** Pests\n"
            "Blackfly on the beans.\n"
            "* Flowers\n"
            "Dahlias need staking.\n")
    assert crumbs_and_lines("garden.org", text) == [
        ("", 1, 1),
        ("Vegetables", 2, 3),
        ("Vegetables > Beans", 4, 5),
        ("Vegetables > Beans > Pests", 6, 7),
        ("Flowers", 8, 9),
    ]


def test_asciidoc_titles_are_breadcrumbs_by_their_equals_signs() -> None:
    text = ("= Field Guide\n"
            "Ada Lovelace\n"
            "\n"
            "== Owls\n"
            "\n"
            "Owls hunt at night.\n"
            "\n"
            "=== Barn owl\n"
            "\n"
            "A heart shaped face.\n"
            "\n"
            "== Hawks\n"
            "\n"
            "Hawks hunt by day.\n")
    assert crumbs_and_lines("guide.adoc", text) == [
        ("Field Guide", 1, 2),
        ("Field Guide > Owls", 4, 6),
        ("Field Guide > Owls > Barn owl", 8, 10),
        ("Field Guide > Hawks", 12, 14),
    ]


def test_headings_in_another_style_are_only_text() -> None:
    text = "* Not a headline\n\n== Not a title\n\nPlain words.\n"
    doc = chunks_of("notes.txt", text.encode(), SMALL)
    assert [c.heading_path for c in doc.chunks] == [""]
    assert "* Not a headline" in doc.chunks[0].content


def test_a_binary_file_named_txt_is_skipped_saying_what_it_is(tmp_path: Path) -> None:
    png = skipped(prepared(tmp_path, "image.txt", PNG))
    assert png == "not text: a PNG image with a .txt name; it is skipped"
    noise = skipped(prepared(tmp_path, "noise.txt", bytes(range(256)) * 4))
    assert noise == ("not text: it contains NUL bytes (a binary file with a .txt name?); "
                     "it is skipped")


def test_a_text_file_in_a_legacy_encoding_is_read_and_says_so(tmp_path: Path) -> None:
    result, doc = indexed(tmp_path, "old.txt", "Caf\xe9 cr\xe8me, na\xefve.\n".encode("cp1252"))
    assert result.encoding == "cp1252" and result.kind == "text"
    assert doc.chunks[0].content == "Café crème, naïve."
