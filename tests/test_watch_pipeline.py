"""The whole pipeline on a real temporary folder with the real watcher."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import Rifflux, Settings
from rifflux.types import SearchResult

from .helpers import CountingEmbedder, eventually, fused, watcher_started, watching, write

pytestmark = pytest.mark.anyio


async def found(rf: Rifflux, query: str, mode: str = "lexical") -> list[SearchResult]:
    return await rf.search(query, mode=mode, top_k=5)


async def test_existing_files_are_indexed_at_start_and_changes_followed(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "old.md", "# Old\n\nalreadythere\n")
    async with watching(tmp_path, root) as rf:
        await eventually(lambda: found(rf, "alreadythere"))
        status = await rf.status()
        assert status["watcher"]["running"] is True
        assert status["watcher"]["paths"] == [str(root.resolve())]

        write(root, "new.md", "# New\n\nfreshlycreated words\n")
        hits = await eventually(lambda: found(rf, "freshlycreated"))
        assert hits[0]["path"] == "new.md"

        write(root, "new.md", "# New\n\nnowedited words\n")
        await eventually(lambda: found(rf, "nowedited"))
        assert await found(rf, "freshlycreated") == []

        (root / "new.md").rename(root / "renamed.md")
        hits = await eventually(lambda: found(rf, "nowedited"))
        await eventually(lambda: rf.get_file("renamed.md"))

        async def old_gone() -> bool:
            return await rf.get_file("new.md") is None

        await eventually(old_gone)

        (root / "renamed.md").unlink()

        async def deleted() -> bool:
            return await found(rf, "nowedited") == []

        await eventually(deleted)

        # an editor's atomic save: write a temporary file, then rename it over the target
        tmp = root / ".old.md.swp"
        tmp.write_text("# Old\n\natomicallysaved\n", encoding="utf-8")
        os.replace(tmp, root / "old.md")
        await eventually(lambda: found(rf, "atomicallysaved"))
        assert await found(rf, "alreadythere") == []
        status = await rf.status()
        assert status["watcher"]["events_seen"] > 0 and status["watcher"]["batches"] > 0


async def test_semantic_side_catches_up_after_lexical(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    async with watching(tmp_path, root) as rf:
        await watcher_started(rf)
        write(root, "a.md", "# Zebra\n\nstriped zebra facts\n")
        await eventually(lambda: found(rf, "striped zebra facts", mode="lexical"))

        async def semantic_hit() -> bool:
            hits = await found(rf, "striped zebra facts", mode="hybrid")
            return bool(hits) and fused(hits[0])["semantic_rank"] is not None

        await eventually(semantic_hit)
        status = await rf.status()
        assert status["pending_embeddings"] == 0


async def test_watched_folder_deleted_and_recreated(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", "# A\n\nfirstincarnation\n")
    async with watching(tmp_path, root) as rf:
        await eventually(lambda: found(rf, "firstincarnation"))
        shutil.rmtree(root)

        async def gone() -> bool:
            return await found(rf, "firstincarnation") == []

        await eventually(gone)
        write(root, "b.md", "# B\n\nsecondincarnation\n")
        await eventually(lambda: found(rf, "secondincarnation"))
        write(root, "c.md", "# C\n\nthirdfile\n")
        await eventually(lambda: found(rf, "thirdfile"))
        assert (await rf.status())["watcher"]["restarts"] >= 1


async def test_watcher_crash_restarts_with_backoff(tmp_path: Path) -> None:
    from watchfiles import awatch

    calls = 0

    def flaky(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("inotify watch limit reached (injected)")
        return awatch(*args, **kwargs)

    root = tmp_path / "docs"
    root.mkdir()
    async with watching(tmp_path, root, _watch_factory=flaky) as rf:

        async def restarted() -> bool:
            w = (await rf.status())["watcher"]
            return bool(w["running"] and w["restarts"] >= 1)

        await eventually(restarted)
        assert calls == 2
        write(root, "a.md", "# A\n\nafterrestart\n")
        await eventually(lambda: found(rf, "afterrestart"))
        watcher = (await rf.status())["watcher"]
    assert watcher["restarts"] == 1 and watcher["running"]


async def _write_lock_held(db: Path) -> sqlite3.Connection:
    """A connection holding the index's write lock, as another process's would. Taken in
    a worker thread: taken on the event loop, it would stop a write of the index's own
    under way (its startup's) from ending, and wait for its lock in vain."""
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False, timeout=30)
    await anyio.to_thread.run_sync(conn.execute, "BEGIN EXCLUSIVE")
    return conn


async def test_busy_database_is_retried_then_completes(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", "# A\n\nretriedcontent\n")
    settings = Settings(db_path=tmp_path / "i.db", busy_timeout_ms=50, retry_delays=(0.2, 0.4, 0.8))
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        blocker = await _write_lock_held(tmp_path / "i.db")  # (as another process's)
        try:
            started = await rf.reindex(root, background=True)
            job_id = started["job"]["id"]

            async def waiting() -> bool:
                return (await rf.job(job_id))["status"] == "retry_wait"

            await eventually(waiting)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        done = await rf.wait_for_job(job_id)
        assert done["status"] == "completed" and done["attempts"] >= 2
        assert await found(rf, "retriedcontent")


async def test_busy_database_fails_after_three_retries(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", "# A\n\nneverindexed\n")
    settings = Settings(
        db_path=tmp_path / "i.db", busy_timeout_ms=20, retry_delays=(0.01, 0.01, 0.01)
    )
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        blocker = await _write_lock_held(tmp_path / "i.db")
        try:
            started = await rf.reindex(root, background=True)
            with anyio.fail_after(10):
                done = await rf.wait_for_job(started["job"]["id"])
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert done["status"] == "failed" and done["attempts"] == 4
        assert done["error"] is not None and "locked" in done["error"]
        # the instance keeps serving
        assert await rf.search("neverindexed") == []


async def test_shutdown_during_a_running_job_is_prompt_and_clean(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    for i in range(400):  # big enough that parsing and writing them takes seconds
        write(root, f"d{i % 20}/f{i}.md", f"# File {i}\n\n" + f"content number {i}. " * 1500)
    threads_before = own_threads()
    # a short grace period: the job is still running when it ends, and is cancelled
    settings = Settings(db_path=tmp_path / "i.db", shutdown_grace_seconds=0.1)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        job = (await rf.reindex(root, background=True))["job"]

        async def writing() -> bool:
            return (await rf.job(job["id"]))["indexed_files"] > 0

        await eventually(writing)
    with sqlite3.connect(tmp_path / "i.db") as conn:
        written = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    assert 0 < written < 400  # shutdown did not wait for the whole job
    # aiosqlite's connection threads and the parse workers are gone (anyio's idle
    # worker threads are its shared pool, not ours)
    await eventually(lambda: own_threads() <= threads_before)
    assert child_processes() == []
    # the database is consistent: every file is whole, and a new instance finishes the work
    with sqlite3.connect(tmp_path / "i.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")
        whole = conn.execute(
            "SELECT COUNT(*) FROM files f WHERE (SELECT COUNT(*) FROM chunks c "
            "WHERE c.file_id = f.id) = 0").fetchone()[0]
    assert whole == 0  # no file without its chunks
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf2:
        result = await rf2.reindex(root)
        assert result["indexed_files"] + result["skipped_files"] == 400
        assert (await rf2.status())["files"] == 400


def own_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name != "AnyIO worker thread"}


def child_processes() -> list[str]:
    kids: list[str] = []
    for task in Path("/proc/self/task").iterdir():
        kids += (task / "children").read_text().split()
    return kids


async def test_a_flood_of_events_ends_in_one_consistent_index(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    n_files, rounds = 2500, 4  # 10,000 file events
    async with watching(tmp_path, root) as rf:
        await watcher_started(rf)
        max_queued = 0
        for r in range(rounds):
            for i in range(n_files):
                (root / f"f{i}.md").write_text(f"# F{i}\n\nround{r} file{i}\n", encoding="utf-8")
            status = await rf.status()
            max_queued = max(max_queued, status["queued_jobs"])

        async def settled() -> bool:
            st = await rf.status()
            hits = await rf.search(f"round{rounds - 1}", mode="lexical", top_k=1)
            return (
                st["files"] == n_files
                and st["queued_jobs"] == 0
                and bool(hits)
                and not await rf.search("round0", mode="lexical", top_k=1)
            )

        await eventually(settled, within=90)
        status = await rf.status()
    assert max_queued <= 2  # bursts merge into the queued job
    assert status["chunks"] == n_files
    assert all(q["buffered"] <= q["max_buffer"] for q in status["queues"].values())


async def test_a_pdf_a_deck_and_code_saved_beside_a_note_are_searchable_then_gone(
        tmp_path: Path) -> None:
    from pptx import Presentation

    from .helpers import write_pdf

    root = tmp_path / "vault"
    write(root, "note.md", "# Note\n\nSee the paper.\n")
    async with watching(tmp_path, root, kinds=("default", "code")) as rf:
        await watcher_started(rf)
        scratch = tmp_path / "scratch"  # (made elsewhere, then moved in whole: a save)
        write_pdf(scratch / "paper.pdf", ["Intro", "The ptarmigan moults in autumn."])
        os.replace(scratch / "paper.pdf", root / "paper.pdf")
        deck = Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = "Budget"
        slide.placeholders[1].text = "The capercaillie survey costs little."
        deck.save(str(scratch / "talk.pptx"))
        os.replace(scratch / "talk.pptx", root / "talk.pptx")
        write(root, "count.py", "def count_grouse(moor):\n    return len(moor)\n")

        pdf = await eventually(lambda: found(rf, "ptarmigan moults"))
        assert (pdf[0]["path"], pdf[0]["kind"], pdf[0].get("page")) == ("paper.pdf", "pdf", 2)
        deck_hit = await eventually(lambda: found(rf, "capercaillie survey"))
        assert (deck_hit[0]["path"], deck_hit[0].get("slide")) == ("talk.pptx", 1)
        code = await eventually(lambda: found(rf, "count_grouse"))
        assert (code[0]["path"], code[0]["kind"], code[0]["heading_path"]) == (
            "count.py", "code", "count_grouse")

        (root / "paper.pdf").unlink()

        async def gone() -> bool:
            return await found(rf, "ptarmigan moults") == [] and \
                await rf.get_file("paper.pdf") is None

        await eventually(gone)
        assert await found(rf, "capercaillie survey")  # the others stay
