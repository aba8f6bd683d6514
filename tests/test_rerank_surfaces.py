"""A hypothesis and the reranker through every surface, on both stores: MCP (a real
``rifflux mcp`` over stdio), the command line (``rifflux search``) and the JSON API (the
real app in process), each beside a real rerank server on a free port
(tests/rerank_server.py), whose failure each answer names in its hint."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from rifflux import Rifflux, Settings
from rifflux.http.app import create_app
from rifflux.http.options import ServeOptions

from .helpers import (
    Location,
    call,
    call_error,
    cli_env,
    mcp_session,
    rifflux_cli,
    server_env,
    write_all,
)
from .rerank_server import RerankServer, ordered_by_cosine, rerank_server

pytestmark = pytest.mark.anyio

NOTES = {
    "otters.md": "# Otters\n\nSea otters crack mussels open on stones and sleep holding hands "
                 "in the kelp.\n",
    "kelp.md": "# Kelp\n\nKelp forests shelter otters, fish and urchins along cold coasts.\n",
    "mussels.md": "# Mussels\n\nMussels cling to rocks with threads; otters and gulls eat "
                  "them.\n",
    "herons.md": "# Herons\n\nGrey herons stand in shallow water and spear fish at dawn.\n",
    "bread.md": "# Bread\n\nSourdough needs a starter, a long rise and a hot oven.\n",
}
QUERY = "otters"
HYPOTHESIS = "Otters eat shellfish they crack open on stones."
#: The rerank timeout here (seconds): these tests are not about it, and the server's
#: cosines take most of the default 2 s on a machine busy with the rest of the suite.
SLACK = "30"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_all(tmp_path / "notes", NOTES)


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with rerank_server() as running:
        yield running


def _reranked_as_the_server_orders(answer: dict[str, Any]) -> None:
    hits = answer["results"]
    assert len(hits) >= 3 and all("rerank" in h["score_breakdown"] for h in hits)
    assert [h["content"] for h in hits] == ordered_by_cosine(QUERY, [h["content"]
                                                                     for h in hits])


def _told_the_hypothesis(answer: dict[str, Any]) -> None:
    assert answer["explain"]["texts"] == {"lexical": QUERY,
                                          "semantic": f"{HYPOTHESIS}\n{QUERY}",
                                          "hypothesis": True}


def _not_reranked(answer: dict[str, Any]) -> None:
    assert all("rerank" not in h["score_breakdown"] for h in answer["results"])
    assert "not reranked (the rerank server at" in answer["hint"]
    assert "answered 500" in answer["hint"]


async def test_mcp_takes_a_hypothesis_and_reranks_saying_when_it_could_not(
    tmp_path: Path, db: Location, notes: Path, server: RerankServer
) -> None:
    env = server_env(tmp_path, RIFFLUX_RERANK="1", RIFFLUX_RERANK_URL=server.url,
                     RIFFLUX_RERANK_TIMEOUT=SLACK)
    async with mcp_session(tmp_path, "--db", str(db), env=env) as session:
        await call(session, "reindex", path=str(notes))
        answer = await call(session, "search_rifflux", query=QUERY, hypothesis=HYPOTHESIS,
                            explain=True)
        server.fault = "500"
        failed = await call(session, "search_rifflux", query=QUERY)
        wrong = await call_error(session, "search_rifflux", query=QUERY, mode="lexical",
                                 hypothesis=HYPOTHESIS)
        status = await call(session, "index_status")
    _reranked_as_the_server_orders(answer)
    _told_the_hypothesis(answer)
    assert answer["explain"]["rerank"] == {"by": server.url + "/v1/rerank", "depth": 30}
    _not_reranked(failed)
    assert "hybrid or semantic" in wrong
    assert status["reranker"]["failures"] == 1


def test_the_command_line_takes_a_hypothesis_and_the_rerank_options(
    tmp_path: Path, db: Location, notes: Path, server: RerankServer
) -> None:
    env = cli_env(tmp_path, RIFFLUX_RERANK_TIMEOUT=SLACK)
    assert rifflux_cli(tmp_path, "--db", str(db), "index", str(notes), env=env).returncode == 0
    asked = rifflux_cli(tmp_path, "--db", str(db), "search", QUERY, "--hypothesis", HYPOTHESIS,
                        "--rerank", "--rerank-url", server.url, "--json", "--explain", env=env)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    _reranked_as_the_server_orders(answer)
    _told_the_hypothesis(answer)
    printed = rifflux_cli(tmp_path, "--db", str(db), "search", QUERY, "--hypothesis",
                          HYPOTHESIS, "--explain", "--rerank-url", server.url,
                          env={**env, "RIFFLUX_RERANK": "1", "COLUMNS": "400"})
    semantic = f"{HYPOTHESIS}\n{QUERY}"
    assert f"semantic text (the hypothesis): {semantic!r}" in printed.stdout
    assert f"reranked: the first 30 by {server.url}/v1/rerank" in printed.stdout
    off = rifflux_cli(tmp_path, "--db", str(db), "search", QUERY, "--no-rerank", "--json",
                      env={**env, "RIFFLUX_RERANK": "1", "RIFFLUX_RERANK_URL": server.url})
    assert all("rerank" not in h["score_breakdown"] for h in json.loads(off.stdout)["results"])
    # (a search by words alone is answered without the library's actors, unless reranked)
    words = rifflux_cli(tmp_path, "--db", str(db), "search", QUERY, "--mode", "lexical",
                        "--json", env={**env, "RIFFLUX_RERANK": "1",
                                       "RIFFLUX_RERANK_URL": server.url})
    _reranked_as_the_server_orders(json.loads(words.stdout))
    server.fault = "500"
    failed = rifflux_cli(tmp_path, "--db", str(db), "search", QUERY, "--json",
                         env={**env, "RIFFLUX_RERANK": "1", "RIFFLUX_RERANK_URL": server.url})
    assert failed.returncode == 0  # (hits, in their fused order: never an error)
    _not_reranked(json.loads(failed.stdout))
    assert "rifflux: not reranked (the rerank server at" in failed.stderr
    lexical = rifflux_cli(tmp_path, "--db", str(db), "search", QUERY, "--mode", "lexical",
                          "--hypothesis", HYPOTHESIS, env=env)
    assert lexical.returncode != 0 and "hybrid or semantic" in lexical.stderr
    status = rifflux_cli(tmp_path, "--db", str(db), "--rerank-url", server.url, "status",
                         env=env)
    assert re.search(rf"^reranker +{re.escape(server.url)}/v1/rerank \(jina\), the first 30 "
                     r"hits of searches that ask", status.stdout, re.M), status.stdout
    unset = rifflux_cli(tmp_path, "--db", str(db), "--rerank", "search", QUERY, env=env)
    assert unset.returncode == 2 and "names no reranker" in unset.stderr


async def test_the_json_api_takes_a_hypothesis_and_rerank(
    db: Location, notes: Path, server: RerankServer
) -> None:
    settings = Settings(rerank_url=server.url, rerank=True, rerank_timeout=float(SLACK))
    async with Rifflux(db, settings=settings.with_overrides(embedding_backend="hash")) as rf:
        await rf.reindex(notes)
        transport = httpx2.ASGITransport(app=create_app(rf, ServeOptions()))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            got = (await http.get("/api/search", params={
                "q": QUERY, "hypothesis": HYPOTHESIS, "explain": "true"})).json()
            posted = (await http.post("/api/search", json={
                "q": QUERY, "hypothesis": HYPOTHESIS, "rerank": False})).json()
            blank = await http.get("/api/search", params={"q": QUERY, "hypothesis": " "})
            lexical = await http.post("/api/search", json={
                "q": QUERY, "mode": "lexical", "hypothesis": HYPOTHESIS})
            server.fault = "500"
            failed = (await http.get("/api/search", params={"q": QUERY})).json()
    _reranked_as_the_server_orders(got)
    _told_the_hypothesis(got)
    assert posted["results"] and all("rerank" not in h["score_breakdown"]
                                     for h in posted["results"])
    assert "hint" not in posted
    assert blank.status_code == 400 and "blank" in blank.json()["error"]["message"]
    assert lexical.status_code == 400
    assert "hybrid or semantic" in lexical.json()["error"]["message"]
    _not_reranked(failed)
