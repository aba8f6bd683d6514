"""The reading commands from the command line (subprocesses): note paths as people type
them, whatever the working directory holds, and an index file they cannot write."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from .helpers import rifflux_cli, without_root_powers, write_all
from .serving import serving

NOTES = {
    "README.md": "# Notes readme\n\nThe quince tree, see [[other]].\n\n#orchard\n",
    "other.md": "# Other\n\nquince jelly keeps a year\n",
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A working directory with a README.md of its own, outside the indexed notes/ that
    hold another README.md."""
    (tmp_path / "README.md").write_text("# Checkout readme\n\nnot a note\n", encoding="utf-8")
    write_all(tmp_path / "notes", NOTES)
    done = rifflux_cli(tmp_path, "--db", "index.db", "index", "notes")
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_a_path_relative_to_its_folder_wins_over_a_same_named_file_outside_the_index(
    checkout: Path,
) -> None:
    done = rifflux_cli(checkout, "--db", "index.db", "links", "README.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["notes/README.md", "links to: 1"]

    done = rifflux_cli(checkout, "--db", "index.db", "show", "README.md:1-3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "notes/README.md:1-3 (of 5 lines)",  # (as search prints it: from here)
        "1 │ # Notes readme", "2 │ ", "3 │ The quince tree, see [[other]]."]

    done = rifflux_cli(checkout, "--db", "index.db", "neighbors", "README.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1  notes/other.md  Other"]

    done = rifflux_cli(checkout, "--db", "index.db", "search", "jelly", "--mode", "lexical",
                       "--near", "README.md", "--json")
    assert done.returncode == 0, done.stderr
    assert [hit["path"] for hit in json.loads(done.stdout)["results"]] == ["other.md"]


def test_a_working_directory_file_the_index_holds_neither_way_says_both_were_tried(
    checkout: Path,
) -> None:
    (checkout / "solo.md").write_text("# Solo\n", encoding="utf-8")
    for args in (("links", "solo.md"), ("show", "solo.md:1-2"), ("neighbors", "solo.md")):
        done = rifflux_cli(checkout, "--db", "index.db", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr == (
            f"rifflux: error: solo.md is not in the index, neither as the file in the working "
            f"directory ({checkout / 'solo.md'}) nor relative to an indexed folder: give a "
            "path as `rifflux search` prints it, or `rifflux index solo.md` (which reads it, "
            "or says why it is left out)\n")
    (checkout / "notes" / "binary.md").write_bytes(b"not\x00text")  # (left out: it says why)
    assert rifflux_cli(checkout, "--db", "index.db", "index", "notes").returncode == 0
    done = rifflux_cli(checkout, "--db", "index.db", "show", str(checkout / "notes" /
                                                                 "binary.md"))
    assert done.returncode == 1 and "is not in the index, though the file is there: " \
        f"`rifflux index {checkout / 'notes' / 'binary.md'}` reads it" in done.stderr
    done = rifflux_cli(checkout, "--db", "index.db", "links", "README.md", "--root", "nope")
    assert done.returncode == 2
    assert "root 'nope' is not an indexed folder" in done.stderr


def test_the_reading_commands_read_an_index_file_they_cannot_write(checkout: Path) -> None:
    prefix = without_root_powers()
    if prefix is None:
        pytest.skip("running as root without setpriv: file permissions cannot apply")
    files = sorted(checkout.glob("index.db*"))
    for path in files:
        path.chmod(0o444)
    try:
        before = hashlib.sha256((checkout / "index.db").read_bytes()).digest()

        def run(*args: str) -> tuple[int, str, str]:
            done = rifflux_cli(checkout, "--db", "index.db", *args, prefix=prefix)
            return done.returncode, done.stdout, done.stderr

        code, out, err = run("search", "--mode", "lexical", "jelly", "--verbose")
        assert (code, out.splitlines()[0].split()[:2]) == (0, ["1.", "notes/other.md:1-3"])
        assert "this process cannot write the index" in err and "read-only" in err
        code, out, err = run("status")
        assert code == 0, err
        assert f"{checkout / 'index.db'} (read-only)" in out.splitlines()[0]
        assert "2 in 1 folder" in out
        for args, expected in ((("show", "notes/other.md:3"), "quince jelly"),
                               (("links", "notes/README.md"), "links to: 1"),
                               (("neighbors", "notes/other.md"), "README.md  Notes readme"),
                               (("tags",), "orchard"),
                               (("files",), "other.md")):
            code, out, err = run(*args)
            assert (code, err) == (0, ""), args
            assert expected in out, args

        for writes in (("index", "notes", "--force"), ("forget", "notes")):
            code, out, err = run(*writes)
            assert code == 1, writes
            assert "cannot be written" in err and "make it writable" in err, err
        # nothing was written (readers of a WAL index may make its -wal and -shm files)
        assert hashlib.sha256((checkout / "index.db").read_bytes()).digest() == before
    finally:
        for path in files:
            path.chmod(0o644)


def test_search_near_a_name_the_working_directory_also_holds_is_answered_by_the_server(
    checkout: Path,
) -> None:
    with serving(checkout / "index.db") as server:
        done = rifflux_cli(checkout, "--db", "index.db", "search", "jelly", "--mode",
                           "lexical", "--near", "README.md", "--json", "--verbose")
    assert done.returncode == 0, done.stderr
    assert f"answered by rifflux serve at {server.url}" in done.stderr  # (not searched here)
    assert [hit["path"] for hit in json.loads(done.stdout)["results"]] == ["other.md"]


def test_an_index_closed_cleanly_in_a_folder_they_cannot_write_is_read_all_the_same(
    tmp_path: Path,
) -> None:
    prefix = without_root_powers()
    if prefix is None:
        pytest.skip("running as root without setpriv: file permissions cannot apply")
    shelf = tmp_path / "shelf"  # (an index copied to read-only media, or another user's)
    write_all(shelf / "notes", NOTES)
    assert rifflux_cli(shelf, "--db", "index.db", "index", "notes").returncode == 0
    assert not list(shelf.glob("index.db-*"))  # (closed cleanly: no -wal, no -shm)
    (shelf / "index.db").chmod(0o444)
    shelf.chmod(0o555)  # (SQLite cannot make the -shm a read of a WAL file needs)
    try:
        for args, expected in ((("search", "jelly"), "notes/other.md:1-3"),
                               (("status",), "(read-only)"),
                               (("show", "notes/other.md:3"), "quince jelly")):
            done = rifflux_cli(shelf, "--db", "index.db", *args, prefix=prefix)
            assert (done.returncode, done.stderr) == (0, ""), args
            assert expected in done.stdout, args
        # a server would never see the writes that come later: refused, saying why
        served = rifflux_cli(shelf, "--db", "index.db", "serve", "--read-only", "--port", "0",
                             prefix=prefix)
        assert served.returncode == 1
        assert (f"cannot follow the index {shelf / 'index.db'}: SQLite needs to make "
                f"index.db-shm beside it") in served.stderr
    finally:
        shelf.chmod(0o755)
