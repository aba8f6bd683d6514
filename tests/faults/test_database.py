"""The index file under stress: someone else's file, a damaged index, a full disk, a folder
that cannot be made. The markdown files are the truth: Rifflux keeps serving what it
can, says what is wrong, and rebuilds rather than ask anyone to delete files."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from rifflux import IndexDatabaseError, NotAnIndexError, Rifflux, RiffluxError, Settings
from rifflux.answers import search_answer
from rifflux.mcp.answers import WORDS
from rifflux.store.sqlite import recovery

from ..helpers import (
    CountingEmbedder,
    cli_env,
    eventually,
    fused,
    numbered_notes,
    rifflux_cli,
    write,
)

pytestmark = pytest.mark.anyio


def damage_pages(db: Path, start: float = 0.0) -> None:
    """Overwrite the pages from ``start`` (a fraction of the file) on, never the first one:
    still an SQLite file, no longer sound."""
    size = db.stat().st_size
    offset = max(4096, int(size * start) // 4096 * 4096)
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(os.urandom(size - offset))


async def test_an_sqlite_database_rifflux_did_not_make_is_left_untouched(
    tmp_path: Path,
) -> None:
    db = tmp_path / "app.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT)")
    before = db.read_bytes()
    with pytest.raises(NotAnIndexError, match="SQLite database that Rifflux did not make"):
        async with Rifflux(db, embedder=CountingEmbedder()):
            pass
    assert db.read_bytes() == before


async def test_a_damaged_index_is_moved_aside_and_rebuilt_from_its_roots(
    tmp_path: Path,
) -> None:
    root = numbered_notes(tmp_path / "notes", 30, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    damage_pages(db, start=0.5)  # the roots table, written first, can still be read
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        status = await rf.status()
        recovered = status["recovered"]
        assert recovered["roots"] == [str(root.resolve())]
        reason = str(recovered["reason"])
        assert "quick_check" in reason or "malformed" in reason
        moved = Path(str(recovered["moved_to"]))
        assert moved.name.startswith("i.db.corrupt-") and moved.name in os.listdir(tmp_path)

        async def rebuilt() -> bool:
            return (await rf.status())["files"] == 30

        await eventually(rebuilt)
        assert await rf.search("heron number 7", mode="lexical")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_a_destroyed_index_is_replaced_and_the_next_reindex_fills_it(
    tmp_path: Path,
) -> None:
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    damage_pages(db)  # nothing but the header survives
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        assert (await rf.status())["recovered"]["roots"] == []
        # an empty answer says the index started anew, not that nothing was ever indexed
        answer = (await search_answer(rf, "heron", "hybrid", [], {}, words=WORDS,
                                      max_chars=40_000)).answer
        assert "found damaged and has started anew" in answer["hint"]
        assert (await rf.reindex(root))["indexed_files"] == 5


async def test_a_read_only_open_reports_the_damage_and_moves_nothing(tmp_path: Path) -> None:
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    damage_pages(db)
    with pytest.raises(IndexDatabaseError, match="damaged.*left as it is"):
        async with Rifflux(settings=Settings(db_path=db, read_only=True),
                           embedder=CountingEmbedder()):
            pass
    # (the embedding lease's lock file stays from the first session: it holds nothing)
    assert sorted(os.listdir(tmp_path)) == ["i.db", "i.db.embedding.lock", "notes"]


async def test_damage_seen_by_a_search_rebuilds_the_index_at_the_next_open(
    tmp_path: Path,
) -> None:
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    with sqlite3.connect(db) as conn:  # checked just now: no check at the next open
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('checked_at', ?)",
                     (str(time.time()),))
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        damage_pages(db)  # damaged under a running instance
        with pytest.raises(IndexDatabaseError, match="damaged.*rebuilds it"):
            for _ in range(3):  # until a read reaches a damaged page
                await rf.search("heron", mode="lexical")
                await rf.get_file("n1.md")
                await rf.status()
    assert (tmp_path / "i.db.check").exists()
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        assert "recovered" in await rf.status()


async def test_a_new_index_has_its_first_routine_check_a_day_after_it_was_made(
    tmp_path: Path,
) -> None:
    # (a million-chunk index just built was checked at its first open: 7 s of reading
    # every page while its vectors loaded and its first searches ran)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(numbered_notes(tmp_path / "notes", 5, long=True))
    assert recovery.needs_check(db) is None
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'checked_at'",
                     (str(time.time() - recovery.CHECK_EVERY - 1),))
    assert recovery.needs_check(db) == "now"


def damage_table(db: Path, table: str) -> None:
    """Overwrite the root page of ``table`` (the file's header and schema stay sound, so
    only reading that table finds the damage), and mark the file checked just now."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('checked_at', ?)",
                         (str(time.time()),))
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root_page,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                                    (table,)).fetchone()
    finally:
        conn.close()  # (the last connection: its WAL goes into the file)
    assert not Path(f"{db}-wal").exists()
    with db.open("r+b") as f:
        f.seek((root_page - 1) * page_size)
        f.write(os.urandom(page_size))


async def test_the_routine_check_of_a_large_index_runs_once_it_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # quick_check reads every page: 7 s before a million-chunk index could answer. Its
    # daily check runs in the background instead, and what it finds waits for the next open
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    damage_table(db, "note_aliases")  # read by no step of opening
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'checked_at'")  # a check is due
    conn.close()
    monkeypatch.setattr(recovery, "CHECK_AT_OPEN_MOST", 0)  # every index is large now
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        assert "recovered" not in await rf.status()
        assert await rf.search("heron number 3", mode="lexical")  # it answers meanwhile
        await eventually(lambda: (tmp_path / "i.db.check").exists())
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        assert (await rf.status())["recovered"]["roots"] == [str(root.resolve())]


@pytest.mark.parametrize("table", ["changes", "embeddings"])
async def test_damage_found_while_opening_or_adopting_the_model_is_not_a_wait(
    tmp_path: Path, table: str,
) -> None:
    # No check was due, so the damage is found by a step of opening (the change log) or
    # by the model's adoption (the vectors): opening moves the file aside and rebuilds
    # it; adoption turns semantic search off at once instead of retrying, so that no
    # search waits for a model (it waited its full minute)
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    damage_table(db, table)
    with anyio.fail_after(20):
        async with Rifflux(db, embedder=CountingEmbedder()) as rf:
            hits = await rf.search("heron number 3")
            status = await rf.status()
            assert (await rf.reindex(root))["errors"] == []
    if table == "changes":
        assert status["recovered"]["roots"] == [str(root.resolve())]  # indexed again
    else:
        error = status["embedding_error"]
        assert error is not None and "damaged" in error
        assert hits and fused(hits[0])["semantic_rank"] is None


def test_a_full_disk_fails_the_job_keeps_the_index_sound_and_the_next_reindex_completes(
    tmp_path: Path,
) -> None:
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    script = (
        "import anyio, resource, signal, sys\n"
        "from rifflux import Rifflux\n"
        "async def main():\n"
        f"    async with Rifflux({str(db)!r}, embedding_backend='hash') as rf:\n"
        f"        await rf.reindex({str(root)!r})\n"
        "        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))\n"
        f"        for i in range(400):\n"
        f"            with open(f'{root}/big{{i}}.md', 'w') as f:\n"
        f"                f.write('# Big\\\\n\\\\n' + f'word{{i}} ' * 400)\n"
        "        try:\n"
        f"            await rf.reindex({str(root)!r})\n"
        "        except Exception as exc:\n"
        "            sys.stdout.write('FAILED ' + str(exc) + '\\n')\n"
        "        hits = await rf.search('heron number 3', mode='lexical')\n"
        "        sys.stdout.write(f'SEARCH {len(hits)}\\n')\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=cli_env(tmp_path), check=False)
    assert "FAILED reindex" in done.stdout, done.stdout + done.stderr
    assert "could not be written" in done.stdout or "is full" in done.stdout
    assert "internal error" not in done.stdout
    assert "SEARCH 5" in done.stdout  # searches keep answering from what was committed
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        no_chunks = conn.execute("SELECT COUNT(*) FROM files f WHERE NOT EXISTS "
                                 "(SELECT 1 FROM chunks c WHERE c.file_id = f.id)").fetchone()[0]
    assert no_chunks == 0  # no half-written file
    again = rifflux_cli(tmp_path, "--db", str(db), "--backend", "hash", "index", str(root),
                        "--json")
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM files").fetchone()[0] == 405


async def test_an_index_folder_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    blocker = write(tmp_path, "a-file", "not a folder")
    with pytest.raises(IndexDatabaseError, match="cannot create the folder .*a-file/sub"):
        async with Rifflux(blocker / "sub" / "i.db", embedder=CountingEmbedder()):
            pass


def test_indexing_a_path_that_does_not_exist_creates_no_index(tmp_path: Path) -> None:
    done = rifflux_cli(tmp_path, "--db", str(tmp_path / "new.db"), "index",
                       str(tmp_path / "nowhere"))
    assert done.returncode == 1 and "nothing to index" in done.stderr
    assert "pass existing folders or files (notes, PDFs" in done.stderr  # (not "markdown")
    assert not (tmp_path / "new.db").exists()


def _immutable(paths: list[Path], on: bool) -> bool:
    """chattr +i / -i (root on a file system that has the flag); False when unavailable."""
    try:
        done = subprocess.run(["chattr", "+i" if on else "-i", *map(str, paths)],
                              capture_output=True, check=False)
    except OSError:
        return False
    return done.returncode == 0


async def test_an_index_made_read_only_under_a_running_instance_fails_the_job_not_the_service(
    tmp_path: Path,
) -> None:
    root = numbered_notes(tmp_path / "notes", 5, long=True)
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        # the index and its WAL (not the -shm: SQLite maps it into memory, and a mapped
        # file that cannot grow ends the process with SIGBUS, whatever Rifflux does)
        files = [tmp_path / n for n in ("i.db", "i.db-wal")]
        if not _immutable(files, True):
            pytest.skip("chattr +i is not available here (needs root and ext4/xfs/btrfs)")
        try:
            write(root, "new.md", "# New\n\nthe newest heron\n")
            with pytest.raises(RiffluxError, match="failed: the index .* could not be written.*"
                               "read-only"):
                await rf.reindex(root)
            assert len(await rf.search("heron", mode="lexical")) == 5  # still serving
        finally:
            _immutable(files, False)
        again = await rf.reindex(root)
        assert again["indexed_files"] == 1
        assert await rf.search("newest", mode="lexical")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
