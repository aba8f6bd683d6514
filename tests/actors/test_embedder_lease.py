"""The embedder asks its lease's keeper before each batch: a lease lost in the middle of
a window (a server restart) stops it at the next batch, so no text is embedded by
it and by the process that holds the lease now."""

from __future__ import annotations

import anyio
import pytest

from rifflux.actors.embedder import EmbedderActor
from rifflux.actors.messages import EmbedderMessage, IndexerMessage, VectorsEmbedded
from rifflux.store.common import PendingText

from ..helpers import CountingEmbedder

pytestmark = pytest.mark.anyio


class _Pending:
    """One window of texts, then none (each batch stored)."""

    def __init__(self, texts: list[PendingText]) -> None:
        self.texts = texts

    async def pending(self, model: str, limit: int) -> list[PendingText]:
        out, self.texts = self.texts[:limit], self.texts[limit:]
        return out


class _Lease:
    """Held until ``confirmations`` have been given; ``held`` never finds out (as a
    connection the server closed, not yet used)."""

    held = True
    where = "a lease that the test takes away"
    token = None

    def __init__(self, confirmations: int) -> None:
        self.left = confirmations

    async def try_take(self) -> bool:
        return True

    async def confirm(self) -> bool:
        self.left -= 1
        return self.left >= 0

    async def give_back(self) -> None:
        pass


async def test_a_lease_lost_inside_a_window_stops_the_embedder_at_the_next_batch() -> None:
    texts = [PendingText(content_hash=f"h{i}", text=f"text number {i}") for i in range(10)]
    send, receive = anyio.create_memory_object_stream[IndexerMessage](10)
    inbox_send, inbox = anyio.create_memory_object_stream[EmbedderMessage](1)
    actor = EmbedderActor(reader=_Pending(texts), inbox=inbox, out=send, batch_size=3,
                          window=10, lease=_Lease(confirmations=2))
    embedder = CountingEmbedder()
    stored: list[str] = []

    async def indexer() -> None:
        async with receive:
            async for msg in receive:
                assert isinstance(msg, VectorsEmbedded)
                stored.extend(msg.hashes)
                msg.receipt.settle(True)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg, inbox_send, inbox:
            tg.start_soon(indexer)
            await actor._drain(embedder)
            send.close()
    assert len(embedder.embedded) == 6  # two batches of three, then the lease was gone
    assert stored == [t.content_hash for t in sorted(texts, key=lambda t: len(t.text))][:6]
