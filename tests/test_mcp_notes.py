"""Agents keep notes over MCP (issue 26): a real client on ``rifflux mcp --writable DIR``
writes, edits, moves, deletes and restores notes and finds them at once; without a
writable folder the tools that write are not listed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from rifflux.config import Settings
from rifflux.core.note_text import sha256
from rifflux.mcp._fast_start.handoff import capture_handshake
from rifflux.mcp.server import build_server

from .helpers import call, call_error, mcp_session, write

pytestmark = pytest.mark.anyio

WRITE_TOOLS = {"write_note", "edit_note", "move_note", "delete_note", "restore_note"}


async def test_without_a_writable_folder_only_recent_is_listed(tmp_path: Path) -> None:
    async with mcp_session(tmp_path) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "recent" in names and not names & WRITE_TOOLS
        error = await call_error(session, "write_note", path="a.md", content="x")
    assert "write_note" in error  # (an unknown tool to this server)
    assert not (tmp_path / "a.md").exists()


async def test_the_note_tools_are_described_as_tersely_as_the_others() -> None:
    captured = await capture_handshake(build_server(Settings(writable=(Path("notes"),))))
    for answers in captured["results"].values():
        listed = answers["tools/list"]
        # 17,634 with the history's two tools (2,575 of it: the bound rose with them)
        assert len(json.dumps(listed, ensure_ascii=False)) < 18_000
    for tool in listed["tools"]:
        assert 60 < len(tool["description"]) <= 320, tool["name"]
        schema = tool["inputSchema"]
        assert schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert 10 < len(prop["description"]) <= 100, (tool["name"], name)
            assert "title" not in prop and "type" in prop, (tool["name"], name)


async def test_an_agent_writes_edits_moves_deletes_and_restores_notes(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes, "Home.md", "# Home\n\nStart at [[db]].\n")
    async with mcp_session(tmp_path, "--writable", str(notes), "--log-level", "DEBUG") \
            as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert WRITE_TOOLS <= set(tools)
        edit = tools["edit_note"].input_schema["properties"]
        assert {"append", "prepend", "replace_section", "find", "replace", "if_match"} <= \
            set(edit)
        written = await call(session, "write_note", path="db.md", title="Database",
                             tags=["adr"], content="# DB\n\nWe chose the capybara store.\n")
        assert written["lines"] == [[1, 7]] and written["previous_sha256"] is None
        found = await call(session, "search_rifflux", query="capybara", mode="lexical")
        assert [h["path"] for h in found["results"]] == ["db.md"]  # at once

        (notes / "db.md").write_text("# DB\n\nA person changed it: the tapir store.\n")
        conflict = await call_error(session, "edit_note", path="db.md", append="More.",
                                    if_match=written["sha256"])
        now = sha256((notes / "db.md").read_bytes())
        assert "changed since it was read" in conflict and now in conflict
        edited = await call(session, "edit_note", path="db.md",
                            replace_section={"heading": "DB", "text": "The tapir store, "
                                                                      "agreed."},
                            if_match=now)
        assert edited["previous_sha256"] == now and edited["lines"] == [[3, 3]]
        twice = await call_error(session, "edit_note", path="db.md", find="a",
                                 replace="b")
        assert "times" in twice and "replace_all" in twice

        moved = await call(session, "move_note", src="db.md", dst="adr/database.md")
        assert [(u["path"], u["after"]) for u in moved["links_updated"]] == [
            ("Home.md", "[[database]]")]
        links = await call(session, "get_links", path="adr/database.md")
        assert [b["path"] for b in links["backlinks"]] == ["Home.md"]

        deleted = await call(session, "delete_note", path="adr/database.md")
        assert deleted["sha256"] is None and deleted["trash_path"].startswith(".rifflux-trash/")
        gone = await call(session, "search_rifflux", query="tapir", mode="lexical")
        assert gone["results"] == []
        await call(session, "restore_note", path="adr/database.md")
        back = await call(session, "search_rifflux", query="tapir", mode="lexical")
        assert [h["path"] for h in back["results"]] == ["adr/database.md"]

        recent = await call(session, "recent", limit=2)  # (Home.md: its link rewritten)
        assert {(n["path"], n["title"]) for n in recent["notes"]} == {
            ("Home.md", "Home"), ("adr/database.md", "DB")}  # (the person dropped the title)
        refused = await call_error(session, "write_note", path="../out.md", content="x")
        assert "'..'" in refused
    assert not (tmp_path / "out.md").exists()
    # the front answered the handshake from the writing server's own snapshot
    log = (tmp_path / "server.stderr").read_text()
    assert "the front answered initialize" in log and "differed" not in log


async def test_rifflux_serve_with_writable_offers_the_note_tools_over_http(
    tmp_path: Path,
) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from .serving import serving

    notes = tmp_path / "notes"
    with serving(tmp_path / "i.db", "--writable", str(notes)) as server:
        async with streamable_http_client(server.mcp) as (read, write_), \
                ClientSession(read, write_) as session:
            with anyio.fail_after(60):
                await session.initialize()
                names = {t.name for t in (await session.list_tools()).tools}
                assert WRITE_TOOLS <= names
            done = await call(session, "write_note", path="served.md",
                              content="# Served\n\nThe serval note.\n")
            found = await call(session, "search_rifflux", query="serval", mode="lexical")
    assert [h["path"] for h in found["results"]] == ["served.md"]
    assert done["sha256"] == sha256((notes / "served.md").read_bytes())


def test_rifflux_serve_refuses_writable_with_read_only(tmp_path: Path) -> None:
    from .serving import serve_command

    (tmp_path / "i.db").touch()
    refused = subprocess.run(serve_command(tmp_path / "i.db", "--read-only", "--writable",
                                           str(tmp_path / "notes")), capture_output=True,
                             text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "--writable" in refused.stderr
    assert not (tmp_path / "notes").exists()
