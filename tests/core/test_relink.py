"""Links kept when a note moves (issue 26): ``[[Name]]``, ``[[Name#Heading]]``,
``[[Name|alias]]``, ``![[Name]]`` and relative markdown links are rewritten to the new
path, in their own style; code, other notes' links and links by alias are not touched."""

from __future__ import annotations

from rifflux.core.note_text import NoteText
from rifflux.core.relink import Notes, relink

BEFORE = ["Home.md", "projects/Alpha.md", "projects/notes.md", "Beta.md", "other/Alpha.md"]
MOVED = ("projects/Alpha.md", "archive/2026/Alpha Old.md")
AFTER = [MOVED[1] if p == MOVED[0] else p for p in BEFORE]


def moved(text: str, was: str, now: str | None = None) -> tuple[str, list[str]]:
    edits, done = relink(text, was=was, now=now or was, before=Notes(BEFORE),
                         after=Notes(AFTER), moved=MOVED)
    out = NoteText.of(text.encode(), was).apply(edits)[0].decode()
    return out, [f"{d.line}: {d.before} -> {d.after}" for d in done]


def test_every_form_of_link_to_the_moved_note_follows_it() -> None:
    text = ("# Home\n\nSee [[projects/Alpha]], [[projects/Alpha#Plan|the plan]] and "
            "![[projects/Alpha]].\n[read](projects/Alpha.md#plan \"title\") and "
            "[x](<projects/Alpha.md>)\n")
    out, done = moved(text, "Home.md")
    assert out == ("# Home\n\nSee [[archive/2026/Alpha Old]], [[archive/2026/Alpha Old#Plan|"
                   "the plan]] and ![[archive/2026/Alpha Old]].\n[read](archive/2026/"
                   "Alpha%20Old.md#plan \"title\") and [x](<archive/2026/Alpha Old.md>)\n")
    assert len(done) == 5 and done[0].startswith("3: [[projects/Alpha]] -> ")


def test_a_bare_name_stays_bare_when_it_finds_the_note_and_relative_stays_relative() -> None:
    text = "[[Alpha]] [[Alpha.md|a]] and [up](../Home.md) [side](./notes.md)\n"
    # (from projects/notes.md the nearest Alpha is projects/Alpha: it must keep finding it)
    out, _ = moved(text, "projects/notes.md")
    assert out == ("[[Alpha Old]] [[Alpha Old.md|a]] and [up](../Home.md) [side](./notes.md)\n")


def test_a_link_the_move_would_hand_to_another_note_of_the_name_keeps_its_note() -> None:
    # from projects/notes.md, [[Alpha]] finds projects/Alpha.md (the nearest); moved to
    # archive/Alpha.md, the bare name would find other/Alpha.md (a shorter path) instead
    move = ("projects/Alpha.md", "archive/Alpha.md")
    after = Notes([move[1] if p == move[0] else p for p in BEFORE])
    assert after.resolve("projects/notes.md", "wikilink", "Alpha") == "other/Alpha.md"
    edits, _ = relink("[[Alpha]]\n", was="projects/notes.md", now="projects/notes.md",
                      before=Notes(BEFORE), after=after, moved=move)
    assert NoteText.of(b"[[Alpha]]\n", "n.md").apply(edits)[0] == b"[[archive/Alpha]]\n"
    # Home's [[Alpha]] found other/Alpha.md before and after: it stays
    assert relink("[[Alpha]]\n", was="Home.md", now="Home.md", before=Notes(BEFORE),
                  after=after, moved=move) == ([], [])


def test_code_comments_and_links_elsewhere_are_left_as_they_are() -> None:
    text = ("`[[projects/Alpha]]`\n\n```\n[[projects/Alpha]]\n```\n\n<!-- [[projects/Alpha]] -->"
            "\n[[Beta]] [web](https://x.org/projects/Alpha.md) [[Missing]]\n")
    assert moved(text, "Home.md") == (text, [])


def test_the_moved_notes_own_relative_links_still_reach_their_notes() -> None:
    text = "[home](../Home.md) and [notes](notes.md#top) and [[Beta]] and [[#Local]]\n"
    out, _ = moved(text, MOVED[0], MOVED[1])
    assert out == "[home](../../Home.md) and [notes](../../projects/notes.md#top) and " \
                  "[[Beta]] and [[#Local]]\n"


def test_the_moved_notes_relative_links_to_files_still_reach_them() -> None:
    # a PDF or a Word file the index reads is linked to as a note is; an image is not
    files = [*BEFORE, "projects/files/report.docx", "papers/paper.pdf"]
    after = [MOVED[1] if p == MOVED[0] else p for p in files]
    text = ("[report](files/report.docx#Totals) and [[paper.pdf]] and "
            "[paper](../papers/paper.pdf) and ![pic](files/pic.png)\n")
    edits, _ = relink(text, was=MOVED[0], now=MOVED[1], before=Notes(files),
                      after=Notes(after), moved=MOVED)
    out = NoteText.of(text.encode(), MOVED[0]).apply(edits)[0].decode()
    assert out == ("[report](../../projects/files/report.docx#Totals) and [[paper.pdf]] and "
                   "[paper](../../papers/paper.pdf) and ![pic](files/pic.png)\n")


def test_crlf_notes_keep_their_line_breaks() -> None:
    text = "a\r\n[[projects/Alpha]]\r\n"
    edits, _ = relink(NoteText.of(text.encode(), "Home.md").text, was="Home.md", now="Home.md",
                      before=Notes(BEFORE), after=Notes(AFTER), moved=MOVED)
    out = NoteText.of(text.encode(), "Home.md").apply(edits)[0]
    assert out == b"a\r\n[[archive/2026/Alpha Old]]\r\n"
