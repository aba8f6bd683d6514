"""The embedding lease on PostgreSQL is confirmed in the transaction that stores a batch's
vectors: a process whose lease ended while it embedded (a server restart, its session
killed) and was taken by another stores nothing of that batch and stops embedding;
the lease's holder embeds those texts."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import asyncpg
import numpy as np
import pytest

from rifflux import Rifflux, Settings
from rifflux.core.vectors import F32
from rifflux.errors import LeaseLostError
from rifflux.location import DatabaseUrl
from rifflux.store.opening import open_store
from rifflux.store.postgres.connection import EMBEDDING_LEASE, LOCKS
from rifflux.store.postgres.presence import Lease

from .helpers import MODEL, CountingEmbedder, afile, eventually, hashes, numbered_notes
from .postgres import PostgresServer

pytestmark = pytest.mark.anyio


async def _vectors(url: str) -> list[list[float]]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch("SELECT vector::text FROM embeddings")
    finally:
        await conn.close()
    return [[float(x) for x in str(r[0]).strip("[]").split(",")] for r in rows]


async def _end_lease_sessions(url: str) -> int:
    """What a server restart does to the lease's holder: its session is gone."""
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = "
            "'advisory' AND classid = $1 AND objid = $2 AND objsubid = 2 AND granted",
            LOCKS, EMBEDDING_LEASE))
    finally:
        await conn.close()


async def test_vectors_embedded_under_a_lease_taken_over_meanwhile_are_not_stored(
    new_postgres_index: Callable[[], str], tmp_path: Path,
) -> None:
    url = new_postgres_index()
    settings = Settings(db_path=DatabaseUrl(url))
    async with open_store(settings, "first") as a, open_store(settings, "second") as b:
        assert a.lease is not None and b.lease is not None
        root = await a.writer.roots.root_id(tmp_path / "docs")
        assert root is not None
        await a.writer.write_files(root, [afile("one.md", "first text")])
        texts = sorted(hashes("first text"))
        assert await a.lease.try_take()
        token = a.lease.token
        assert token is not None and b.lease.token is None
        assert await _end_lease_sessions(url) == 1  # (while the first one embeds)
        await eventually(b.lease.try_take)
        with pytest.raises(LeaseLostError, match="lease .* was lost .* not stored"):
            await a.writer.write_vectors(MODEL, texts, np.ones((1, 4), np.float32),
                                         lease=token)
        assert await _vectors(url) == []  # nothing of the batch
        assert b.lease.token not in (None, token)
        await b.writer.write_vectors(MODEL, texts, np.full((1, 4), 2, np.float32),
                                     lease=b.lease.token)
        assert await _vectors(url) == [[2.0] * 4]


class _Held(CountingEmbedder):
    """Its first batch waits until the test lets it go, and is answered with vectors no
    other batch has (all components equal): whether it was stored shows."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = threading.Event()
        self.go = threading.Event()
        self.first: list[str] | None = None

    def embed_documents(self, texts: list[str]) -> F32:
        if self.first is None:
            self.first = list(texts)
            self.inside.set()
            assert self.go.wait(60)
            super().embed_documents(texts)
            return np.full((len(texts), self.dim), 1 / np.sqrt(self.dim), np.float32)
        return super().embed_documents(texts)


async def test_a_server_restart_during_a_batch_stores_it_once_by_the_leases_new_holder(
    postgres_of_its_own: PostgresServer, tmp_path: Path,
) -> None:
    server = postgres_of_its_own
    url = server.create_database("lease_batch")
    root = numbered_notes(tmp_path / "notes", 3)
    embedder = _Held()
    settings = Settings(db_path=DatabaseUrl(url), watch_paths=(root,), debounce_seconds=0.05)
    other = Lease(DatabaseUrl(url), timeout=5)  # (another process's lease)
    try:
        async with Rifflux(settings=settings, embedder=embedder) as rf:
            await anyio.to_thread.run_sync(embedder.inside.wait, 30)
            assert embedder.first is not None and len(embedder.first) == 3
            await anyio.to_thread.run_sync(server.stop)
            await anyio.to_thread.run_sync(server.start)
            await eventually(other.try_take, within=30)  # (the restart ended the first's)
            embedder.go.set()  # the batch is done: its store is refused

            async def settled() -> bool:
                status = await rf.status()
                return not status["embedder"]["busy"] and status["pending_embeddings"] == 3
            await eventually(settled, within=30)
            await anyio.sleep(1.5)  # (a try to take the lease again, refused)
            assert await _vectors(url) == []
            assert len(embedder.embedded) == 3  # it stopped: no other batch
            await other.give_back()  # the lease is free: it embeds them now

            async def embedded() -> bool:
                return (await rf.status())["pending_embeddings"] == 0
            await eventually(embedded, within=30)
        stored = await _vectors(url)
        assert len(stored) == 3
        assert all(len(set(v)) > 1 for v in stored)  # none of the refused batch's
        assert sorted(embedder.embedded) == sorted(embedder.first * 2)
    finally:
        await other.give_back()
