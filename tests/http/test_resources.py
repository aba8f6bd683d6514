"""Notes as MCP resources, and the prompts, at a real ``rifflux serve``'s /mcp: two clients
at once, each told only of the notes it subscribed to when they change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ResourceUpdatedNotification, TextResourceContents

from ..helpers import write_all
from ..serving import serving, until

pytestmark = [pytest.mark.anyio,
              pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")]


class Told:
    """The resources/updated notifications one client received."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.event.set()

    async def next(self) -> str:
        with anyio.fail_after(30):
            await self.event.wait()
        self.event = anyio.Event()
        return self.uris[-1]


async def test_resources_and_prompts_over_http_and_each_subscriber_told_of_its_note(
    tmp_path: Path
) -> None:
    kb = write_all(tmp_path / "kb", {"a.md": "# A\n\nfirst\n", "b.md": "# B\n\nfirst\n",
                                     "deep/c d.md": "# C\n\nthird note\n"})
    with serving(tmp_path / "index.db", "--watch", str(kb)) as served:
        with httpx2.Client(base_url=served.url, timeout=30) as http:
            until(lambda: http.get("/api/status").json()["files"] == 3, within=60)
        told_first, told_second = Told(), Told()
        async with streamable_http_client(served.mcp) as (read, write_), \
                ClientSession(read, write_, message_handler=told_first) as first, \
                streamable_http_client(served.mcp) as (read2, write2), \
                ClientSession(read2, write2, message_handler=told_second) as second:
            with anyio.fail_after(60):
                init = await first.initialize()
                await second.initialize()
                listed = await first.list_resources()
                [page] = (await second.read_resource("rifflux://kb/deep/c%20d.md")).contents
                prompts = await second.list_prompts()
                filled = await first.get_prompt("search-notes", {"query": "third note"})
                await first.subscribe_resource("rifflux://kb/a.md")
                await second.subscribe_resource("rifflux://kb/b.md")
            (kb / "a.md").write_text("# A\n\nsecond\n", encoding="utf-8")
            assert await told_first.next() == "rifflux://kb/a.md"
            (kb / "b.md").write_text("# B\n\nsecond\n", encoding="utf-8")
            assert await told_second.next() == "rifflux://kb/b.md"
            [now] = (await first.read_resource("rifflux://kb/a.md")).contents
    assert init.capabilities.resources is not None and init.capabilities.resources.subscribe
    assert init.instructions is not None and f"Indexed: {kb} (3 files)." in init.instructions
    assert {r.uri for r in listed.resources} == {"rifflux://kb/a.md", "rifflux://kb/b.md",
                                                 "rifflux://kb/deep/c%20d.md"}
    assert isinstance(page, TextResourceContents) and page.text == "# C\n\nthird note"
    assert {p.name for p in prompts.prompts} == {"search-notes", "recent-changes", "backlinks"}
    assert "deep/c d.md" in str(filled.messages[0].content)
    assert isinstance(now, TextResourceContents) and "second" in now.text
    assert told_first.uris == ["rifflux://kb/a.md"]  # (b.md was the other client's)
    assert told_second.uris == ["rifflux://kb/b.md"]
