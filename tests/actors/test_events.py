"""``Rifflux.events()``: jobs and commits as they happen, from a hub that never waits for a
subscriber (a slow one loses the oldest events and is told how many)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rifflux import Rifflux
from rifflux.actors.events import EventHub, IndexUpdated, JobChanged
from rifflux.api import EventsLost
from rifflux.store.written import Written

from ..helpers import write

pytestmark = pytest.mark.anyio


class _Job:
    def __init__(self, n: int) -> None:
        self.n = n

    def snapshot(self) -> dict[str, object]:
        return {"id": f"job-{self.n}", "status": "running"}


async def test_a_slow_subscriber_loses_the_oldest_and_is_told_how_many() -> None:
    hub = EventHub()
    async with hub.subscribe(3) as slow, hub.subscribe(100) as fast:
        for n in range(10):  # published without anyone reading: never blocks
            hub.job_changed(_Job(n))  # type: ignore[arg-type]
        first = await slow.receive()
        assert isinstance(first, EventsLost) and first.count == 7
        kept = [await slow.receive() for _ in range(3)]
        assert [e.job["id"] for e in kept if isinstance(e, JobChanged)] == \
            ["job-7", "job-8", "job-9"]
        assert slow.receive_nowait() is None
        everything = [fast.receive_nowait() for _ in range(10)]
        assert all(isinstance(e, JobChanged) for e in everything)


async def test_subscriptions_end_when_the_hub_closes_after_what_they_hold() -> None:
    hub = EventHub()
    async with hub.subscribe() as events:
        hub.committed(Written(files_removed=(1, 2)), pending=4)
        hub.close()
        seen = [event async for event in events]
    assert len(seen) == 1 and isinstance(seen[0], IndexUpdated)
    assert (seen[0].files_removed, seen[0].pending_embeddings) == (2, 4)
    assert hub.subscribers == 0


async def test_nothing_is_made_for_nobody() -> None:
    class Counting(_Job):
        made = 0

        def snapshot(self) -> dict[str, object]:
            Counting.made += 1
            return super().snapshot()

    EventHub().job_changed(Counting(1))  # type: ignore[arg-type]
    assert Counting.made == 0


async def test_a_reindex_is_followed_from_queued_to_completed_with_its_commits(
        tmp_path: Path) -> None:
    for i in range(40):
        write(tmp_path / "notes", f"n{i}.md", f"# Note {i}\n\nSome words {i}.\n")
    async with Rifflux(tmp_path / "index.db", embedding_backend="hash") as rf:
        async with rf.events() as events:
            started = await rf.reindex(tmp_path / "notes", background=True)
            job_id = started["job"]["id"]
            jobs: list[dict[str, object]] = []
            commits: list[IndexUpdated] = []
            with anyio.fail_after(30):
                async for event in events:
                    if isinstance(event, JobChanged) and event.job["id"] == job_id:
                        jobs.append(dict(event.job))
                        if event.job["status"] == "completed":
                            break
                    elif isinstance(event, IndexUpdated):
                        commits.append(event)
    statuses = [j["status"] for j in jobs]
    assert statuses[0] == "queued" and statuses[-1] == "completed"
    assert "running" in statuses
    indexed = [int(str(j["indexed_files"])) for j in jobs]
    assert indexed == sorted(indexed) and indexed[-1] == 40
    assert sum(c.files_written for c in commits) == 40
    assert jobs[-1]["result"] is not None


async def test_events_end_when_rifflux_closes(tmp_path: Path) -> None:
    async with Rifflux(tmp_path / "index.db", embedding_backend="hash") as rf:
        events = rf.events()
        subscription = await events.__aenter__()
    with anyio.fail_after(5):
        assert [e async for e in subscription] == []
    await events.__aexit__(None, None, None)
