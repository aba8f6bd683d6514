"""Adopting the model while the query actor loads its matrix: the load starts before the
texts lacking a vector are read, so a failure of that read after it began must neither
leave the matrix behind the database nor leave a given-up model's matrix in memory."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import Rifflux
from rifflux.actors.messages import VectorsReset
from rifflux.actors.query import QueryActor
from rifflux.errors import IndexBusyError, IndexDamagedError
from rifflux.store.sqlite.lease import Lease
from rifflux.store.sqlite.missing import Missing

from ..helpers import CountingEmbedder, eventually, write_all

pytestmark = pytest.mark.anyio


async def test_vectors_another_process_stores_while_an_adoption_is_retried_reach_the_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "i.db"
    otters = write_all(tmp_path / "a", {"a.md": "# Otters\n\nOtters sleep in the river.\n"})
    herons = write_all(tmp_path / "b", {"b.md": "# Herons\n\nHerons wade in the marsh.\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(otters)
    real = Missing._lacking
    first: list[Missing] = []
    failed, written = anyio.Event(), anyio.Event()

    async def lacking(self: Missing, model: str) -> Any:
        first[:] = first or [self]
        if self is first[0] and not written.is_set():  # (A's, until B has written)
            failed.set()
            raise IndexBusyError("the index is busy (the test's)")
        return await real(self, model)

    monkeypatch.setattr(Missing, "_lacking", lacking)
    async with Rifflux(db, embedder=CountingEmbedder()) as a:
        with anyio.fail_after(10):
            await failed.wait()  # A's matrix load began, its adoption waits to retry
        async with Rifflux(db, embedder=CountingEmbedder()) as b:
            await b.reindex(herons)  # (its vector stored: the job waits for it)
        written.set()

        async def both() -> bool:
            return (await a.status())["vectors_in_memory"] == 2

        await eventually(both, within=20)
        hits = await a.search("herons wade in the marsh", mode="semantic", top_k=1)
        assert [h["path"] for h in hits] == ["b.md"]


async def test_a_model_given_up_after_its_matrix_began_loading_leaves_no_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "i.db"
    root = write_all(tmp_path / "a", {"a.md": "# Otters\n\nOtters sleep in the river.\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    real_reset, real_load = QueryActor._reset, QueryActor._load
    given_up, loaded = anyio.Event(), anyio.Event()

    async def damaged(self: Missing, model: str) -> Any:
        raise IndexDamagedError("the index is damaged (the test's)")

    def reset(self: QueryActor, msg: VectorsReset, tg: Any) -> None:
        real_reset(self, msg, tg)
        if msg.embedder is None:
            given_up.set()

    async def load(self: QueryActor, *args: Any) -> None:
        await given_up.wait()  # (the load ends after the model was given up)
        try:
            await real_load(self, *args)
        finally:
            loaded.set()

    monkeypatch.setattr(Missing, "_lacking", damaged)
    monkeypatch.setattr(QueryActor, "_reset", reset)
    monkeypatch.setattr(QueryActor, "_load", load)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        with anyio.fail_after(10):
            await loaded.wait()
        assert (await rf.status())["vectors_in_memory"] == 0


async def test_a_semantic_search_answered_as_the_texts_without_vectors_are_counted_waits_for_the_count(  # noqa: E501
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "i.db"
    root = write_all(tmp_path / "a", {"a.md": "# Otters\n\nOtters sleep in the river.\n",
                                      "b.md": "# Herons\n\nHerons wade in the marsh.\n"})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM embeddings")  # (as an interrupted `rifflux index` leaves it)
    real, real_load = Missing._lacking, QueryActor._load
    loaded = anyio.Event()

    async def load(self: QueryActor, *args: Any) -> None:
        await real_load(self, *args)
        loaded.set()

    async def slow(self: Missing, model: str) -> Any:
        with anyio.fail_after(10):
            await loaded.wait()  # (the matrix, empty, has loaded: the search is answered)
        await anyio.sleep(0.3)  # (and waits for the count meanwhile)
        return await real(self, model)

    monkeypatch.setattr(QueryActor, "_load", load)
    monkeypatch.setattr(Missing, "_lacking", slow)
    lease = Lease(db)  # another process embeds: this one only searches
    assert lease.try_acquire()
    try:
        async with Rifflux(db, embedder=CountingEmbedder()) as rf:
            hits = await rf.search("herons", mode="hybrid")
            assert [h["path"] for h in hits] == ["b.md"]
            assert rf.pending_embeddings() == 2  # (None before: the answer said nothing)
            assert await rf.search("otters", mode="lexical")
    finally:
        lease.release()
