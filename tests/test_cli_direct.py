"""A one-shot search by words (and ``show``, ``links``, ``neighbors``, ``files``,
``tags``) is answered directly (``rifflux.direct``: the store's reads, the ranking and the
reads on sqlite3 in the calling thread, no actors, no event loop), and says exactly what
the library's answer says: the same JSON, the same lines, the same words on stderr and
the same exit code. What it cannot answer so is left to the library."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import Rifflux, Settings
from rifflux.cli import direct
from rifflux.cli.launch import main
from rifflux.cli.reading import show_takes_directly
from rifflux.direct import open_index
from rifflux.store.sqlite.lexicon_schema import WEIGHTS_TEXT
from rifflux.store.sqlite.recovery import mark_for_check

from .helpers import downgrade, write_all, write_pdf

NOTES = {
    "otters.md": "---\ntags: [river, animals]\n---\n# Otters\n\nOtters hold hands while "
                 "they sleep in the river. An otter eats fish.\n\n## Dens\n\nA den is a "
                 "holt; otters dig holts in the riverbank.\n",
    "bread.md": "# Bread\n\nKnead the dough, let it rise, bake it hot. The baker's otter "
                "mascot watches. See [[otters]].\n",
    "tokyo.md": "---\ntags: [travel]\n---\n# 東京\n\n東京タワーは高いです。東京の川で"
                "カワウソが泳ぐ。Tokyo tower at night.\n",
    "notes/river.md": "# River\n\nThe river runs past the holt. [[otters]] live here, "
                      "and [[bread|the bakery]] is upstream.\n",
    "notes/holding.md": "# Holding\n\nHold hands, hold on, holding pattern.\n",
}

#: Searches and their flags: words, a phrase, a prefix, CJK, CJK mixed with other words,
#: flags that shape the answer, filters (the catalog, read whole), and no results.
SEARCHES = [
    ["otter"],
    ["otters", "river"],
    ['"hold hands"'],
    ["hold*"],
    ["東京タワー"],
    ["東京", "tower"],
    ["カワウソ"],
    ["otter", "--explain", "--snippets"],
    ["otter", "--max-per-file", "1", "--top-k", "3"],
    ["river", "--top-k", "1"],
    ["otter", "--path", "notes/**"],
    ["otter", "--tag", "river"],
    ["otter", "--root", "kb", "--since", "30d"],
    ["otter", "--kind", "markdown", "--explain"],
    ["otter", "--tag", "nosuchtag"],
    ["zebra"],
    ["the", "and"],
]


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The notes indexed (hash vectors) into ``tmp_path/i.db``; the working directory
    ``tmp_path``, no RIFFLUX_* setting but the hash backend."""
    for name in [k for k in os.environ if k.startswith("RIFFLUX_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RIFFLUX_EMBEDDING_BACKEND", "hash")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    root = write_all(tmp_path / "kb", NOTES)

    async def build() -> None:
        async with Rifflux(tmp_path / "i.db", embedding_backend="hash") as rf:
            await rf.reindex(root)

    anyio.run(build)
    yield tmp_path / "i.db"


#: The launcher's direct path, as it is (the tests wrap it to see whether it answered).
_DIRECT_RUN = direct.run


def _cli(db: Path, argv: list[str], capsys: pytest.CaptureFixture[str], *,
         directly: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """``rifflux --db DB ARGV``: answered directly, or (``directly`` False) by the
    library, as before; its exit code, stdout and stderr."""
    answered: list[int | None] = []

    def spied(*args: Any) -> int | None:
        answered.append(_DIRECT_RUN(*args) if directly else None)
        return answered[-1]

    monkeypatch.setattr(direct, "run", spied)
    code = main(["--db", str(db), *argv])
    assert answered and (answered[0] is not None) == directly, "not taken as asked"
    out, err = capsys.readouterr()
    return code, out, err


def _run(db: Path, argv: list[str], capsys: pytest.CaptureFixture[str], *,
         directly: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """``rifflux --db DB search ARGV --no-server`` (``_cli``)."""
    return _cli(db, ["search", *argv, "--no-server"], capsys, directly=directly,
                monkeypatch=monkeypatch)


def _without_backlinks(answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` as a one-shot library gives it when its search ran before the catalog
    had loaded (docs/CONTRACT.md: ``backlink_count`` is absent until then)."""
    for hit in answer["results"]:
        hit.pop("backlink_count", None)
    return answer


@pytest.mark.parametrize("argv", SEARCHES, ids=" ".join)
def test_a_search_by_words_answered_directly_is_the_librarys_answer(
    index: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = [*argv, "--mode", "lexical", "--json"]
    code, out, err = _run(index, asked, capsys, directly=True, monkeypatch=monkeypatch)
    full_code, full_out, full_err = _run(index, asked, capsys, directly=False,
                                         monkeypatch=monkeypatch)
    assert (code, err) == (full_code, full_err)
    answer, library = json.loads(out), json.loads(full_out)
    filtered = any(flag in argv for flag in ("--path", "--tag", "--root", "--kind"))
    if filtered:  # (both read the catalog before they rank: every hit has its count)
        assert answer == library
        assert all("backlink_count" in hit for hit in answer["results"])
    else:  # (the library's count arrives with its catalog, after the search or before)
        assert answer == _without_backlinks(library)
        assert all("backlink_count" not in hit for hit in answer["results"])
    if argv[0] == "zebra" or "nosuchtag" in argv:
        assert code == 1 and not answer["results"] and answer["hint"]


@pytest.mark.parametrize("argv", [["otter"], ["東京", "tower", "--explain"], ["zebra"]],
                         ids=" ".join)
def test_its_lines_and_what_it_says_on_stderr_are_the_librarys(
    index: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = [*argv, "--mode", "lexical"]
    here = _run(index, asked, capsys, directly=True, monkeypatch=monkeypatch)
    assert here == _run(index, asked, capsys, directly=False, monkeypatch=monkeypatch)
    assert here[0] == 1 or "kb/" in here[1]


def _opens_directly(db: Path) -> bool:
    with open_index(Settings(db_path=db)) as found:
        return found is not None


def test_an_index_the_store_would_change_first_is_left_to_the_library(
    index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _opens_directly(index)
    mark_for_check(index)  # (checked first, and sound: read directly)
    assert _opens_directly(index)
    with sqlite3.connect(index) as conn:  # a full-text index to fill
        conn.execute("INSERT INTO meta(key, value) VALUES ('fill_fts', '1')")
    assert not _opens_directly(index)
    with sqlite3.connect(index) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'fill_fts'")
        conn.execute("DROP TABLE note_aliases")  # a table to make
    assert not _opens_directly(index)
    downgrade(index, 6)  # an older schema, to upgrade
    assert not _opens_directly(index)
    code, out, err = _run(index, ["otter", "--mode", "lexical"], capsys, directly=False,
                          monkeypatch=monkeypatch)
    assert code == 0 and "kb/otters.md" in out, err  # (upgraded by the library's opening)
    assert _opens_directly(index)
    with sqlite3.connect(index) as conn:  # a lexicon (a large index): ranked in threads
        conn.execute("INSERT INTO lexicon(id, build, upto, weights, min_rows, lengths, files)"
                     " VALUES (1, 1, 0, ?, 64, x'', x'')", (WEIGHTS_TEXT,))
    assert not _opens_directly(index)


def test_a_search_it_cannot_answer_directly_is_the_librarys(
    index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    for argv in (["otter"], ["otter", "--mode", "hybrid"],
                 ["otter", "--mode", "lexical", "--near", "kb/bread.md"]):
        answered: list[int | None] = []

        def spied(*args: Any, answered: list[int | None] = answered) -> int | None:
            answered.append(_DIRECT_RUN(*args))
            return answered[-1]

        monkeypatch.setattr(direct, "run", spied)
        code = main(["--db", str(index), "search", *argv, "--json", "--no-server"])
        out, err = capsys.readouterr()
        assert answered == [None] and code == 0, err
        assert json.loads(out)["results"]


#: Reading commands, each answered directly and by the library: whole files, lines,
#: pages of a file without any, chunks, links both ways, files of a folder, tags, and
#: what each says when it cannot.
READS = [
    ["show", "kb/otters.md"],
    ["show", "otters.md", "--json"],
    ["show", "otters.md:2-4"],
    ["show", "notes/river.md:3", "--json"],
    ["show", "otters.md:abc"],
    ["show", "otters.md:1-2", "--root", "kb"],
    ["show", "nothere.md"],
    ["show", "0123456789abcdef0123"],
    ["links", "otters.md"],
    ["links", "otters.md", "--json"],
    ["links", "notes/river.md"],
    ["links", "nothere.md"],
    ["links", "otters.md", "--root", "nope"],
    ["neighbors", "otters.md"],
    ["neighbors", "bread.md", "--depth", "2", "--json"],
    ["neighbors", "notes/holding.md"],
    ["neighbors", "otters.md", "--depth", "99"],
    ["files"],
    ["files", "--json", "--root", "kb"],
    ["files", "--root", "elsewhere"],
    ["tags"],
    ["tags", "--json"],
    ["tags", "--path", "notes/**"],
]


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_a_reading_command_answered_directly_says_what_the_library_says(
    index: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = _cli(index, argv, capsys, directly=True, monkeypatch=monkeypatch)
    assert here == _cli(index, argv, capsys, directly=False, monkeypatch=monkeypatch)
    code, out, err = here
    if code == 0:
        assert out.strip()
    else:  # (an error, or nothing to list: said on stderr)
        assert err.startswith("rifflux: ")


def test_a_word_of_hex_digits_is_shown_by_the_library_as_it_may_be_a_commit(
    index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (no chunk id, no file: the history may hold a commit starting so, and the library
    # reads the history)
    code, out, err = _cli(index, ["show", "0123abcd"], capsys, directly=False,
                          monkeypatch=monkeypatch)
    assert code != 0 and not out and err.startswith("rifflux: ")
    assert not show_takes_directly(argparse.Namespace(target="0123abcd"))
    assert show_takes_directly(argparse.Namespace(target="otters.md"))


def test_a_chunk_shown_directly_is_the_librarys(
    index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, out, _ = _run(index, ["otter", "--mode", "lexical", "--json"], capsys,
                     directly=True, monkeypatch=monkeypatch)
    chunk_id = json.loads(out)["results"][0]["chunk_id"]
    for argv in (["show", chunk_id], ["show", chunk_id, "--json"]):
        here = _cli(index, argv, capsys, directly=True, monkeypatch=monkeypatch)
        assert here == _cli(index, argv, capsys, directly=False, monkeypatch=monkeypatch)
        assert here[0] == 0 and "Otters" in here[1]


def test_lines_read_directly_say_the_file_changed_since_it_was_indexed(
    index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    note = index.parent / "kb" / "bread.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nA new line.\n", encoding="utf-8")
    asked = ["show", "bread.md", "--json"]
    here = _cli(index, asked, capsys, directly=True, monkeypatch=monkeypatch)
    assert here == _cli(index, asked, capsys, directly=False, monkeypatch=monkeypatch)
    shown = json.loads(here[1])
    assert shown["changed_since_indexed"] is True and "A new line." in shown["text"]


@pytest.mark.parametrize("argv", [["search", "otter", "--mode", "lexical"],
                                  ["search", " ", "--mode", "lexical"], ["files"]],
                         ids=" ".join)
def test_a_file_that_is_no_index_is_left_to_the_library_which_says_so_in_its_order(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    foreign = tmp_path / "theirs.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE accounts(id INTEGER PRIMARY KEY)")
    answered: list[int | None] = []

    def spied(*args: Any) -> int | None:
        answered.append(_DIRECT_RUN(*args))
        return answered[-1]

    monkeypatch.setattr(direct, "run", spied)
    code = main(["--db", str(foreign), *argv])
    _, err = capsys.readouterr()
    assert answered == [None] and code == 2, err
    empty = argv[1:2] == [" "]
    assert ("query is empty" in err) == empty  # (checked before the index is opened)
    assert ("did not make" in err) != empty


#: A folder of every part a search's answer has now: a note and its copy (each text once,
#: its other places in ``also_in``), a PDF (hits on a page), source code (a function a
#: note names more often than its definition does: the definition first), and notes
#: linking to the PDF and to one of its pages.
MIXED = {
    "otters.md": "# Otters\n\nThe otter swims in the river at dusk.\n\n## Holts\n\nAn otter "
                 "rests in its holt by day.\n",
    "copy/otters.md": "# Otters\n\nThe otter swims in the river at dusk.\n\n## Holts\n\nAn "
                      "otter rests in its holt by day.\n",
    "reading.md": "# Reading\n\nThe otter survey is in [[paper.pdf]]; its dens are on "
                  "[[paper.pdf#page=2]].\n",
    "tools/otter.py": "def feed_otter(fish):\n    \"\"\"Give the otter its fish.\"\"\"\n"
                      "    return fish\n",
    "feeding.md": "# Feeding\n\nCall feed_otter at dusk: feed_otter twice, feed_otter "
                  "with fish, never feed_otter at noon.\n",
}
PAPER = ["Otter survey\nThe otter was counted on every river of the county.",
         "Dens\nEach otter holt was mapped beside the water.",
         "Methods\nSpraints were collected along the banks."]

#: Searches over that folder: each text once (and every copy), a page of a PDF, code,
#: and the kind and path filters, alone and together.
MIXED_SEARCHES = [
    ["otter"],
    ["otter", "--duplicates", "all"],
    ["otter", "--top-k", "3", "--explain"],
    ["holt", "--snippets"],
    ["otter", "--max-per-file", "1"],
    ["feed_otter"],
    ["feed_otter", "--explain", "--snippets"],
    ["otter", "--kind", "pdf"],
    ["otter", "--kind", "code"],
    ["otter", "--kind", "pdf", "--kind", "markdown", "--explain"],
    ["otter", "--kind", "docx"],
    ["otter", "--path", "copy/**"],
    ["otter", "--path", "*.md", "--duplicates", "all"],
    ["otter", "--path", "*.pdf", "--kind", "pdf"],
]


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``MIXED`` and ``PAPER`` (kb/paper.pdf) indexed with code (hash vectors) into
    ``tmp_path/i.db``, as ``index`` is."""
    for name in [k for k in os.environ if k.startswith("RIFFLUX_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RIFFLUX_EMBEDDING_BACKEND", "hash")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    root = write_all(tmp_path / "kb", MIXED)
    write_pdf(root / "paper.pdf", PAPER, outline=["Otter survey", "Dens", "Methods"])

    async def build() -> None:
        async with Rifflux(tmp_path / "i.db", embedding_backend="hash",
                           kinds=["default", "code"]) as rf:
            result = await rf.reindex(root)
            assert result["indexed_files"] == 6 and not result["errors"], result

    anyio.run(build)
    yield tmp_path / "i.db"


@pytest.mark.parametrize("argv", MIXED_SEARCHES, ids=" ".join)
def test_copies_pages_code_and_kinds_answered_directly_are_the_librarys(
    mixed: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = [*argv, "--mode", "lexical", "--json"]
    code, out, err = _run(mixed, asked, capsys, directly=True, monkeypatch=monkeypatch)
    full_code, full_out, full_err = _run(mixed, asked, capsys, directly=False,
                                         monkeypatch=monkeypatch)
    assert (code, err) == (full_code, full_err)
    answer, library = json.loads(out), json.loads(full_out)
    if any(flag in argv for flag in ("--path", "--kind")):
        assert answer == library
    else:
        assert answer == _without_backlinks(library)
    hits = answer["results"]
    kinds = [argv[i + 1] for i, flag in enumerate(argv) if flag == "--kind"]
    if kinds == ["docx"]:  # (none: the hint says the filters left nothing)
        assert code == 1 and not hits and "filters" in answer["hint"]
        return
    assert code == 0 and hits, err
    if kinds:
        assert {h["kind"] for h in hits} <= set(kinds) and hits
    if "pdf" in kinds or argv == ["otter"]:
        assert any(h["kind"] == "pdf" and h["page"] >= 1 for h in hits)
    if argv[0] == "feed_otter" or kinds == ["code"]:  # (its definition, above the note)
        assert hits[0]["kind"] == "code" and hits[0]["path"] == "tools/otter.py"
    if argv[0] == "feed_otter":
        assert [h["path"] for h in hits] == ["tools/otter.py", "feeding.md"]
        if "--explain" in argv:
            assert hits[0]["explain"]["definition"] is True
            assert hits[0]["explain"]["lexical_rank"] == 2  # (moved first)
    texts = [(h["heading_path"], h["snippet"]) for h in hits]
    copies = [h for h in hits if h.get("also_in")]
    notes = argv[0] in ("otter", "holt") and (not kinds or "markdown" in kinds)
    if not notes or "--duplicates" in argv or "copy/**" in argv:
        assert not copies  # (no note, every copy, or the one copy within the filters)
    else:  # (each text once, at its first place: the copy's other place named)
        assert copies and len(texts) == len(set(texts))
        assert all(h["path"] == "copy/otters.md" and h["also_in_count"] == 1
                   and [p["path"] for p in h["also_in"]] == ["otters.md"] for h in copies)
    if "--duplicates" in argv:
        assert {"copy/otters.md", "otters.md"} <= {h["path"] for h in hits}


@pytest.mark.parametrize("argv", [["otter"], ["holt", "--kind", "pdf", "--explain"],
                                  ["otter", "--path", "*.md"], ["otter", "--duplicates", "all"]],
                         ids=" ".join)
def test_copies_and_pages_print_as_the_library_prints_them(
    mixed: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = [*argv, "--mode", "lexical"]
    here = _run(mixed, asked, capsys, directly=True, monkeypatch=monkeypatch)
    assert here == _run(mixed, asked, capsys, directly=False, monkeypatch=monkeypatch)
    code, out, _ = here
    notes = "--duplicates" not in argv and "pdf" not in argv
    assert code == 0 and ("also in: kb/otters.md" in out) == notes
    # (a PDF's hit on its page, as paper.pdf:2; none among the notes alone)
    assert ("kb/paper.pdf:2  Dens" in out) == ("*.md" not in argv)


#: Reads of a PDF (a page, pages, the file whole), of code, and of the links to the PDF.
MIXED_READS = [
    ["show", "paper.pdf:2"],
    ["show", "paper.pdf:1-2", "--json"],
    ["show", "paper.pdf", "--json"],
    ["show", "tools/otter.py:1-2"],
    ["show", "copy/otters.md", "--json"],
    ["links", "paper.pdf"],
    ["links", "paper.pdf", "--json"],
    ["links", "reading.md", "--json"],
    ["neighbors", "paper.pdf", "--json"],
    ["neighbors", "reading.md"],
    ["files", "--json"],
    ["files"],
]


@pytest.mark.parametrize("argv", MIXED_READS, ids=" ".join)
def test_reads_of_a_pdf_code_and_copies_answered_directly_are_the_librarys(
    mixed: Path, argv: list[str], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = _cli(mixed, argv, capsys, directly=True, monkeypatch=monkeypatch)
    assert here == _cli(mixed, argv, capsys, directly=False, monkeypatch=monkeypatch)
    code, out, err = here
    assert code == 0 and out.strip(), err
    if argv[:2] == ["show", "paper.pdf:2"]:
        assert "holt was mapped" in out and "Spraints" not in out
    if argv[:2] == ["links", "paper.pdf"]:
        assert "reading.md" in out
    if argv[:2] == ["files"]:
        assert "paper.pdf" in out and "otter.py" in out
