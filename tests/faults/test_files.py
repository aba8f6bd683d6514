"""Hostile files: other encodings, binaries with markdown names, special files, very large
files, and files that change while they are read. Nothing is lost, nothing blocks."""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import sqlite3
import subprocess
import threading
import tracemalloc
from pathlib import Path

import anyio
import pytest

from rifflux import Rifflux, Settings
from rifflux.core.decode import Binary, Decoded, decode
from rifflux.core.scan import Globs, scan_root

from ..helpers import (
    CountingEmbedder,
    eventually,
    rifflux_cli,
    watcher_started,
    without_root_powers,
    write,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("data", "encoding", "text"), [
    ("# Café\n".encode(), "utf-8", "# Café\n"),
    (codecs.BOM_UTF8 + "# Café\n".encode(), "utf-8", "# Café\n"),
    ("# Grüße\n".encode("utf-16"), "utf-16-le", "# Grüße\n"),
    (codecs.BOM_UTF16_BE + "# Grüße\n".encode("utf-16-be"), "utf-16-be", "# Grüße\n"),
    ("# Café naïve – “quoted”\n".encode("cp1252"), "cp1252", "# Café naïve – “quoted”\n"),
    ("# Ærøskøbing\n".encode("latin-1"), "cp1252", "# Ærøskøbing\n"),
])
def test_text_in_other_encodings_is_decoded(data: bytes, encoding: str, text: str) -> None:
    assert decode(data) == Decoded(text, encoding)


def test_a_few_bad_bytes_in_utf8_are_replaced_with_a_warning() -> None:
    data = ("Ünïcödé text. " * 20).encode() + b"\xff broken"
    decoded = decode(data)
    assert isinstance(decoded, Decoded) and decoded.encoding == "utf-8"
    assert decoded.text.endswith("\ufffd broken")
    assert decoded.warning is not None and "1 byte is not valid UTF-8" in decoded.warning


@pytest.mark.parametrize(("data", "kind"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "PNG image"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "JPEG image"),
    (b"%PDF-1.7\n", "PDF document"),
    (b"some text\x00with a NUL", "NUL bytes"),
])
def test_binary_files_are_recognised(data: bytes, kind: str) -> None:
    decoded = decode(data)
    assert isinstance(decoded, Binary) and kind in decoded.reason


@pytest.mark.parametrize(("data", "encoding", "text"), [
    # a short UTF-8 note with one stray byte: UTF-8 with one U+FFFD, not mojibake
    ("# Café notes\n\nnaïve résumé: ".encode() + b"\xff\n", "utf-8",
     "# Café notes\n\nnaïve résumé: \ufffd\n"),
    # legacy 8-bit text, even with a UTF-8-looking pair among its accents
    ("Réunion à Noël, café crème.\n".encode("cp1252"), "cp1252", "Réunion à Noël, café crème.\n"),
    ("Ã© est une séquence, é é é.\n".encode("cp1252"), "cp1252", "Ã© est une séquence, é é é.\n"),
])
def test_damaged_utf8_and_legacy_text_are_told_apart(
    data: bytes, encoding: str, text: str,
) -> None:
    decoded = decode(data)
    assert isinstance(decoded, Decoded) and decoded.encoding == encoding
    assert decoded.text == text


async def test_every_encoding_is_searchable_and_get_file_shows_it(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "windows.md").write_bytes("# Réunion\n\nCafé crème à Noël.\n".encode("cp1252"))
    (root / "utf16.md").write_bytes("# Übersicht\n\nStraße und Grüße.\n".encode("utf-16"))
    (root / "bom.md").write_bytes(codecs.BOM_UTF8 + b"# Plain\n\nbom marked text\n")
    (root / "damaged.md").write_bytes(("Dégâts partout. " * 30).encode() + b"\xfe tail words\n")
    (root / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        result = await rf.reindex(root)
        assert result["indexed_files"] == 4 and result["errors"] == []
        warnings = {Path(w["path"]).name: w["reason"] for w in result["warnings"]}
        assert set(warnings) == {"damaged.md", "photo.md"}
        assert "replaced by U+FFFD" in warnings["damaged.md"]
        assert "PNG image" in warnings["photo.md"]
        for query, path in (("creme", "windows.md"), ("noel", "windows.md"),
                            ("ubersicht", "utf16.md"), ("bom marked", "bom.md"),
                            ("tail words", "damaged.md")):
            hits = await rf.search(query, mode="lexical")
            assert hits and hits[0]["path"] == path, query
        found = {name: await rf.get_file(name)
                 for name in ("windows.md", "utf16.md", "bom.md", "damaged.md")}
        encodings = {name: f["encoding"] for name, f in found.items() if f is not None}
        lines = await rf.get_file("windows.md", start_line=3)
    assert encodings == {"windows.md": "cp1252", "utf16.md": "utf-16-le", "bom.md": "utf-8",
                         "damaged.md": "utf-8"}
    assert lines is not None and "text" in lines and lines["text"] == "Café crème à Noël."


async def test_a_file_that_becomes_binary_leaves_the_index(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    path = write(root, "note.md", "# Note\n\nsoon an image\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        path.write_bytes(b"\xff\xd8\xff\xe0" + os.urandom(512))
        result = await rf.reindex(root)
        assert "JPEG image" in result["warnings"][0]["reason"]
        assert await rf.search("image", mode="lexical") == []
        assert (await rf.status())["files"] == 0


async def test_a_fifo_is_never_opened_but_skipped_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, "real.md", "# Real\n\nreal words\n")
    os.mkfifo(root / "pipe.md")  # opening it for reading would block forever
    os.mkfifo(tmp_path / "argument.md")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        with anyio.fail_after(10):
            folder = await rf.reindex(root)
            argument = await rf.reindex(tmp_path / "argument.md")
    assert folder["indexed_files"] == 1
    assert "not a regular file or folder" in argument["errors"][0]["error"]


def _write_bytes_named(name: bytes, data: bytes) -> None:
    """A file at a path given as bytes (a name no ``str`` path spells as UTF-8)."""
    with open(name, "wb") as f:
        f.write(data)


async def test_a_name_that_is_not_utf8_skips_that_file_alone_with_a_warning(
        tmp_path: Path) -> None:
    """A file (or folder) named with bytes that are not UTF-8 (a Latin-1 name copied from
    an old disk) cannot be held by the index; it is said and left out, every other file
    is indexed, in a reindex and in ``rifflux index``'s output."""
    root = tmp_path / "notes"
    write(root, "real.md", "# Real\n\nkestrel words\n")
    _write_bytes_named(os.fsencode(root) + b"/caf\xe9.md", b"# Cafe\n\nfalcon words\n")
    os.mkdir(os.fsencode(root) + b"/\xffold")
    _write_bytes_named(os.fsencode(root) + b"/\xffold/inside.md", b"# Inside\n\nhawk\n")
    _write_bytes_named(os.fsencode(root) + b"/photo\xe9.png", b"\x89PNG")  # (not wanted:
    (root / ".gitignore").write_bytes(b"drafts\n")  # nor an ignored folder: no word)
    os.mkdir(os.fsencode(root) + b"/drafts")
    _write_bytes_named(os.fsencode(root) + b"/drafts/\xe9bauche.md", b"# Draft\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        result = await rf.reindex(root)
        hits = await rf.search("kestrel", mode="lexical")
    assert result["indexed_files"] == 1 and result["errors"] == []
    reasons = {w["path"]: w["reason"] for w in result["warnings"]}
    assert set(reasons) == {str(root / "caf\\xe9.md"), str(root / "\\xffold")}
    assert all("not valid UTF-8" in r and "rename it" in r for r in reasons.values())
    assert hits[0]["path"] == "real.md"
    done = rifflux_cli(tmp_path, "index", str(root), "--db", str(tmp_path / "cli.db"),
                       "--backend", "hash")
    assert done.returncode == 0, done.stderr
    assert "Indexed 2 files" not in done.stdout and "Indexed 1 file" in done.stdout
    assert f"{root}/caf\\xe9.md: skipped: its name is not valid UTF-8" in done.stderr + \
        done.stdout


async def test_the_watcher_skips_a_name_not_in_utf8_and_says_why_it_cannot_watch_a_folder(
        tmp_path: Path) -> None:
    """A file with such a name made while a folder is watched is left out with a warning;
    a folder with such a name cannot be watched (watchfiles cannot decode it): the
    watcher's status says which and what to do, and edits are still indexed (the
    folders are scanned again at each of its restarts)."""
    root = tmp_path / "notes"
    write(root, "real.md", "# Real\n\nkestrel words\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(),
                       watch_paths=[root]) as rf:
        await watcher_started(rf)
        _write_bytes_named(os.fsencode(root) + b"/new\xfe.md", b"# New\n\nowl words\n")
        write(root, "later.md", "# Later\n\nowl words\n")

        async def settled() -> bool:
            jobs = (await rf.status())["jobs"]
            return bool(await rf.search("owl", mode="lexical")) and all(
                j["status"] == "completed" for j in jobs)

        await eventually(settled, within=30)
        status = await rf.status()
        warned = [w["path"] for j in status["jobs"] if j["result"] is not None
                  for w in j["result"]["warnings"]]
        assert str(root / "new\\xfe.md") in warned and status["files"] == 2

        os.mkdir(os.fsencode(root) + b"/\xffold")  # (the watcher cannot decode it)

        async def said() -> bool:
            error = (await rf.status())["watcher"]["last_error"] or ""
            return "xFFold" in error and "not valid UTF-8" in error and "rename it" in error

        await eventually(said, within=30)
        write(root, "edit.md", "# Edit\n\nheron words\n")

        async def indexed() -> bool:
            return bool(await rf.search("heron", mode="lexical"))

        await eventually(indexed, within=60)  # (at a restart: backoff up to 30 s)


async def test_files_over_the_size_limit_are_skipped_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    write(root, "small.md", "# Small\n\nfits\n")
    write(root, "big.md", "# Big\n\n" + "word " * 3000)
    settings = Settings(db_path=tmp_path / "i.db", max_file_bytes=4096)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        result = await rf.reindex(root)
    assert result["indexed_files"] == 1
    assert "over the limit of 4,096 (max_file_bytes)" in result["warnings"][0]["reason"]


async def test_a_file_rewritten_while_it_is_read_never_mixes_two_versions(
    tmp_path: Path,
) -> None:
    root = tmp_path / "notes"
    path = write(root, "live.md", "# Live\n\nversion 0\n")
    stop = threading.Event()

    def rewrite() -> None:  # truncate, grow, replace: as fast as the disk allows
        n = 0
        while not stop.is_set():
            n += 1
            if n % 3 == 0:
                tmp = root / ".live.tmp"
                tmp.write_text(f"# Live\n\nversion {n}\n" + f"line {n}\n" * (n % 40), "utf-8")
                os.replace(tmp, path)
            else:
                path.write_text(f"# Live\n\nversion {n}\n" + f"line {n}\n" * (n % 40), "utf-8")

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
            for _ in range(30):
                await rf.reindex(root, force=True)
    finally:
        stop.set()
        writer.join()
    with sqlite3.connect(tmp_path / "i.db") as conn:
        sha, chunks = conn.execute(
            "SELECT f.sha256, group_concat(c.content, char(10)) FROM files f "
            "LEFT JOIN chunks c ON c.file_id = f.id GROUP BY f.id").fetchone()
    if chunks is None:  # read just after a truncation: the empty version, whole
        assert sha == hashlib.sha256(b"").hexdigest()
        return
    versions = {line for line in chunks.splitlines() if line.startswith("version ")}
    assert len(versions) == 1  # one version of the file, whole
    n = int(versions.pop().split()[1])
    expected = f"# Live\n\nversion {n}\n" + f"line {n}\n" * (n % 40)
    assert sha == hashlib.sha256(expected.encode()).hexdigest()  # the hash is of those bytes


def test_a_folder_of_100000_entries_is_read_as_it_comes_not_held_whole(tmp_path: Path) -> None:
    folder = tmp_path / "dump"
    folder.mkdir()
    for i in range(100_000):  # one note in ten, the rest other files
        (folder / (f"n{i}.md" if i % 10 == 0 else f"f{i}.txt")).touch()
    tracemalloc.start()
    try:
        found = scan_root(folder, Globs(("*.md",), ()))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(found.files) == 10_000
    # What is kept is the 10,000 notes (about 200 bytes each); holding the listing
    # whole took 27 MiB here.
    assert peak < 5 * 1024 * 1024, f"{peak:,} bytes"


def _without_root_powers(locked: Path) -> list[str]:
    """A command prefix under which ``locked`` cannot be listed: root reads any folder,
    so as root the process gives up the capabilities that override that (setpriv)."""
    prefix = without_root_powers()
    if prefix is None:
        pytest.skip("running as root without setpriv: file permissions cannot apply")
    if subprocess.run([*prefix, "ls", str(locked)], capture_output=True,
                      check=False).returncode == 0:
        pytest.skip("a folder without permissions can still be listed here")
    return prefix


@pytest.mark.parametrize("locked", ["notes/sub", "notes"])
def test_a_folder_that_cannot_be_listed_keeps_what_was_indexed_of_it(
    tmp_path: Path, locked: str,
) -> None:
    # A permission taken away for a moment (or a mount that is down) is not a delete:
    # the files stay indexed, with their vectors, and the run says why it skipped them.
    write(tmp_path / "notes", "top.md", "# Top\n\nquinces at the top\n")
    write(tmp_path / "notes", "sub/deep.md", "# Deep\n\nmedlars down below\n")
    index = ("--db", "i.db", "index", "notes", "--json")
    assert rifflux_cli(tmp_path, *index).returncode == 0
    (tmp_path / locked).chmod(0)
    try:
        blind = rifflux_cli(tmp_path, *index, prefix=_without_root_powers(tmp_path / locked))
    finally:
        (tmp_path / locked).chmod(0o755)
    out = json.loads(blind.stdout)
    assert out["removed_files"] == 0, blind.stdout
    assert any("cannot list directory (what was indexed under it is kept)" in e["error"]
               for e in out["errors"])
    with sqlite3.connect(tmp_path / "i.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM files").fetchone() == (2,)
    again = json.loads(rifflux_cli(tmp_path, *index).stdout)  # readable: nothing to do
    assert (again["indexed_files"], again["removed_files"], again["errors"]) == (0, 0, [])
