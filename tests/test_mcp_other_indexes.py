"""Searching other index files by ``db_path``: one read-only instance per file, opened on
its first search, kept for the next ones, closed with the server (at most a few open)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from rifflux import ClosedError, Rifflux, Settings
from rifflux.mcp.other_indexes import FileId, OtherIndexes, file_id
from rifflux.mcp.server import build_server

from .helpers import CountingEmbedder, eventually, write

pytestmark = pytest.mark.anyio


async def _index(tmp_path: Path, name: str, text: str) -> Path:
    db = tmp_path / f"{name}.db"
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(write(tmp_path / name, "note.md", f"# Note\n\n{text}\n").parent)
    return db.resolve()


class Opened:
    """Opens instances as the server would, and remembers each one it opened."""

    def __init__(self) -> None:
        self.instances: list[Rifflux] = []

    def __call__(self, settings: Settings) -> Rifflux:
        rf = Rifflux(settings=settings, embedder=CountingEmbedder())
        self.instances.append(rf)
        return rf


async def _closed(rf: Rifflux) -> bool:
    try:
        await rf.counts()
    except ClosedError:
        return True
    return False


async def test_searches_of_one_index_file_share_one_instance_closed_with_the_server(
    tmp_path: Path,
) -> None:
    other = await _index(tmp_path, "other", "A wombat sleeps in the burrow.")
    opened = Opened()
    server = build_server(Settings(db_path=tmp_path / "own.db", embedding_backend="hash"),
                          open_index=opened)
    async with Client(server) as client:
        counts = []
        for _ in range(2):
            result = await client.call_tool("search_rifflux", {
                "query": "wombat", "mode": "lexical", "db_path": str(other)})
            assert not result.is_error, result.content
            counts.append(json.loads(_text(result))["count"])
        assert counts == [1, 1]
        assert len(opened.instances) == 1  # the second search reused the first's instance
        (rf,) = opened.instances
        assert rf.settings.read_only and rf.settings.db_path == other
        assert not await _closed(rf)
    assert await _closed(rf)  # the server closed it


async def test_the_index_searched_least_recently_is_closed_to_make_room(tmp_path: Path) -> None:
    first = await _index(tmp_path, "first", "Wombats dig.")
    second = await _index(tmp_path, "second", "Wombats sleep.")
    opened = Opened()
    async with OtherIndexes(Settings(), keep=1, open_index=opened) as others:
        async with others.use(first, _file(first)) as a:
            async with others.use(first, _file(first)) as again:
                assert again is a
            assert await a.search("wombats", mode="lexical")
        async with others.use(second, _file(second)) as b:
            await eventually(lambda: _closed(a))  # (closed by its own task, at once)
            assert not await _closed(b)
            async with others.use(second, _file(second)) as again:  # (in use: kept)
                assert again is b
        async with others.use(first, _file(first)) as c:
            assert c is not a  # opened anew, and the other one closed
            await eventually(lambda: _closed(b))
    assert [await _closed(rf) for rf in opened.instances] == [True, True, True]


async def test_an_index_in_use_is_closed_only_when_its_search_is_done(tmp_path: Path) -> None:
    first = await _index(tmp_path, "first", "Wombats dig.")
    second = await _index(tmp_path, "second", "Wombats sleep.")
    opened = Opened()
    async with OtherIndexes(Settings(), keep=1, open_index=opened) as others:
        async with others.use(first, _file(first)) as a:
            # makes room while a search still reads `a`
            async with others.use(second, _file(second)):
                assert await a.search("wombats", mode="lexical")
            assert not await _closed(a)
        await eventually(lambda: _closed(a))


async def test_an_index_file_made_anew_at_the_same_path_is_opened_anew(tmp_path: Path) -> None:
    db = await _index(tmp_path, "notes", "Wombats dig.")
    opened = Opened()
    async with OtherIndexes(Settings(), open_index=opened) as others:
        async with others.use(db, _file(db)) as before:
            assert await before.search("wombats", mode="lexical")
        _delete(db)
        db = await _index(tmp_path, "notes", "Echidnas dig.")  # (rebuilt elsewhere)
        async with others.use(db, _file(db)) as after:
            assert after is not before
            assert await after.search("echidnas", mode="lexical")
        await eventually(lambda: _closed(before))
    assert file_id(tmp_path / "none.db") is None and file_id(tmp_path) is None


def _delete(db: Path) -> None:
    for leftover in db.parent.glob(f"{db.name}*"):  # (with its -wal and -shm)
        leftover.unlink()


def _file(path: Path) -> FileId:
    found = file_id(path)
    assert found is not None
    return found


def _text(result: Any) -> str:
    return str(result.content[0].text)
