"""Incremental indexing, roots, bad files and model switches through the public API."""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import IndexDatabaseError, Rifflux, SchemaVersionError
from rifflux.types import BackgroundReindex

from .helpers import CountingEmbedder, GatedEmbedder, eventually, write

pytestmark = pytest.mark.anyio

SECTION = "Sentence number {i} talks about topic {i} in some detail. " * 6


def doc(n: int, edit: int | None = None) -> str:
    parts = ["# Guide\n"]
    for i in range(n):
        body = SECTION.format(i=i)
        if i == edit:
            body += " An edited sentence."
        parts.append(f"## Part {i}\n\n{body}\n")
    return "\n".join(parts)


async def test_noop_reindex_skips_everything(tmp_path: Path, embedder: CountingEmbedder) -> None:
    root = tmp_path / "docs"
    for i in range(5):
        write(root, f"f{i}.md", doc(3))
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        first = await rf.reindex(root)
        embedded = len(embedder.embedded)
        second = await rf.reindex(root)
    assert first["indexed_files"] == 5 and first["skipped_files"] == 0
    assert second["indexed_files"] == 0 and second["skipped_files"] == 5
    assert len(embedder.embedded) == embedded
    # identical files share vectors: 3 distinct sections (+ heading) embedded once
    assert embedded == len(set(embedder.embedded))


async def test_touched_identical_file_only_updates_metadata(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    path = write(root, "a.md", doc(3))
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(root)
        before = await rf.get_file("a.md")
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        touched = await rf.reindex(root)
        after = await rf.get_file("a.md")
        again = await rf.reindex(root)
    assert touched["indexed_files"] == 0 and touched["skipped_files"] == 1
    assert before is not None and after is not None
    assert [c["chunk_id"] for c in after["chunks"]] == [c["chunk_id"] for c in before["chunks"]]
    assert again["skipped_files"] == 1


async def test_editing_one_section_reembeds_one_chunk(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    path = write(root, "a.md", doc(6))
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(root)
        before = len(embedder.embedded)
        path.write_text(doc(6, edit=3), encoding="utf-8")
        result = await rf.reindex(root)
        new = embedder.embedded[before:]
        hits = await rf.search("edited sentence", mode="lexical")
    assert result["indexed_files"] == 1
    assert len(new) == 1 and "An edited sentence." in new[0]
    assert hits and hits[0]["heading_path"] == "Guide > Part 3"


async def test_moving_a_file_reembeds_nothing(tmp_path: Path, embedder: CountingEmbedder) -> None:
    root = tmp_path / "docs"
    write(root, "old/place.md", doc(4))
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(root)
        before = len(embedder.embedded)
        (root / "new").mkdir()
        (root / "old" / "place.md").rename(root / "new" / "place.md")
        result = await rf.reindex(root)
        assert await rf.get_file("old/place.md") is None
        moved = await rf.get_file("new/place.md")
        status = await rf.status()
    assert result["indexed_files"] == 1 and result["removed_files"] == 1
    assert len(embedder.embedded) == before
    assert moved is not None and status["pending_embeddings"] == 0


async def test_force_rechunks_but_reuses_vectors(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", doc(3))
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(root)
        before = len(embedder.embedded)
        forced = await rf.reindex(root, force=True)
    assert forced["indexed_files"] == 1
    assert len(embedder.embedded) == before


async def test_two_roots_with_the_same_relative_path_never_collide(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "notes/readme.md", "# Alpha\n\nalpha apples only\n")
    write(b, "notes/readme.md", "# Beta\n\nbeta bananas only\n")
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        result = await rf.reindex(paths=[a, b])
        assert result["indexed_files"] == 2 and len(result["indexed_paths"]) == 2
        apples = await rf.search("apples", mode="lexical")
        bananas = await rf.search("bananas", mode="lexical")
        assert apples[0]["root"] == str(a.resolve()) and bananas[0]["root"] == str(b.resolve())
        assert apples[0]["path"] == bananas[0]["path"] == "notes/readme.md"
        # reindexing one location never deletes what another location indexed
        (a / "notes" / "readme.md").unlink()
        await rf.reindex(a)
        assert await rf.search("apples", mode="lexical") == []
        assert await rf.search("bananas", mode="lexical")
        assert (await rf.status())["files"] == 1


async def test_bad_files_are_reported_and_the_rest_indexed(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    write(root, "good.md", "# Good\n\nreadable words here\n")
    (root / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve text\n".encode("latin-1"))
    os.symlink("/proc/self/mem", root / "unreadable.md")  # read() fails even for root
    os.symlink(root / "nowhere.md", root / "broken.md")
    missing = tmp_path / "does-not-exist"
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        result = await rf.reindex(paths=[root, missing])
        hits = await rf.search("readable", mode="lexical")
    errors = {Path(e["path"]).name: e["error"] for e in result["errors"]}
    assert result["indexed_files"] == 2 and hits  # good.md, and latin1.md as cp1252
    assert "latin1.md" not in errors
    assert "unreadable.md" in errors and "broken.md" in errors
    assert "not found" in errors["does-not-exist"]
    assert result["indexed_paths"] == [str(root)]  # what was indexed; the rest: errors


async def test_a_file_that_turns_bad_keeps_its_previous_index(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    path = write(root, "a.md", "# Title\n\nfirst version words\n")
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(root)
        path.unlink()
        os.symlink("/proc/self/mem", path)  # a file whose read fails, even for root
        result = await rf.reindex(root)
        assert result["errors"] and await rf.search("first version", mode="lexical")


async def test_directory_symlink_loop_does_not_hang(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    write(root, "sub/a.md", "# A\n\nloop safe\n")
    os.symlink(root, root / "sub" / "back")
    os.symlink(root / "sub" / "a.md", root / "alias.md")
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        with anyio.fail_after(10):
            result = await rf.reindex(root)
    assert result["indexed_files"] == 1  # the file, once; its in-root link is skipped


async def test_model_switch_reembeds_and_never_mixes(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", doc(3))
    first, second = CountingEmbedder("model-a"), CountingEmbedder("model-b")
    async with Rifflux(tmp_path / "i.db", embedder=first) as rf:
        await rf.reindex(root)
        n = (await rf.status())["embeddings"]
    async with Rifflux(tmp_path / "i.db", embedder=second) as rf:
        result = await rf.reindex(root)
        status = await rf.status()
    assert result["indexed_files"] == 0  # the files did not change...
    assert len(second.embedded) == n  # ...but every vector was made again
    assert status["embedding_model"] == "model-b" and status["embeddings"] == n
    with sqlite3.connect(tmp_path / "i.db") as conn:
        models = {r[0] for r in conn.execute("SELECT DISTINCT model FROM embeddings")}
    assert models == {"model-b"}


async def test_reindex_path_precedence(
    tmp_path: Path, embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, cwd = tmp_path / "a", tmp_path / "b", tmp_path / "cwd"
    write(a, "a.md", "# A\n\naaa\n")
    write(b, "b.md", "# B\n\nbbb\n")
    write(cwd, "c.md", "# C\n\nccc\n")
    monkeypatch.chdir(cwd)
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        both = await rf.reindex(path=a, paths=[b])
        assert both["indexed_files"] == 1 and await rf.search("aaa", mode="lexical") == []
        empty = await rf.reindex(path=a, paths=[])
        assert empty["indexed_files"] == 1 and await rf.search("aaa", mode="lexical")
        neither = await rf.reindex()
        assert neither["indexed_files"] == 1 and await rf.search("ccc", mode="lexical")


async def test_reindexing_a_subfolder_or_file_stays_within_its_root(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    write(root, "keep.md", "# Keep\n\nkeepme\n")
    write(root, "sub/x.md", "# X\n\nxray\n")
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(root)
        (root / "sub" / "x.md").unlink()
        write(root, "sub/y.md", "# Y\n\nyankee\n")
        result = await rf.reindex(root / "sub")
        assert result["indexed_files"] == 1 and result["removed_files"] == 1
        assert await rf.search("keepme", mode="lexical")
        hits = await rf.search("yankee", mode="lexical")
        assert hits[0]["path"] == "sub/y.md"  # indexed under the existing root
        write(root, "keep.md", "# Keep\n\nkeepme changed\n")
        one = await rf.reindex(root / "keep.md")
        assert one["indexed_files"] == 1
        assert (await rf.status())["files"] == 2


async def test_background_reindex_returns_a_job_at_once(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", doc(3))
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        started = await rf.reindex(root, background=True)
        job = started["job"]
        assert job["status"] in ("queued", "running") and job["id"]
        done = await rf.wait_for_job(job["id"])
    assert done["status"] == "completed"
    result = done["result"]
    assert result is not None and result["indexed_files"] == 1


async def test_two_instances_on_two_databases_do_not_interfere(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "a.md", "# A\n\nalphaonly\n")
    write(b, "b.md", "# B\n\nbetaonly\n")
    async with (
        Rifflux(tmp_path / "a.db", embedder=CountingEmbedder()) as ra,
        Rifflux(tmp_path / "b.db", embedder=CountingEmbedder()) as rb,
    ):
        await ra.reindex(a)
        await rb.reindex(b)
        assert await ra.search("betaonly", mode="lexical") == []
        assert await rb.search("betaonly", mode="lexical")


async def test_another_process_reads_while_this_one_is_open(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    root = tmp_path / "docs"
    write(root, "a.md", "# A\n\nshared reading\n")
    db = tmp_path / "i.db"
    code = (
        "import anyio, sys\n"
        "from rifflux import Rifflux\n"
        "async def main():\n"
        f"    async with Rifflux({str(db)!r}, embedding_backend='hash') as rf:\n"
        "        r = await rf.search('shared reading', mode='lexical')\n"
        "        sys.stdout.write(r[0]['path'])\n"
        "anyio.run(main)\n"
    )
    async with Rifflux(db, embedder=embedder) as rf:
        await rf.reindex(root)
        proc = await anyio.run_process([sys.executable, "-c", code], check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode() == "a.md"


async def test_other_schema_version_gets_a_clear_message(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    async with Rifflux(db, embedder=CountingEmbedder()):
        pass
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(SchemaVersionError, match="delete the file"):
        async with Rifflux(db, embedder=CountingEmbedder()):
            pass


async def test_a_file_that_is_not_an_index_is_refused_and_left_untouched(
    tmp_path: Path,
) -> None:
    db = tmp_path / "notes.md"  # --db pointed at a markdown file by mistake
    db.write_bytes(b"# My notes\n\nthis is not a sqlite database at all\n" * 100)
    before = db.read_bytes()
    with pytest.raises(IndexDatabaseError, match="not a Rifflux index.*left untouched"):
        async with Rifflux(db, embedder=CountingEmbedder()):
            pass
    assert db.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["notes.md"]


async def test_read_only_open_searches_without_changing_the_index(tmp_path: Path) -> None:
    from rifflux import ReadOnlyError, RiffluxError, Settings

    root = tmp_path / "docs"
    write(root, "a.md", doc(3))
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder("model-a")) as rf:
        await rf.reindex(root)
        n = (await rf.status())["embeddings"]
    other = CountingEmbedder("model-b")
    settings = Settings(db_path=tmp_path / "i.db", read_only=True)
    async with Rifflux(settings=settings, embedder=other) as rf:
        assert await rf.search("topic", mode="lexical")
        for write_something in (rf.reindex(root), rf.forget(root)):
            with pytest.raises(ReadOnlyError, match="read-only") as refused:
                await write_something
            assert isinstance(refused.value, RiffluxError)
    assert other.embedded == []
    with sqlite3.connect(tmp_path / "i.db") as conn:
        rows = conn.execute("SELECT model, COUNT(*) FROM embeddings GROUP BY model").fetchall()
    assert rows == [("model-a", n)]


async def test_a_job_does_not_wait_for_text_an_edit_replaced_before_it_was_embedded(
    tmp_path: Path,
) -> None:
    # A job waits for the vectors of what it indexed; if a later edit replaces that
    # text before the embedder reads it, no vector will ever be made for it, and the
    # job (and a foreground reindex waiting on it) must still complete.
    docs = tmp_path / "docs"
    write(docs, "big.md", "# Big\n\n" + "Some words about gardens and water. " * 40)
    embedder = GatedEmbedder()
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        first = await rf.reindex(docs, background=True)
        await anyio.to_thread.run_sync(embedder.entered.wait, 10)  # busy with big.md
        write(docs, "a.md", "# A\n\nThe first version, about otters and their dens.\n")
        second = await rf.reindex(docs, background=True)

        async def phase(job: BackgroundReindex) -> str:
            return str((await rf.job(job["job"]["id"]))["phase"])

        await eventually(lambda: _is(phase(second), "embedding"))  # a.md v1 indexed
        write(docs, "a.md", "# A\n\nThe second version, about beavers and their lodges.\n")
        third = await rf.reindex(docs, background=True)
        await eventually(lambda: _is(phase(third), "embedding"))  # v1 replaced by v2
        embedder.gate.set()
        for job in (first, second, third):
            with anyio.fail_after(15):
                done = await rf.wait_for_job(job["job"]["id"])
            assert done["status"] == "completed"
        assert not any("first version" in t for t in embedder.embedded)
        assert (await rf.status())["pending_embeddings"] == 0


async def _is(value: Awaitable[str], expected: str) -> bool:
    return await value == expected


async def test_reindexing_keeps_the_full_text_index_in_few_pieces(
    tmp_path: Path, embedder: CountingEmbedder,
) -> None:
    # Every reindex that writes adds full-text segments, which each search reads; a run
    # that leaves four or more merges them into one.
    root = tmp_path / "docs"
    db = tmp_path / "i.db"

    def segments() -> int:
        with sqlite3.connect(db) as conn:
            return int(conn.execute(
                "SELECT COUNT(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])

    async with Rifflux(db, embedder=embedder) as rf:
        seen = []
        for i in range(6):
            write(root, f"f{i}.md", doc(2, edit=1 if i % 2 else None))
            await rf.reindex(root)
            seen.append(segments())
        assert max(seen) < 4 and seen[-1] >= 1
        hits = await rf.search('"an edited sentence"', mode="lexical", top_k=10,
                               duplicates="all")  # (the same chunk in three files)
        assert {h["path"] for h in hits} == {"f1.md", "f3.md", "f5.md"}


async def test_a_background_reindex_names_the_model_even_while_it_loads(
    tmp_path: Path,
) -> None:
    # The job is returned at once, but its answer names the model and backend it embeds
    # with (an agent's first call used to get null for both while the model loaded).
    root = tmp_path / "docs"
    write(root, "a.md", doc(2))
    loading = threading.Event()

    def slow_model() -> CountingEmbedder:
        loading.wait(30)  # a model that is still loading when the reindex is asked for
        return CountingEmbedder()

    async with Rifflux(tmp_path / "i.db", embedder=slow_model) as rf:
        started: dict[str, Any] = {}

        async def ask() -> None:
            started.update(await rf.reindex(root, background=True))

        async def queued() -> bool:
            return bool((await rf.status())["jobs"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await eventually(queued)  # the job is in, the model still loading
            await anyio.wait_all_tasks_blocked()
            assert started == {}  # the answer waits for the model
            loading.set()
        assert (started["embedding_model"], started["embedding_backend"]) == (
            "counting-v1", "hash")
        done = await rf.wait_for_job(started["job"]["id"])
    assert done["status"] == "completed"
