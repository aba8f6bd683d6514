"""What ``rifflux serve`` refuses: foreign Host and Origin, a missing or wrong token, a body
over the limit, writes when read-only, and starting where it would be unsafe."""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rifflux import Rifflux, discovery

from ..helpers import TOOLS, write
from ..serving import Served, serve_command, serving

TOKEN = "test-token-4f9a1c2e8b"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("secure")
    write(root / "notes", "a.md", "# A\n\nThe retry policy, guarded.\n")
    with serving(root / "index.db", "--watch", str(root / "notes"), "--max-body", "4096",
                 "--allow-origin", "http://localhost:5173", token=TOKEN) as served:
        yield served


@pytest.fixture
def client(server: Served) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=server.url, timeout=30, follow_redirects=False) as c:
        yield c


def _kind(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["type"]


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_every_route_but_healthz_needs_the_token(client: httpx2.Client) -> None:
    for path in ("/api/status", "/api/search?q=retry", "/openapi.json", "/api/events"):
        refused = client.get(path)
        assert _kind(refused) == (401, "unauthorized"), path
        assert refused.headers["www-authenticate"].startswith("Bearer")
    assert _kind(client.post("/mcp", json={})) == (401, "unauthorized")
    assert _kind(client.get("/api/status", headers={"Authorization": "Bearer nope"})) == \
        (401, "unauthorized")
    assert _kind(client.get("/api/status", headers={"Authorization": f"Basic {TOKEN}"})) == \
        (401, "unauthorized")
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/status", headers=AUTH).status_code == 200


def test_a_foreign_host_is_misdirected_whatever_the_token(client: httpx2.Client) -> None:
    for host in ("evil.example", "evil.example:7474", "rifflux.attacker.test"):
        assert _kind(client.get("/api/status", headers={**AUTH, "Host": host})) == \
            (421, "misdirected_request")
    assert _kind(client.get("/healthz", headers={"Host": "evil.example"}))[0] == 421
    for host in ("localhost", "127.0.0.1:9", "[::1]:80"):
        assert client.get("/api/status", headers={**AUTH, "Host": host}).status_code == 200


def test_other_origins_are_forbidden_even_with_the_token(
        client: httpx2.Client, server: Served) -> None:
    own = server.url.rstrip("/")
    for origin in ("http://evil.example", "null", own.replace("127.0.0.1", "localhost"),
                   own + "0"):
        assert _kind(client.get("/api/status", headers={**AUTH, "Origin": origin})) == \
            (403, "forbidden_origin"), origin
        assert _kind(client.post("/mcp", json={}, headers={**AUTH, "Origin": origin}))[0] == 403
    assert client.get("/api/status", headers={**AUTH, "Origin": own}).status_code == 200
    allowed = {**AUTH, "Origin": "http://localhost:5173"}
    assert client.get("/api/status", headers=allowed).status_code == 200


def test_bodies_over_the_limit_are_413_declared_or_streamed(client: httpx2.Client) -> None:
    big = b'{"q": "' + b"x" * 5000 + b'"}'
    declared = client.post("/api/search", content=big,
                           headers={**AUTH, "content-type": "application/json"})
    assert _kind(declared) == (413, "body_too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit counts as it reads
        yield big[:3000]
        yield big[3000:]

    streamed = client.post("/api/search", content=chunks(),
                           headers={**AUTH, "content-type": "application/json"})
    assert _kind(streamed) == (413, "body_too_large")
    assert client.post("/api/search", json={"q": "retry"}, headers=AUTH).status_code == 200


def test_the_page_asks_for_the_token_once_and_keeps_it_in_a_strict_cookie(
        client: httpx2.Client, server: Served) -> None:
    asked = client.get("/", headers={"Accept": "text/html"})
    assert asked.status_code == 303 and asked.headers["location"] == "/login"
    form = client.get("/login")
    assert form.status_code == 200 and 'name="token"' in form.text
    wrong = client.get("/", params={"token": "wrong", "q": "retry"})
    assert wrong.status_code == 401 and "not this server's" in wrong.text
    opened = client.get("/", params={"token": TOKEN, "q": "retry"})
    assert opened.status_code == 303 and opened.headers["location"] == "/?q=retry"
    cookie = opened.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    value = cookie.split(";")[0]
    with httpx2.Client(base_url=server.url, timeout=30) as browser:
        jar = {"Cookie": value}
        assert browser.get("/api/status", headers=jar).status_code == 200
        assert "<title>" in browser.get("/", headers=jar).text
        # a cookie alone never lets another site's page in
        assert browser.get("/api/status", headers={
            **jar, "Origin": "http://evil.example"}).status_code == 403
    posted = client.post("/login", data={"token": TOKEN})
    assert posted.status_code == 303 and "rifflux_token=" in posted.headers["set-cookie"]


def test_the_token_can_come_from_the_environment(tmp_path: Path) -> None:
    token = "env-token-7c3b9d"
    db = tmp_path / "index.db"
    with serving(db, env={"RIFFLUX_TOKEN": token}) as served:  # (no --token)
        with httpx2.Client(base_url=served.url, timeout=30) as http:
            assert _kind(http.get("/api/status")) == (401, "unauthorized")
            assert _kind(http.get("/api/status", headers=AUTH)) == (401, "unauthorized")
            assert http.get("/api/status", headers={
                "Authorization": f"Bearer {token}"}).status_code == 200
        found = discovery.find(db)  # (what --connect auto gives its clients)
        assert found is not None and found.token == token


@pytest.mark.anyio
async def test_mcp_clients_send_the_token(server: Served) -> None:
    async with httpx2.AsyncClient(headers=AUTH, timeout=30) as http, \
            streamable_http_client(server.mcp, http_client=http) as (read, write_), \
            ClientSession(read, write_) as session:
        with anyio.fail_after(30):
            await session.initialize()
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS


# ---------------------------------------------------------------- read-only


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("readonly")
    write(root / "notes", "a.md", "# A\n\nThe retry policy, read only.\n")

    async def index() -> None:
        async with Rifflux(root / "index.db", embedding_backend="hash") as rf:
            await rf.reindex(root / "notes")

    anyio.run(index)
    with serving(root / "index.db", "--read-only", stop_with=signal.SIGINT) as served:
        yield served


@pytest.mark.anyio
async def test_read_only_serves_reads_and_refuses_writes(read_only: Served) -> None:
    root = read_only.db.parent / "notes"
    async with httpx2.AsyncClient(base_url=read_only.url, timeout=30) as client:
        assert (await client.get("/api/search", params={"q": "retry"})).json()["count"] == 1
        for path, body in (("/api/reindex", {"path": str(root)}),
                           ("/api/forget", {"path": str(root)})):
            refused = await client.post(path, json=body)
            assert _kind(refused) == (403, "read_only")
            assert "--read-only" in refused.json()["error"]["message"]
    async with streamable_http_client(read_only.mcp) as (read, write_), \
            ClientSession(read, write_) as session:
        with anyio.fail_after(30):
            await session.initialize()
            result = await session.call_tool("reindex", {"path": str(root)})
            searched = await session.call_tool("search_rifflux", {"query": "retry"})
    assert result.is_error and "read-only" in str(result.content)
    assert not searched.is_error


# ---------------------------------------------------------------- refusing to start


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_no_token_off_loopback_refuses_to_start_saying_how(tmp_path: Path) -> None:
    done = _run(serve_command(tmp_path / "i.db", "--host", "0.0.0.0"))
    assert done.returncode == 2
    assert "without a token" in done.stderr and "RIFFLUX_TOKEN" in done.stderr
    assert not (tmp_path / "i.db").exists()


def test_read_only_needs_an_index_and_no_watcher(tmp_path: Path) -> None:
    missing = _run(serve_command(tmp_path / "i.db", "--read-only"))
    assert missing.returncode == 2 and "no index at" in missing.stderr
    both = _run(serve_command(tmp_path / "i.db", "--read-only", "--watch", str(tmp_path)))
    assert both.returncode == 2 and "--watch" in both.stderr


def test_a_port_in_use_is_an_error_naming_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(serve_command(tmp_path / "i.db", "--port", str(port)))  # (the last wins)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
