"""Links between notes through the MCP server (a real client over stdio) and the command
line (subprocesses), on the vault of ``test_links``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rifflux.answers.budget import answer_text

from .helpers import (
    HOME_LINKS,
    VAULT,
    call,
    call_error,
    mcp_session,
    rifflux_cli,
    write_vault,
)

pytestmark = pytest.mark.anyio


async def test_links_and_neighbours_through_mcp(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(vault))
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("get_links", "get_neighbors"):
            tool = tools[name]
            assert tool.annotations is not None and tool.annotations.read_only_hint is True
            props = tool.input_schema["properties"]
            assert tool.input_schema["required"] == ["path"]
            assert all(props[p].get("description") for p in props), name
        depth = tools["get_neighbors"].input_schema["properties"]["depth"]
        assert (depth["minimum"], depth["maximum"], depth["default"]) == (1, 10, 1)
        search_props = tools["search_rifflux"].input_schema["properties"]
        assert {"near", "depth"} <= set(search_props)

        links = await call(session, "get_links", path="Home.md")
        assert [(o["target"], o["path"], o["line"]) for o in links["outgoing"]] == HOME_LINKS
        assert links["counts"] == {"outgoing": 10, "backlinks": 2, "unresolved": 1}
        assert [b["path"] for b in links["backlinks"]] == ["Projects/Alpha.md",
                                                          "b/deeper/Note.md"]
        cut = await call(session, "get_links", path="Home.md", limit=3)
        assert len(cut["outgoing"]) == 3 and cut["counts"]["outgoing"] == 10
        assert cut["truncated"] is True and "limit" in cut["hint"]

        near = await call(session, "get_neighbors", path="notes/far/Epsilon.md", depth=2)
        root = str(vault.resolve())
        assert near["neighbors"] == [
            {"path": "notes/Delta.md", "title": "Delta", "distance": 1, "root": root},
            {"path": "Home.md", "title": "Home page", "distance": 2, "root": root}]
        assert near["count"] == 2 and "truncated" not in near

        hits = await call(session, "search_rifflux", query="garden", mode="lexical",
                          near="notes/far/Epsilon.md", depth=2, explain=True)
        assert hits["count"] > 0
        assert {h["path"] for h in hits["results"]} <= {"notes/far/Epsilon.md",
                                                       "notes/Delta.md", "Home.md"}
        assert hits["explain"]["filters"] == {"near": "notes/far/Epsilon.md", "depth": 2}
        assert all("backlink_count" in h for h in hits["results"])
        plain = await call(session, "search_rifflux", query="garden", mode="lexical")
        assert "notes/far/Epsilon.md" in {h["path"] for h in plain["results"]}
        assert "explain" not in plain

        error = await call_error(session, "get_links", path="Nope.md")
        assert "not an indexed note" in error and "search results" in error
        error = await call_error(session, "get_neighbors", path="Home.md", depth=0)
        assert "depth" in error and "call again" in error
        error = await call_error(session, "search_rifflux", query="x", near="Nope.md")
        assert "not an indexed note" in error
        status = await call(session, "index_status")
        assert (status["links"], status["unresolved_links"]) == (14, 1)

        # a hub of 150 links to notes not written yet: the answer keeps to max_chars,
        # cutting unresolved (copies of outgoing links) first, and says what it cut
        lines = [f"- [[Missing note {i}]] is one of the notes still to be written, as "
                 "the plan for the garden and its paths says it will be, one day" for i in
                 range(150)]
        (vault / "Hub.md").write_text("# Hub\n\n" + "\n".join(lines) + "\n")
        await call(session, "reindex", path=str(vault))
        hub = await call(session, "get_links", path="Hub.md", max_chars=5000)
        assert len(answer_text(hub)) <= 5000
        assert hub["counts"] == {"outgoing": 150, "backlinks": 0, "unresolved": 150}
        assert hub["truncated"] is True and "max_chars" in hub["hint"]
        assert 0 < len(hub["outgoing"]) and len(hub["unresolved"]) < len(hub["outgoing"])
        default = await call(session, "get_links", path="Hub.md", limit=1000)
        assert len(answer_text(default)) <= 40_000
        whole = await call(session, "get_links", path="Hub.md", limit=1000, max_chars=10**6)
        assert len(whole["outgoing"]) == len(whole["unresolved"]) == 150
        assert "truncated" not in whole


def test_links_and_neighbours_through_the_command_line(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault")
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(vault)).returncode == 0

    done = rifflux_cli(tmp_path, "--db", "index.db", "links", "vault/Home.md")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "vault/Home.md"
    assert lines[1] == "links to: 10 (1 unresolved)"
    assert any(line.split() == ["12", "[[Missing", "Note]]", "unresolved"] for line in lines)
    # (every path as search prints it: from the working directory, here above the vault)
    assert any(line.split() == ["13", "[two](notes/Delta%20Two.md#intro)", "vault/notes/Delta",
                                "Two.md"] for line in lines)
    assert "linked from: 2" in lines
    assert "  vault/b/deeper/Note.md:3  Note B  [[Home]]" in lines

    done = rifflux_cli(tmp_path, "--db", "index.db", "links", "Home.md", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [(o["target"], o["path"], o["line"]) for o in found["outgoing"]] == HOME_LINKS

    done = rifflux_cli(tmp_path, "--db", "index.db", "neighbors", "notes/far/Epsilon.md",
                       "--depth", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1  vault/notes/Delta.md  Delta",
                                        "2  vault/Home.md  Home page"]
    done = rifflux_cli(tmp_path, "--db", "index.db", "neighbors", "Home.md", "--json")
    assert {n["path"] for n in json.loads(done.stdout)} == set(VAULT) - {
        "Home.md", "notes/far/Epsilon.md"}

    done = rifflux_cli(tmp_path, "--db", "index.db", "search", "garden", "--mode", "lexical",
                       "--near", "vault/notes/far/Epsilon.md", "--json")
    assert done.returncode == 0, done.stderr
    assert {h["path"] for h in json.loads(done.stdout)["results"]} <= {
        "notes/far/Epsilon.md", "notes/Delta.md"}

    for args, message in ((("neighbors", "Home.md", "--depth", "11"), "depth must be"),
                          (("search", "x", "--depth", "2"), "depth goes with near")):
        done = rifflux_cli(tmp_path, "--db", "index.db", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("rifflux: error: ") and message in done.stderr
        assert "Traceback" not in done.stderr

    done = rifflux_cli(tmp_path, "--db", "index.db", "status")
    assert any(line.split()[:2] == ["links", "14"] for line in done.stdout.splitlines())


def test_a_note_the_index_does_not_hold_is_one_mistake_with_one_exit_code(
    tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault")
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(vault)).returncode == 0
    for args in (("show", "vault/Nope.md"), ("show", "Nope.md:3"), ("links", "Nope.md"),
                 ("neighbors", "Nope.md"), ("search", "x", "--near", "Nope.md"),
                 ("links", "Nope.md", "--json"), ("neighbors", "Nope.md", "--depth", "2")):
        done = rifflux_cli(tmp_path, "--db", "index.db", *args)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.startswith("rifflux: error: ") and "not" in done.stderr, args
        assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == "", args
