"""One task owns the writer's connection: this process's row in ``processes`` and the
pruning of the change log run on the heartbeat's own connection, never inside the
indexer's open transaction, and beats go on while the indexer holds one."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from rifflux import Rifflux
from rifflux.actors import heartbeat

from ..helpers import CountingEmbedder, eventually, write

pytestmark = pytest.mark.anyio


class Traced:
    """Every statement run on every connection, with whether that connection was inside a
    transaction; the first write of a chunk waits, inside its transaction, for
    ``release``."""

    def __init__(self) -> None:
        self.statements: list[tuple[int, str, bool]] = []  # (connection, sql, in a transaction)
        self.paused = threading.Event()
        self.release = threading.Event()

    def connect(self, real: Any) -> Any:
        async def connect(*args: Any, **kwargs: Any) -> aiosqlite.Connection:
            conn: aiosqlite.Connection = await real(*args, **kwargs)
            number = id(conn)

            def trace(sql: str) -> None:  # (on the connection's own thread)
                self.statements.append((number, sql, conn.in_transaction))
                if sql.startswith("INSERT INTO chunks") and not self.paused.is_set():
                    self.paused.set()
                    self.release.wait(10)

            await conn.set_trace_callback(trace)
            return conn

        return connect

    def of(self, words: str) -> list[tuple[int, str, bool]]:
        return [s for s in self.statements if words in s[1]]


async def test_beats_and_pruning_run_on_their_own_connection_outside_any_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(heartbeat, "BEAT_EVERY", 0.02)
    monkeypatch.setattr(heartbeat, "PRUNE_EVERY_BEATS", 1)
    traced = Traced()
    monkeypatch.setattr(aiosqlite, "connect", traced.connect(aiosqlite.connect))
    root = tmp_path / "docs"
    write(root, "otters.md", "# Otters\n\nOtters sleep holding hands.\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        job = (await rf.reindex(root, background=True))["job"]["id"]
        try:
            await eventually(traced.paused.is_set)  # the job's transaction is open
            writer = next(c for c, _, _ in traced.of("INSERT INTO chunks"))
            beats = len(traced.of("INTO processes"))
            await eventually(lambda: len(traced.of("INTO processes")) > beats)  # meanwhile
        finally:
            traced.release.set()
        assert (await rf.wait_for_job(job))["status"] == "completed"
        await eventually(lambda: traced.of("DELETE FROM changes"))
    kept = traced.of("INTO processes") + traced.of("DELETE FROM changes")
    assert kept and all(conn != writer and not inside for conn, _, inside in kept)
