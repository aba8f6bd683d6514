"""The git history through the command line, MCP and the JSON API (a search through the
command line and MCP on both stores: ``where``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from .gitrepo import git, handbook
from .helpers import call, eventually, mcp_session, rifflux_cli
from .serving import serving, until


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest) -> str:
    """The index's ``--db``: a file in the test's folder, or a PostgreSQL database."""
    if request.param == "sqlite":
        return "index.db"
    make: Callable[[], str] = request.getfixturevalue("new_postgres_index")
    return make()


def indexed_handbook(tmp_path: Path, where: str = "index.db") -> Path:
    repo = handbook(tmp_path)
    done = rifflux_cli(tmp_path, "--db", where, "index", str(repo))
    assert done.returncode == 0, done.stderr
    return repo


def test_history_searches_commits_with_filters(tmp_path: Path, where: str) -> None:
    indexed_handbook(tmp_path, where)
    done = rifflux_cli(tmp_path, "--db", where, "history", "retry", "policy",
                       "--mode", "lexical", "--json")
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    assert answer["results"][0]["title"] == "Introduce a retry policy for uploads"
    plain = rifflux_cli(tmp_path, "--db", where, "history", "deploy", "onboarding",
                        "--mode", "lexical", "--author", "ada", "--since", "2024-05-01",
                        "--path", "docs/onboarding.md")
    assert plain.returncode == 0, plain.stderr
    first = plain.stdout.splitlines()[0]
    assert "2024-06-01  Ada Lovelace  Write the onboarding guide" in first
    assert "docs/onboarding.md (added) (+3 -0)" in plain.stdout
    none = rifflux_cli(tmp_path, "--db", where, "history", "retry", "--mode", "lexical",
                       "--before", "2024-01-01")
    assert none.returncode == 1 and none.stdout == ""


def test_history_of_a_file_and_of_its_lines(tmp_path: Path) -> None:
    indexed_handbook(tmp_path)
    done = rifflux_cli(tmp_path, "--db", "index.db", "history", "--of", "docs/deploy.md")
    assert done.returncode == 0, done.stderr
    assert [line.split("  ")[-2] for line in done.stdout.splitlines()] == [
        "Introduce a retry policy for uploads", "Add the deployment notes"]
    lines = rifflux_cli(tmp_path, "--db", "index.db", "history", "--of", "docs/deploy.md:4",
                        "--json")
    assert lines.returncode == 0, lines.stderr
    found = json.loads(lines.stdout)
    assert [(c["title"], c["lines"]) for c in found["commits"]] == [
        ("Introduce a retry policy for uploads", [4])]


def test_show_prints_a_commit_by_its_hash(tmp_path: Path) -> None:
    repo = indexed_handbook(tmp_path)
    head = git(repo, "rev-parse", "HEAD~1")
    done = rifflux_cli(tmp_path, "--db", "index.db", "show", head[:8])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"commit {head}\nAuthor: Grace Hopper <grace@example.org>")
    assert "+Retry uploads three times." in done.stdout
    as_json = json.loads(rifflux_cli(tmp_path, "--db", "index.db", "show", head,
                                     "--json").stdout)
    assert as_json["hash"] == head
    # its first 4 digits are enough, as for the API (the handbook's few commits, made at
    # fixed dates, share no 4 first digits)
    shortest = rifflux_cli(tmp_path, "--db", "index.db", "show", head[:4], "--json")
    assert json.loads(shortest.stdout)["hash"] == head, shortest.stderr


def test_no_history_leaves_the_history_out(tmp_path: Path) -> None:
    repo = handbook(tmp_path)
    done = rifflux_cli(tmp_path, "--db", "index.db", "--no-history", "index", str(repo))
    assert done.returncode == 0, done.stderr
    searched = rifflux_cli(tmp_path, "--db", "index.db", "--no-history", "history", "retry")
    assert searched.returncode != 0
    assert "history is turned off" in searched.stderr
    with sqlite3.connect(tmp_path / "index.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM commits").fetchone() == (0,)


@pytest.mark.anyio
async def test_mcp_searches_the_history_and_reads_a_commit_and_a_file_history(
        tmp_path: Path, where: str) -> None:
    repo = handbook(tmp_path)
    head = git(repo, "rev-parse", "HEAD~1")
    async with mcp_session(tmp_path, *(["--db", where] if "://" in where else [])) as session:
        await call(session, "reindex", path=str(repo))

        async def found() -> Any:
            out = await call(session, "search_history", query="retry policy", mode="lexical")
            return out["results"]

        hits = await eventually(found)
        commit = await call(session, "get_history", commit=hits[0]["short"])
        lines = await call(session, "get_history", path="docs/deploy.md", start_line=4)
        small = await call(session, "search_history", query="deploy onboarding retry",
                           mode="lexical", max_chars=1_000)
        tools = {t.name: t.description or "" for t in (await session.list_tools()).tools}
    assert hits[0]["hash"] == head and hits[0]["title"].startswith("Introduce a retry")
    assert commit["hash"] == head and "+Retry uploads three times." in commit["change"]
    assert [c["hash"] for c in lines["commits"]] == [head]
    assert small["truncated"] and len(small["results"]) < small["count"]
    assert "search_rifflux finds what is written now" in tools["search_history"]
    assert "history with get_history" in tools["search_rifflux"]
    assert (tmp_path / "index.db").exists() == ("://" not in where)  # (the store asked for)


def test_the_json_api_searches_the_history(tmp_path: Path, where: str) -> None:
    repo = handbook(tmp_path)
    head = git(repo, "rev-parse", "HEAD~1")
    url = where if "://" in where else None
    with serving(tmp_path / "index.db", "--watch", str(repo), url=url) as served, \
            httpx2.Client(base_url=served.url, timeout=30) as client:
        def found() -> Any:
            answer = client.get("/api/history", params={"query": "retry policy",
                                                        "mode": "lexical"}).json()
            return answer.get("results")

        hits = until(found)
        shown = client.get(f"/api/commits/{head[:8]}")
        missing = client.get("/api/commits/00000000")
        history = client.get("/api/history/file", params={"path": "docs/deploy.md"})
        bad = client.get("/api/history", params={"query": "x", "since": "someday"})
    assert hits[0]["hash"] == head
    assert shown.status_code == 200 and shown.json()["title"].startswith("Introduce a retry")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"
    assert [c["title"] for c in history.json()["commits"]] == [
        "Introduce a retry policy for uploads", "Add the deployment notes"]
    assert bad.status_code == 400 and "since" in bad.json()["error"]["message"]
    assert (tmp_path / "index.db").exists() == (url is None)  # (the store asked for)
