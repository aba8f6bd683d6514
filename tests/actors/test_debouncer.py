from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rifflux.actors.debouncer import Debouncer
from rifflux.actors.messages import (
    ChangeKind,
    DebouncedMessage,
    FilesChanged,
    IndexBatch,
    RescanRequested,
    WatchMessage,
)

pytestmark = pytest.mark.anyio
ROOT = Path("/r")


async def run_until_closed(
    events: list[WatchMessage], quiet: float = 3600
) -> list[DebouncedMessage]:
    """Feed events, close the input, collect everything the debouncer sends."""
    send, recv = anyio.create_memory_object_stream[WatchMessage](100)
    out_send, out_recv = anyio.create_memory_object_stream[DebouncedMessage](100)
    deb = Debouncer(inbox=recv, out=out_send, quiet=quiet, max_delay=3600)
    got: list[DebouncedMessage] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            await tg.start(deb.run)
            async with send:
                for ev in events:
                    await send.send(ev)
            async with out_recv:
                async for msg in out_recv:
                    got.append(msg)
    return got


def changed(*items: tuple[ChangeKind, str]) -> FilesChanged:
    return FilesChanged(root=ROOT, changes=tuple(items))


async def test_a_burst_becomes_one_batch_and_the_last_event_wins() -> None:
    got = await run_until_closed(
        [
            changed(("added", "a.md"), ("modified", "a.md")),
            changed(("deleted", "b.md")),
            changed(("added", "b.md")),  # delete then create: an upsert
            changed(("added", "c.md")),
            changed(("deleted", "c.md")),  # create then delete: a delete
            changed(("modified", "a.md")),
        ]
    )
    assert got == [
        IndexBatch(root=ROOT, upserts=frozenset({"a.md", "b.md"}), deletes=frozenset({"c.md"}))
    ]


async def test_batches_are_per_root() -> None:
    other = Path("/other")
    got = await run_until_closed(
        [
            changed(("added", "a.md")),
            FilesChanged(root=other, changes=(("added", "a.md"),)),
        ]
    )
    assert {(b.root, b.upserts) for b in got if isinstance(b, IndexBatch)} == {
        (ROOT, frozenset({"a.md"})),
        (other, frozenset({"a.md"})),
    }


async def test_a_rescan_supersedes_pending_paths_of_its_root() -> None:
    got = await run_until_closed(
        [
            changed(("added", "a.md")),
            RescanRequested(root=ROOT),
            changed(("added", "b.md")),
        ]
    )
    assert got == [RescanRequested(root=ROOT)]


async def test_quiet_window_flushes_without_closing() -> None:
    send, recv = anyio.create_memory_object_stream[WatchMessage](10)
    out_send, out_recv = anyio.create_memory_object_stream[DebouncedMessage](10)
    deb = Debouncer(inbox=recv, out=out_send, quiet=0.02)
    async with anyio.create_task_group() as tg:
        await tg.start(deb.run)
        await send.send(changed(("added", "x.md")))
        await send.send(changed(("modified", "x.md")))
        with anyio.fail_after(5):
            first = await out_recv.receive()
        await send.send(changed(("deleted", "x.md")))
        with anyio.fail_after(5):
            second = await out_recv.receive()
        await send.aclose()
    assert first == IndexBatch(root=ROOT, upserts=frozenset({"x.md"}), deletes=frozenset())
    assert second == IndexBatch(root=ROOT, upserts=frozenset(), deletes=frozenset({"x.md"}))
    await out_recv.aclose()


async def test_too_many_pending_paths_flush_early() -> None:
    send, recv = anyio.create_memory_object_stream[WatchMessage](10)
    out_send, out_recv = anyio.create_memory_object_stream[DebouncedMessage](10)
    deb = Debouncer(inbox=recv, out=out_send, quiet=3600, max_delay=3600, max_paths=50)
    async with anyio.create_task_group() as tg:
        await tg.start(deb.run)
        await send.send(changed(*(("added", f"{i}.md") for i in range(60))))
        with anyio.fail_after(5):
            batch = await out_recv.receive()
        await send.aclose()
    assert isinstance(batch, IndexBatch) and len(batch.upserts) == 60
    await out_recv.aclose()
