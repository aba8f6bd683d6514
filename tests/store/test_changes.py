"""The change log between two writers on one SQLite file (as two processes have): each
sees only the other's changes, as one ``Written``; a follower further behind than the
pruned log is told to reload."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from pathlib import Path

import aiosqlite
import numpy as np
import pytest

from rifflux import IndexBusyError
from rifflux.store.sqlite import changes, link_index
from rifflux.store.sqlite.changes import Follow
from rifflux.store.sqlite.writer import Writer
from rifflux.store.written import Edges

from ..helpers import MODEL, afile, hashes, root_of, two_processes

pytestmark = pytest.mark.anyio


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Writer, Follow, Writer, Follow]]:
    async with two_processes(tmp_path / "i.db") as ((a, a_follow), (b, b_follow)):
        yield a, a_follow, b, b_follow


async def test_each_sees_the_others_files_and_vectors_not_its_own(
    pair: tuple[Writer, Follow, Writer, Follow], tmp_path: Path
) -> None:
    a, a_follow, b, b_follow = pair
    root = await root_of(a, tmp_path / "docs")
    await a.write_files(root, [afile("one.md", "first text"), afile("two.md", "second")])
    assert await a_follow.others_wrote() is False  # its own commits
    assert await a_follow.read(MODEL, a.roots) is None

    assert await b_follow.others_wrote() is True
    seen = await b_follow.read(MODEL, b.roots)
    assert seen is not None and not seen.reload
    b_follow.done(seen.upto)
    assert sorted(e.rel_path for e in seen.written.files) == ["one.md", "two.md"]
    assert seen.written.added_ids == ()  # no vectors yet
    assert b.roots.paths == {root: str(tmp_path / "docs")}

    await a.write_vectors(MODEL, sorted(hashes("first text")), np.ones((1, 4), np.float32))
    assert await b_follow.others_wrote() is True
    vectors = await b_follow.read(MODEL, b.roots)
    assert vectors is not None and vectors.embedded == tuple(sorted(hashes("first text")))
    b_follow.done(vectors.upto)
    assert len(vectors.written.added_ids) == 1 and vectors.written.files == ()

    await a.delete_files(root, ["two.md"])
    assert await b_follow.others_wrote() is True
    gone = await b_follow.read(MODEL, b.roots)
    assert gone is not None and len(gone.written.files_removed) == 1
    b_follow.done(gone.upto)
    assert gone.written.files_replaced == gone.written.files_removed

    await b.write_files(root, [afile("three.md", "third")])
    assert await b_follow.others_wrote() is False
    theirs = await a_follow.read(MODEL, a.roots)
    assert theirs is not None and [e.rel_path for e in theirs.written.files] == ["three.md"]


async def test_a_follower_behind_the_pruned_log_reloads(
    pair: tuple[Writer, Follow, Writer, Follow], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, a_follow, b, b_follow = pair
    monkeypatch.setattr(changes, "KEEP", 2)
    root = await root_of(a, tmp_path / "docs")  # (b has read nothing yet)
    for i in range(6):
        await a.write_files(root, [afile(f"f{i}.md", f"text {i}")])
    await changes.prune(a.conn, tmp_path / "i.db")
    assert await b_follow.others_wrote() is True
    behind = await b_follow.read(MODEL, b.roots)
    assert behind is not None and behind.reload
    b_follow.done(behind.upto)
    assert await b_follow.read(MODEL, b.roots) is None  # caught up


async def test_changes_that_could_not_be_applied_are_read_again(
    pair: tuple[Writer, Follow, Writer, Follow], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, _a_follow, b, b_follow = pair
    root = await root_of(a, tmp_path / "docs")
    await a.write_files(root, [afile("one.md", "first text")])
    real = link_index.edges_of  # (which changes calls)
    calls = 0

    async def busy_once(conn: aiosqlite.Connection, files: Collection[int]) -> Edges:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise IndexBusyError("the index is locked by another writer")
        return await real(conn, files)

    monkeypatch.setattr(changes, "edges_of", busy_once)
    with pytest.raises(IndexBusyError):
        await b_follow.read(MODEL, b.roots)
    again = await b_follow.read(MODEL, b.roots)  # nothing was counted as read
    assert again is not None and [e.rel_path for e in again.written.files] == ["one.md"]
    b_follow.done(again.upto)
    assert await b_follow.read(MODEL, b.roots) is None
