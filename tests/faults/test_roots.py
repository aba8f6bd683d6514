"""Roots: what is indexed, and nothing twice. The whole file system, the home folder
and a huge working directory (no path given) are refused unless asked for, a folder
named explicitly is indexed whatever its size; a parent absorbs an indexed child
(kept once, with its vectors); forget removes a root or a part of one."""

from __future__ import annotations

import sqlite3
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from rifflux import Rifflux, Settings
from rifflux.actors.index_job import IndexRun
from rifflux.actors.jobs import Target
from rifflux.errors import InvalidArgumentError
from rifflux.types import RootCount

from ..helpers import (
    CountingEmbedder,
    Location,
    call,
    call_error,
    eventually,
    index_rows,
    jobs_settled,
    mcp_session,
    server_env,
    write,
)

pytestmark = pytest.mark.anyio


def folder(root: Path, n: int, word: str = "text") -> Path:
    for i in range(n):
        write(root, f"note-{i}.md", f"# Note {i}\n\n{word} number {i} of {root.name}\n")
    return root


def open_rifflux(tmp_path: Path, embedder: CountingEmbedder | None = None, *,
                 max_root_files: int | None = None) -> Rifflux:
    settings = Settings(db_path=tmp_path / "i.db")
    if max_root_files is not None:
        settings = replace(settings, max_root_files=max_root_files)
    return Rifflux(settings=settings, embedder=embedder or CountingEmbedder())


def stored(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return sorted((str(r[0]), str(r[1])) for r in conn.execute(
            "SELECT r.path, f.rel_path FROM files f JOIN roots r ON r.id = f.root_id"))


async def test_the_home_folder_and_the_whole_file_system_need_yes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = folder(tmp_path / "home", 2)
    monkeypatch.setenv("HOME", str(home))
    async with open_rifflux(tmp_path) as rf:
        refused = await rf.reindex(home)
        whole = await rf.reindex("/")  # refused before anything is read
        for cwd in (home, Path("/")):  # as the working directory, no path given
            monkeypatch.chdir(cwd)
            implicit = await rf.reindex()
            assert implicit["errors"][0]["path"] == str(cwd), implicit
            assert "yes=true" in implicit["errors"][0]["error"]
        assert (await rf.status())["files"] == 0
        allowed = await rf.reindex(home, yes=True)
        again = await rf.reindex(home)  # indexed now: followed without asking again
    assert [e["path"] for e in refused["errors"]] == [str(home)]
    assert "your home folder" in refused["errors"][0]["error"]
    assert "yes=true" in refused["errors"][0]["error"]
    assert refused["indexed_files"] == 0
    assert "the whole file system" in whole["errors"][0]["error"]
    assert allowed["indexed_files"] == 2 and not allowed["errors"]
    assert not again["errors"] and again["skipped_files"] == 2


async def test_a_named_folder_is_indexed_whatever_its_size_a_large_working_directory_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    big, small = folder(tmp_path / "big", 5), folder(tmp_path / "small", 3)
    cwd = folder(tmp_path / "cwd", 4)
    monkeypatch.chdir(cwd)
    async with open_rifflux(tmp_path, max_root_files=3) as rf:
        named = await rf.reindex(paths=[big, small])  # over the limit, and no yes
        implicit = await rf.reindex()  # the working directory: 4 files, refused
        assert {root for root, _ in stored(tmp_path / "i.db")} == {str(big), str(small)}
        allowed = await rf.reindex(yes=True)
        folder(big, 7)  # an indexed folder is followed whatever its size
        grown = await rf.reindex(big)
        roots = (await rf.status())["indexed_roots"]
    assert named["indexed_files"] == 8 and not named["errors"]
    error = implicit["errors"][0]
    assert error["path"] == str(cwd) and implicit["indexed_files"] == 0
    assert "4 files to index in" in error["error"] and "the working directory" in error["error"]
    assert "limit of 3" in error["error"] and "rifflux index --yes" in error["error"]
    assert allowed["indexed_files"] == 4 and grown["indexed_files"] == 2
    assert _counts(roots) == [{"path": str(big), "files": 7, "chunks": 7},
                     {"path": str(small), "files": 3, "chunks": 3},
                     {"path": str(cwd), "files": 4, "chunks": 4}]


async def test_mcp_indexes_a_watched_or_named_large_folder_but_not_its_large_working_directory(
    tmp_path: Path
) -> None:
    watched = folder(tmp_path / "watched", 5, word="wombat")
    named = folder(tmp_path / "named", 5, word="quokka")
    cwd = folder(tmp_path / "cwd", 5, word="echidna")
    env = server_env(tmp_path, RIFFLUX_MAX_ROOT_FILES="3")
    async with mcp_session(tmp_path, "--watch", str(watched), cwd=cwd, env=env) as session:
        refused = await call_error(session, "reindex")
        indexed = await call(session, "reindex", path=str(named))

        async def watched_held() -> dict[str, int] | None:  # (indexed in the background)
            status = await call(session, "index_status")
            held = {r["path"]: r["files"] for r in status["indexed_roots"]}
            return held if held.get(str(watched.resolve())) == 5 else None

        held = await eventually(watched_held)
    assert "5 files to index in" in refused and "the working directory" in refused
    assert indexed["indexed_files"] == 5 and not indexed["errors"]
    assert held == {str(named.resolve()): 5, str(watched.resolve()): 5}


async def test_a_parent_absorbs_an_indexed_child_keeping_its_vectors_once(
    tmp_path: Path
) -> None:
    parent = tmp_path / "nodejs"
    child = folder(parent / "contributing", 3, word="quokka")
    write(parent, "README.md", "# Node\n\nthe parent readme\n")
    embedder = CountingEmbedder()
    async with open_rifflux(tmp_path, embedder) as rf:
        await rf.reindex(child)
        before = await rf.search("quokka number 1", mode="lexical", top_k=10)
        embedded_before = len(embedder.embedded)
        absorbed = await rf.reindex(parent)
        after = await rf.search("quokka number 1", mode="lexical", top_k=10)
        semantic = await rf.search("quokka number 1", mode="semantic", top_k=10)
        status = await rf.status()
        inside = await rf.reindex(child)  # a folder inside a root updates that part
        roots_after_inside = await rf.roots()
    assert absorbed["indexed_files"] == 1  # only the readme was read
    assert absorbed["skipped_files"] == 3
    assert len(embedder.embedded) == embedded_before + 1  # the child's vectors were kept
    assert stored(tmp_path / "i.db") == sorted(
        [(str(parent), "README.md")]
        + [(str(parent), f"contributing/note-{i}.md") for i in range(3)])
    assert status["roots"] == 1 and status["files"] == 4 and status["embeddings"] == 4
    assert _counts(status["indexed_roots"]) == [{"path": str(parent), "files": 4, "chunks": 4}]
    assert before[0]["path"] == "note-1.md" and before[0]["root"] == str(child)
    paths = [(h["root"], h["path"]) for h in after]
    assert len(paths) == len(set(paths)) == 3  # each quokka file once
    assert paths[0] == (str(parent), "contributing/note-1.md")
    assert [h["chunk_id"] for h in semantic].count(after[0]["chunk_id"]) == 1
    assert inside["skipped_files"] == 3 and not inside["errors"]
    assert roots_after_inside == [str(parent)]


async def test_two_children_are_absorbed_and_a_file_edited_meanwhile_is_read_again(
    tmp_path: Path
) -> None:
    parent = tmp_path / "docs"
    a, b = folder(parent / "a", 2), folder(parent / "b", 2)
    async with open_rifflux(tmp_path) as rf:
        await rf.reindex(paths=[a, b])
        write(a, "note-0.md", "# Note 0\n\nrewritten while nobody watched\n")
        out = await rf.reindex(parent)
        hits = await rf.search("rewritten", mode="lexical")
        assert await rf.roots() == [str(parent)]
    assert out["indexed_files"] == 1 and out["skipped_files"] == 3
    assert [(h["path"], h["root"]) for h in hits] == [("a/note-0.md", str(parent))]


async def test_forget_removes_a_root_a_folder_or_a_file_and_what_only_they_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    away = tmp_path / "away" / "here"  # the working directory: '..' holds no indexed folder
    away.mkdir(parents=True)
    monkeypatch.chdir(away)
    notes = folder(tmp_path / "notes", 2, word="wombat")
    write(notes, "sub/deep.md", "# Deep\n\nwombat burrows deep\n")
    write(notes, "sub/other.md", "# Other\n\nanother wombat\n")
    docs = folder(tmp_path / "docs", 2, word="platypus")
    async with open_rifflux(tmp_path) as rf:
        await rf.reindex(paths=[notes, docs])
        embeddings = (await rf.status())["embeddings"]
        one_file = await rf.forget("sub/deep.md")  # as results give it
        sub = await rf.forget(notes / "sub")
        left = await rf.search("wombat", mode="lexical")
        whole = await rf.forget(docs)
        status = await rf.status()
        gone = await rf.search("platypus", mode="hybrid")
        with pytest.raises(InvalidArgumentError, match="not in the index"):
            await rf.forget(tmp_path / "elsewhere")
        with pytest.raises(InvalidArgumentError, match="then as results give them, and no "
                                                       "indexed folder holds it"):
            await rf.forget("nowhere/x.md")
        for dots in (".", ".."):  # never read as the indexed folder, or what holds it
            with pytest.raises(InvalidArgumentError, match="not in the index"):
                await rf.forget(dots)
        with pytest.raises(InvalidArgumentError, match="no indexed file there"):
            await rf.forget(notes / "sub")
    assert one_file["removed_files"] == 1 and one_file["removed_roots"] == []
    assert one_file["removed_paths"] == ["sub/deep.md"]
    assert sub["removed_files"] == 1 and sub["removed_paths"] == ["sub/other.md"]
    assert whole["removed_files"] == 2 and whole["removed_roots"] == [str(docs)]
    assert sorted(h["path"] for h in left) == ["note-0.md", "note-1.md"]
    assert gone and {h["root"] for h in gone} == {str(notes)}  # nothing from docs
    assert _counts(status["indexed_roots"]) == [{"path": str(notes), "files": 2, "chunks": 2}]
    assert status["embeddings"] == embeddings - 4  # vectors no chunk uses are dropped
    assert stored(tmp_path / "i.db") == [(str(notes), "note-0.md"), (str(notes), "note-1.md")]
    assert (docs / "note-0.md").exists()  # the files on disk are untouched


async def test_forget_a_deleted_folder_and_every_root_under_a_parent(tmp_path: Path) -> None:
    a = folder(tmp_path / "all" / "a", 1)
    b = folder(tmp_path / "all" / "b", 1)
    c = folder(tmp_path / "c", 1)
    async with open_rifflux(tmp_path) as rf:
        await rf.reindex(paths=[a, b, c])
        (c / "note-0.md").unlink()
        c.rmdir()
        deleted = await rf.forget(c)
        parent = await rf.forget(tmp_path / "all")
        status = await rf.status()
    assert deleted["removed_roots"] == [str(c)] and deleted["removed_files"] == 1
    assert sorted(parent["removed_roots"]) == [str(a), str(b)]
    assert parent["removed_files"] == 2
    assert status["roots"] == 0 and status["files"] == 0 and status["indexed_roots"] == []


async def test_mcp_reindex_from_a_server_started_in_home_is_refused_and_forget_works(
    tmp_path: Path
) -> None:
    home = folder(tmp_path / "home", 2, word="echidna")
    env = server_env(tmp_path, HOME=str(home))
    async with mcp_session(tmp_path, cwd=home, env=env) as session:
        refused = await call_error(session, "reindex")
        status = await call(session, "index_status")
        allowed = await call(session, "reindex", yes=True)
        everything = await call_error(session, "forget", path="/")
        forgot = await call(session, "forget", path=str(home))
        missing = await call_error(session, "forget", path=str(home))
        after = await call(session, "index_status")
    assert "your home folder" in refused and "yes=true" in refused
    assert status["files"] == 0 and status["indexed_roots"] == []
    assert allowed["indexed_files"] == 2
    assert "the whole file system" in everything and "yes=true" in everything
    assert forgot["removed_roots"] == [str(home.resolve())] and forgot["removed_files"] == 2
    assert "not in the index" in missing
    assert after["files"] == 0 and after["roots"] == 0


async def test_a_parent_indexed_after_its_child_takes_it_in_on_either_store(
    db: Location, tmp_path: Path,
) -> None:
    parent = tmp_path / "nodejs"
    child = folder(parent / "contributing", 3, word="quokka")
    write(parent, "README.md", "# Node\n\nthe parent readme\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(child)
        assert await rf.roots() == [str(child)]
        absorbed = await rf.reindex(parent)
        roots, status, listed = await rf.roots(), await rf.status(), await rf.files()
        hits = await rf.search("quokka", mode="lexical", top_k=10)
        inside = await rf.reindex(child)  # a folder inside a root updates that part
        moved = await rf.get_file("contributing/note-1.md")
        assert await rf.roots() == [str(parent)] and await rf.get_file("note-1.md") is None
    assert absorbed["indexed_files"] == 1 and absorbed["skipped_files"] == 3  # vectors kept
    assert roots == [str(parent)] and status["roots"] == 1
    assert _counts(status["indexed_roots"]) == [{"path": str(parent), "files": 4, "chunks": 4}]
    assert [(f["root"], f["path"]) for f in listed] == [
        (str(parent), p) for p in ("README.md", *(f"contributing/note-{i}.md" for i in range(3)))]
    assert sorted((h["root"], h["path"]) for h in hits) == [
        (str(parent), f"contributing/note-{i}.md") for i in range(3)]  # each once
    assert inside["skipped_files"] == 3 and not inside["errors"]
    assert moved is not None and moved["root"] == str(parent)


async def test_forgetting_a_root_removes_it_whole_and_keeps_the_others_on_either_store(
    db: Location, tmp_path: Path,
) -> None:
    notes = folder(tmp_path / "notes", 2, word="wombat")
    docs = folder(tmp_path / "docs", 2, word="platypus")
    write(docs, "links.md", "# Links\n\nSee [[note-0]] and [[note-1]].\n")
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(paths=[notes, docs])
        before, both = await rf.status(), await rf.get_file("note-0.md")
        whole = await rf.forget(docs)
        status, roots, listed = await rf.status(), await rf.roots(), await rf.files()
        gone = await rf.search("platypus", mode="hybrid")
        with pytest.raises(InvalidArgumentError, match="outside every indexed folder"):
            await rf.get_file(str(docs / "links.md"))
        kept = await rf.get_file("note-0.md")
    assert both is not None and both.get("other_roots") == [str(docs)]
    assert before["links"] == 2 and whole["removed_roots"] == [str(docs)]
    assert whole["removed_files"] == 3 and roots == [str(notes)]
    assert (status["files"], status["roots"], status["links"]) == (2, 1, 0)
    assert status["embeddings"] == 2  # vectors no chunk uses are dropped
    assert [f["path"] for f in listed] == ["note-0.md", "note-1.md"]
    assert gone and {h["root"] for h in gone} == {str(notes)}  # nothing from docs
    assert kept is not None and kept["root"] == str(notes) and "other_roots" not in kept


async def test_a_folder_inside_a_root_never_becomes_a_root_of_its_own(tmp_path: Path) -> None:
    parent = tmp_path / "a"
    child = folder(parent / "b", 2, word="hello")
    async with open_rifflux(tmp_path) as rf:
        both = await rf.reindex(paths=[parent, child])  # in one job
        assert await rf.roots() == [str(parent)]
        assert both["errors"] == []
        hits = await rf.search("hello", mode="lexical")
        assert sorted(h["path"] for h in hits) == ["b/note-0.md", "b/note-1.md"]
    async with Rifflux(settings=Settings(db_path=tmp_path / "i.db", watch_paths=(child,)),
                       embedder=CountingEmbedder()) as rf:  # a watcher of the child
        await jobs_settled(rf)
        write(child, "note-2.md", "# Note 2\n\nhello again from the watcher\n")
        await eventually(lambda: rf.search("again", mode="lexical"))
        roots = await rf.roots()
        hits = await rf.search("hello", mode="lexical")
    assert roots == [str(parent)]
    assert sorted(h["path"] for h in hits) == ["b/note-0.md", "b/note-1.md", "b/note-2.md"]


@pytest.mark.parametrize("embedding", ["a", "b"])
async def test_a_parent_indexed_by_another_process_during_a_childs_scan_takes_it_in(
    db: Location, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedding: str,
) -> None:
    # Two instances on one index stand for two processes. B starts indexing a/b (not yet
    # inside any root); while it scans, A indexes a. B must then write into a's root:
    # the check for a containing root and the new root's insert are one transaction.
    # B's scan is held until A's files are written, not until A's reindex returns: that
    # waits for A's texts to have vectors, and when B holds the embedding lease its
    # indexer stores them only after its own job (README, "Several clients, one
    # index"), so the test would wait on itself. Either instance holds the lease.
    parent = folder(tmp_path / "a", 1, word="top")
    child = folder(parent / "b", 2, word="hello")
    scanning, parent_done = anyio.Event(), anyio.Event()
    real_scan = IndexRun._scan

    async def slow_scan(self: IndexRun, target: Target) -> object:
        found = await real_scan(self, target)
        if target.root == child:
            scanning.set()
            await parent_done.wait()
        return found

    async def embeds(rf: Rifflux) -> bool:
        return "embedder" in (await rf.status())["process"]["roles"]

    monkeypatch.setattr(IndexRun, "_scan", slow_scan)
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(Rifflux(db, embedder=CountingEmbedder()))
        await eventually(lambda: embeds(first))  # (it holds the lease before the other opens)
        second = await stack.enter_async_context(Rifflux(db, embedder=CountingEmbedder()))
        a, b = (first, second) if embedding == "a" else (second, first)

        async def index_child() -> None:
            result = await b.reindex(child)
            assert result["errors"] == []

        async def written(job_id: str) -> bool:
            return (await a.job(job_id))["phase"] in ("embedding", "completed")

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(index_child)
                await scanning.wait()
                job = (await a.reindex(parent, background=True))["job"]["id"]
                await eventually(lambda: written(job))
                parent_done.set()
            assert (await a.wait_for_job(job))["status"] == "completed"
        assert not await embeds(second)
        for rf in (a, b):
            assert await rf.roots() == [str(parent)]
    stored = sorted(r[0] for r in await index_rows(db, "SELECT rel_path FROM files"))
    assert stored == ["b/note-0.md", "b/note-1.md", "note-0.md"]


async def test_indexing_one_file_does_not_take_in_the_indexed_folders_beside_it(
    tmp_path: Path,
) -> None:
    notes = folder(tmp_path / "home" / "notes", 2, word="hello")
    todo = write(tmp_path / "home", "todo.md", "# Todo\n\nhello from the list\n")
    async with open_rifflux(tmp_path) as rf:
        await rf.reindex(notes)
        await rf.reindex(todo)
        roots = await rf.roots()
        hits = await rf.search("hello", mode="lexical")
    assert str(notes) in roots  # still a root of its own: its folder was not indexed
    assert sorted(h["path"] for h in hits) == ["note-0.md", "note-1.md", "todo.md"]


async def test_forgetting_home_or_the_file_system_is_refused_unless_asked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    notes, work = folder(home / "notes", 1), folder(home / "work", 1)
    async with open_rifflux(tmp_path) as rf:
        await rf.reindex(paths=[notes, work])
        for whole in (home, Path("/")):
            with pytest.raises(InvalidArgumentError, match=r"refused: .*--yes.*"):
                await rf.forget(whole)
        assert await rf.roots() == sorted([str(notes), str(work)])
        await rf.forget(notes)  # one folder inside home: no question asked
        gone = await rf.forget(home, yes=True)
        assert gone["removed_roots"] == [str(work)] and await rf.roots() == []
        with pytest.raises(InvalidArgumentError, match=r"paths\[1\] is empty"):
            await rf.reindex(paths=[notes, " "])


def _counts(roots: list[RootCount]) -> list[dict[str, object]]:
    """Each root's path and counts (its counts by kind left out)."""
    return [{"path": r["path"], "files": r["files"], "chunks": r["chunks"]} for r in roots]
