"""Editing a note's text (issue 26): edits touch only what they name, every other byte
(front matter, line breaks, encoding) is kept, and a find that does not fit says where
the text is."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rifflux.config import DEFAULT_EXCLUDE, DEFAULT_INCLUDE
from rifflux.core.note_edits import (
    append,
    find_replace,
    prepend,
    replace_section,
    with_front_matter,
)
from rifflux.core.note_paths import note_path
from rifflux.core.note_text import NoteText
from rifflux.core.scan import Globs
from rifflux.errors import InvalidArgumentError, NotWritableError

NOTE = ("---\ntitle: Plan\ntags: [a]\n---\n# Plan\n\nIntro text.\n\n## Decisions\n\n"
        "We chose SQLite.\n\n### Why\n\nIt is one file.\n\n## Open\n\nNothing yet.\n")


def edited(data: bytes, make: str, *args: str) -> bytes:
    note = NoteText.of(data, "n.md")
    edits = {"append": lambda: [append(note, *args)], "prepend": lambda: [prepend(note, *args)],
             "section": lambda: [replace_section(note, args[0], args[1], "n.md")],
             "find": lambda: find_replace(note, args[0], args[1], "n.md")}[make]()
    return note.apply(edits)[0]


def test_append_adds_a_block_after_a_blank_line_and_keeps_every_byte_before_it() -> None:
    data = NOTE.replace("\n", "\r\n").encode()
    out = edited(data, "append", "Later: moved to Postgres.")
    assert out == data + b"\r\nLater: moved to Postgres.\r\n"


def test_prepend_goes_right_after_the_front_matter() -> None:
    out = edited(NOTE.encode(), "prepend", "> Draft")
    assert out.decode() == NOTE.replace("---\n# Plan", "---\n> Draft\n\n# Plan")


def test_replace_section_replaces_the_text_and_subsections_up_to_the_next_heading() -> None:
    out = edited(NOTE.encode(), "section", "## Decisions", "We chose Postgres.").decode()
    assert out == NOTE.replace("We chose SQLite.\n\n### Why\n\nIt is one file.\n",
                               "We chose Postgres.\n")


def test_a_heading_in_a_code_block_is_not_a_section() -> None:
    text = "# A\n\n```\n## Fake\n```\n\n## Real\n\nold\n"
    with pytest.raises(InvalidArgumentError, match="no heading 'Fake'.*A > Real"):
        edited(text.encode(), "section", "Fake", "x")
    assert edited(text.encode(), "section", "Real", "new").decode() == \
        text.replace("old", "new")


def test_two_headings_of_one_name_are_told_apart_by_breadcrumb() -> None:
    text = "# A\n\n## Notes\n\none\n\n# B\n\n## Notes\n\ntwo\n"
    with pytest.raises(InvalidArgumentError, match=r"2 headings 'Notes'.*line 3.*line 9"):
        edited(text.encode(), "section", "Notes", "x")
    out = edited(text.encode(), "section", "B > Notes", "three").decode()
    assert out == text.replace("two", "three")


def test_find_that_occurs_twice_says_where_and_replace_all_replaces_both() -> None:
    text = "alpha\nbeta\nalpha\n"
    with pytest.raises(InvalidArgumentError, match="2 times.*lines 1, 3.*replace_all"):
        edited(text.encode(), "find", "alpha", "x")
    note = NoteText.of(text.encode(), "n.md")
    out, _, lines = note.apply(find_replace(note, "alpha", "omega", "n.md", replace_all=True))
    assert (out, lines) == (b"omega\nbeta\nomega\n", [(1, 1), (3, 3)])


def test_find_that_is_not_there_points_at_text_like_it() -> None:
    with pytest.raises(InvalidArgumentError, match="not found.*line 7: copy it exactly"):
        edited(NOTE.encode(), "find", "intro   TEXT.", "x")


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32", "cp1252"])
def test_an_edit_keeps_the_encoding_and_its_byte_order_mark(encoding: str) -> None:
    data = "# Café\r\n\r\nCrème brûlée.\r\n".encode(encoding)
    out = edited(data, "find", "brûlée", "flambée")
    assert out == "# Café\r\n\r\nCrème flambée.\r\n".encode(encoding)
    assert out.startswith({"utf-8-sig": codecs.BOM_UTF8, "cp1252": b"#"}.get(encoding,
                                                                              data[:2]))


def test_text_an_encoding_cannot_hold_is_refused_and_damaged_bytes_are_not_edited() -> None:
    with pytest.raises(InvalidArgumentError, match="cp1252, which cannot hold"):
        edited("Crème\n".encode("cp1252"), "append", "日本")
    with pytest.raises(InvalidArgumentError, match="not valid utf-8"):
        edited("Crème brûlée ".encode() + b"\xff\n", "append", "more")


@given(st.lists(st.tuples(st.text(alphabet="ab #\t-", max_size=12),
                          st.sampled_from(["\n", "\r\n", "\r", ""])), max_size=12),
       st.text(alphabet="xyz\n", min_size=1, max_size=10).filter(str.strip))
def test_an_append_never_changes_a_byte_before_it(lines: list[tuple[str, str]],
                                                  added: str) -> None:
    data = "".join(text + brk for text, brk in lines[:-1]).encode()
    data += "".join(lines[-1]).encode() if lines else b""
    out = edited(data, "append", added)
    assert out.startswith(data)
    assert added.strip("\n").replace("\n", "") in out.decode().replace("\r", "").replace(
        "\n", "")


def test_front_matter_gets_the_title_and_the_tags_added_to_its_own() -> None:
    content = "---\ntitle: old\ntags:\n  - a\n  - b\nstatus: draft\n---\nBody.\n"
    assert with_front_matter(content, "New: plan", ["c", "#a"]) == (
        '---\ntitle: "New: plan"\ntags: [a, b, c]\nstatus: draft\n---\nBody.\n')
    assert with_front_matter("Body.\n", "T", ["x"]) == "---\ntitle: T\ntags: [x]\n---\nBody.\n"
    with pytest.raises(InvalidArgumentError, match="one word"):
        with_front_matter("Body.\n", None, ["two words"])


GLOBS = Globs(DEFAULT_INCLUDE, DEFAULT_EXCLUDE)


@pytest.mark.parametrize(("path", "why"), [
    ("", "empty"), ("/etc/x.md", "absolute"), ("~/x.md", "absolute"),
    ("a/../../x.md", r"'\.\.'"), ("a\\b.md", "backslash"), ("notes.txt", "end in '.md'"),
    (".rifflux-trash/x.md", "trash"), ("node_modules/x.md", "would not be indexed"),
    ("a\x00.md", "control"),
])
def test_paths_a_note_may_not_have_are_refused_saying_why(path: str, why: str) -> None:
    with pytest.raises(NotWritableError, match=why):
        note_path(path, GLOBS)


def test_a_path_is_made_plain() -> None:
    assert note_path("./a//b/./c.md", GLOBS) == "a/b/c.md"
