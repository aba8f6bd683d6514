"""Notes as MCP resources, and the prompts, through the SDK's own client over stdio:
listed newest first a page at a time, read by any path through the template, read within
a budget and on from where it stopped, and a subscriber told when its note changes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ResourceUpdatedNotification, TextContent, TextResourceContents

from .helpers import eventually, mcp_session, rifflux_cli, write, write_all, write_vault

pytestmark = pytest.mark.anyio


def aged(root: Path, count: int) -> Path:
    """``count`` notes n0.md ... whose modification times go back a minute a note (n0 is
    the newest)."""
    now = time.time()
    for i in range(count):
        path = write(root, f"n{i}.md", f"# Note {i}\n\nheron number {i} wades.\n")
        os.utime(path, (now - 60 * i, now - 60 * i))
    return root


def indexed(tmp_path: Path, root: Path) -> None:
    done = rifflux_cli(tmp_path, "--db", str(tmp_path / "index.db"), "index", str(root))
    assert done.returncode == 0, done.stderr


def text_of(contents: Any) -> str:
    assert isinstance(contents, TextResourceContents), contents
    return contents.text


async def test_notes_are_listed_newest_first_a_page_at_a_time(tmp_path: Path) -> None:
    kb = aged(tmp_path / "kb", 150)
    indexed(tmp_path, kb)
    async with mcp_session(tmp_path) as session:
        with anyio.fail_after(60):
            first = await session.list_resources()
            assert first.next_cursor is not None
            from mcp.types import PaginatedRequestParams

            second = await session.list_resources(
                params=PaginatedRequestParams(cursor=first.next_cursor))
    assert len(first.resources) == 100 and len(second.resources) == 50
    assert second.next_cursor is None
    listed = [*first.resources, *second.resources]
    assert [r.uri for r in listed] == [f"rifflux://kb/n{i}.md" for i in range(150)]
    note = listed[7]
    assert (note.title, note.mime_type, note.name) == ("Note 7", "text/markdown", "kb/n7.md")
    assert note.size == (kb / "n7.md").stat().st_size
    assert note.annotations is not None and note.annotations.last_modified


async def test_any_note_is_read_by_its_path_through_the_template(tmp_path: Path) -> None:
    kb = write_all(tmp_path / "kb", {"sub dir/Note A.md": "# A\n\nThe first note.\n",
                                     "b.md": "# B\n\nSecond.\n"})
    indexed(tmp_path, kb)
    async with mcp_session(tmp_path) as session:
        with anyio.fail_after(60):
            templates = await session.list_resource_templates()
            [template] = templates.resource_templates
            assert template.uri_template == "rifflux://{folder}/{+path}"
            read = await session.read_resource("rifflux://kb/sub%20dir/Note%20A.md")
            with pytest.raises(MCPError, match="not a note in kb"):
                await session.read_resource("rifflux://kb/nothing.md")
            with pytest.raises(MCPError, match="no indexed folder is named 'other'"):
                await session.read_resource("rifflux://other/b.md")
    [contents] = read.contents
    assert text_of(contents) == "# A\n\nThe first note.\n".rstrip("\n")
    assert contents.mime_type == "text/markdown"
    assert contents.meta is not None and contents.meta["total_lines"] == 3


async def test_a_long_note_is_read_within_the_budget_and_on_from_where_it_stopped(
    tmp_path: Path
) -> None:
    lines = [f"line {i:05d} " + "x" * 60 for i in range(1, 2001)]
    kb = write_all(tmp_path / "kb", {"long.md": "# Long\n\n" + "\n".join(lines) + "\n"})
    indexed(tmp_path, kb)
    got: list[str] = []
    pages = 0
    async with mcp_session(tmp_path) as session:
        uri: str | None = "rifflux://kb/long.md"
        while uri is not None:
            with anyio.fail_after(60):
                [contents] = (await session.read_resource(uri)).contents
            pages += 1
            text, meta = text_of(contents), contents.meta or {}
            uri = meta.get("next_uri")
            if uri is not None:
                body, said = text.rsplit("\n…[", 1)
                assert len(body) <= 40_000 and f"read on with {uri}]" in said
                assert meta["truncated"] and meta["next_start_line"] == meta["end_line"] + 1
                text = body
            got.extend(text.split("\n"))
    assert pages == 4  # (about 137,000 characters, 40,000 a page)
    assert got == ["# Long", "", *lines]


@pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")
async def test_a_subscriber_is_told_when_its_note_changes(tmp_path: Path) -> None:
    kb = write_all(tmp_path / "kb", {"watched.md": "# Watched\n\nfirst version\n",
                                     "other.md": "# Other\n\nuntouched\n"})
    updated: list[str] = []
    changed = anyio.Event()

    async def notified(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            changed.set()

    async with mcp_session(tmp_path, "--watch", str(kb), message_handler=notified) as session:

        async def listed() -> bool:
            return len((await session.list_resources()).resources) == 2

        await eventually(listed, within=60)
        await session.subscribe_resource("rifflux://kb/watched.md")
        (kb / "other.md").write_text("# Other\n\nchanged, but nobody asked\n", encoding="utf-8")
        (kb / "watched.md").write_text("# Watched\n\nsecond version\n", encoding="utf-8")
        with anyio.fail_after(30):
            await changed.wait()
        [contents] = (await session.read_resource("rifflux://kb/watched.md")).contents
        assert "second version" in text_of(contents)
        await session.unsubscribe_resource("rifflux://kb/watched.md")
        await session.subscribe_resource("rifflux://kb/other.md")
        changed = anyio.Event()
        (kb / "watched.md").write_text("# Watched\n\nthird, unwatched\n", encoding="utf-8")
        (kb / "other.md").unlink()
        with anyio.fail_after(30):
            await changed.wait()
    assert updated == ["rifflux://kb/watched.md", "rifflux://kb/other.md"]


async def test_the_instructions_name_the_indexed_folders_and_their_sizes(tmp_path: Path) -> None:
    kb = aged(tmp_path / "kb", 3)
    indexed(tmp_path, kb)
    async with mcp_session(tmp_path) as session:
        result = session.initialize_result
    assert result is not None and result.instructions is not None
    assert result.instructions.endswith(f"\nIndexed: {kb} (3 files).")
    assert len(result.instructions) < 600  # (short: clients put it in every session)
    async with mcp_session(tmp_path, env=None, cwd=tmp_path) as session:
        fresh = session.initialize_result
    assert fresh is not None and fresh.instructions == result.instructions
    empty = tmp_path / "empty"
    empty.mkdir()
    async with mcp_session(empty) as session:
        none = session.initialize_result
    assert none is not None and none.instructions is not None
    assert none.instructions.endswith("Nothing is indexed yet: call reindex with a folder's "
                                      "absolute path.")


async def test_prompts_are_listed_and_filled_from_the_tools(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    indexed(tmp_path, vault)
    async with mcp_session(tmp_path) as session:
        with anyio.fail_after(60):
            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            search = await session.get_prompt("search-notes", {"query": "garden path"})
            recent = await session.get_prompt("recent-changes", {"since": "1d"})
            links = await session.get_prompt("backlinks", {"path": "Beta.md"})
            with pytest.raises(MCPError, match="Missing required arguments"):
                await session.get_prompt("backlinks", {})
    assert set(prompts) == {"search-notes", "recent-changes", "backlinks"}
    assert [(a.name, a.required) for a in prompts["search-notes"].arguments or []] == [
        ("query", True), ("folder", False)]
    assert prompts["backlinks"].title == "What links to this note"

    def said(result: Any) -> str:
        [message] = result.messages
        assert message.role == "user" and isinstance(message.content, TextContent)
        text: str = message.content.text
        return text

    assert '"path": "notes/far/Epsilon.md"' in said(search)  # (the garden path's note)
    assert "get_chunk" in said(search)
    assert '"count": 10' in said(recent) and '"path": "Home.md"' in said(recent)
    assert '"backlinks": [' in said(links) and '"path": "Home.md"' in said(links)
