"""``rifflux mcp --connect``: a real stdio MCP client (the SDK's) talks to the bridge, which
passes everything on to a real ``rifflux serve``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import LATEST_PROTOCOL_VERSION, TextContent

from .helpers import TOOLS, cli_then, modules_loaded, server_env, write
from .serving import Served, serving

pytestmark = pytest.mark.anyio

TOKEN = "bridge-token-5d1e"
MANY = 300  # (progress is reported as a job starts, each second and as it completes)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("bridge")
    for i in range(12):
        write(root / "notes", f"n{i}.md", f"# Note {i}\n\nThe bridge carries retry {i}.\n")
    for i in range(MANY):
        write(root / "many", f"m{i}.md", f"# Many {i}\n\nProgress passes the bridge {i}.\n")
    with serving(root / "index.db", "--watch", str(root / "notes"), token=TOKEN) as server:
        yield server


@asynccontextmanager
async def bridged(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
                  progress: list[float] | None = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "rifflux", "mcp", *args],
                                   env={**server_env(tmp_path), **(env or {})}, cwd=tmp_path)
    with (tmp_path / "bridge.stderr").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write_), \
                ClientSession(read, write_) as session:
            with anyio.fail_after(60):
                await session.initialize()
            yield session


def _mcp_error(exc: BaseException) -> MCPError:
    """The JSON-RPC error the client got (the SDK raises it inside exception groups)."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    assert isinstance(exc, MCPError), repr(exc)
    return exc


async def _call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    got: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        got.append(progress)

    with anyio.fail_after(60):
        result = await session.call_tool(tool, arguments, progress_callback=on_progress)
    assert not result.is_error, result.content
    text = next(c.text for c in result.content if isinstance(c, TextContent))
    answer: dict[str, Any] = json.loads(text)
    answer["_progress"] = got
    return answer


async def test_tool_calls_and_answers_pass_through_unchanged(served: Served,
                                                             tmp_path: Path) -> None:
    async with bridged(tmp_path, "--connect", served.mcp,
                       env={"RIFFLUX_TOKEN": TOKEN}) as session:
        tools = (await session.list_tools()).tools
        status = await _call(session, "index_status")
        reindexed = await _call(session, "reindex", path=str(served.db.parent / "many"))
        hits = await _call(session, "search_rifflux", query="bridge retry 7", mode="lexical")
    assert {t.name for t in tools} == TOOLS
    assert status["process"]["pid"] == served.proc.pid  # (answered by the server)
    progress = reindexed["_progress"]  # (passed on by the bridge as they come)
    assert reindexed["indexed_files"] == MANY and progress and progress[-1] == MANY
    assert all(a < b for a, b in zip(progress, progress[1:], strict=False))
    assert hits["results"][0]["path"] == "n7.md"


#: What the bridge must never import: the model, numpy, a store's drivers, the library
#: (which opens an index), and the MCP SDK (the bridge passes lines on unread).
_NOT_IN_THE_BRIDGE = ("numpy", "onnxruntime", "tokenizers", "aiosqlite", "sqlite3",
                      "asyncpg", "anyio", "mcp", "rifflux.api", "rifflux.store",
                      "rifflux.actors")
#: The most memory a bridge may hold (issue 23: at most 60 MB).
_BRIDGE_RSS = 60 * 2**20


def _peak_rss(pid: int) -> int | None:
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return None  # (no /proc here)
    line = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


async def test_the_bridge_opens_no_index_and_loads_no_model(served: Served,
                                                            tmp_path: Path) -> None:
    db = tmp_path / "never-opened.db"
    command = [sys.executable, "-c", cli_then(_NOT_IN_THE_BRIDGE), "mcp", "--connect",
               served.mcp, "--db", str(db)]
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_rifflux", "arguments": {"query": "bridge retry 7",
                                                    "mode": "lexical"}}},
    ]
    answers: dict[int, Any] = {}
    with (tmp_path / "bridge.stderr").open("w+") as errlog:
        with anyio.fail_after(60):
            async with await anyio.open_process(
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog,
                    env=server_env(tmp_path, RIFFLUX_TOKEN=TOKEN), cwd=tmp_path) as proc:
                assert proc.stdin is not None and proc.stdout is not None
                lines = BufferedByteReceiveStream(proc.stdout)
                for request in requests:
                    await proc.stdin.send(json.dumps(request).encode() + b"\n")
                    if "id" not in request:
                        continue
                    while request["id"] not in answers:  # (progress may come first)
                        message = json.loads(await lines.receive_until(b"\n", 2**24))
                        if "id" in message:
                            answers[message["id"]] = message
                rss = _peak_rss(proc.pid)
                await proc.stdin.aclose()  # the client leaves: the bridge ends
                code = await proc.wait()
        errlog.seek(0)
        stderr = errlog.read()
    assert code == 0, stderr
    hits = json.loads(answers[2]["result"]["content"][0]["text"])["results"]
    assert hits[0]["path"] == "n7.md"  # (answered by the server, through the bridge)
    assert modules_loaded(stderr) == []
    assert not db.exists() and not db.with_name(db.name + "-wal").exists()
    assert rss is None or rss <= _BRIDGE_RSS, f"{rss / 2**20:.0f} MiB"


async def test_connect_auto_finds_the_server_and_its_token(served: Served,
                                                           tmp_path: Path) -> None:
    async with bridged(tmp_path, "--connect", "auto", "--db", str(served.db)) as session:
        status = await _call(session, "index_status")
    assert status["process"]["pid"] == served.proc.pid


async def test_connect_auto_without_a_server_serves_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "alone.db"
    async with bridged(tmp_path, "--connect", "auto", "--db", str(db)) as session:
        status = await _call(session, "index_status")
    assert status["db_path"] == str(db.resolve())
    assert status["process"]["pid"] != os.getpid()


async def test_a_server_that_cannot_be_reached_is_an_error_that_says_so(
        tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BaseException) as caught:
        async with bridged(tmp_path, "--connect", f"http://127.0.0.1:{port}/mcp"):
            pass
    assert "cannot be reached" in str(_mcp_error(caught.value))


async def test_a_wrong_token_is_an_error_that_says_so(served: Served, tmp_path: Path) -> None:
    with pytest.raises(BaseException) as caught:
        async with bridged(tmp_path, "--connect", served.mcp, env={"RIFFLUX_TOKEN": "wrong"}):
            pass
    assert "answered 401" in str(_mcp_error(caught.value))


async def test_a_restarted_server_gets_a_new_session_unnoticed(tmp_path: Path) -> None:
    write(tmp_path / "notes", "a.md", "# A\n\nThe restart survivor.\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    db = tmp_path / "index.db"
    with serving(db, "--port", port, "--watch", str(tmp_path / "notes")) as first:
        async with bridged(tmp_path, "--connect", f"http://127.0.0.1:{port}") as session:
            before = await _call(session, "index_status")
            first.stop()
            with serving(db, "--port", port) as second:
                after = await _call(session, "search_rifflux", query="survivor")
                status = await _call(session, "index_status")
    assert before["process"]["pid"] == first.proc.pid
    assert status["process"]["pid"] == second.proc.pid
    assert after["results"][0]["path"] == "a.md"


def test_stdin_ending_waits_for_the_answers_under_way_then_writes_nothing() -> None:
    """The client closes stdin with a request unanswered: its answer is written before
    ``run`` returns, and nothing after (a daemon thread writing to stdout while the
    interpreter shuts down aborted the bridge: exit -6, 1 run in 6 under load)."""
    import io
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from rifflux.mcp.bridge import Bridge, Target

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            anyio.run(anyio.sleep, 0.5)  # (the answer comes after stdin ended)
            body = json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        bridge = Bridge(Target(f"http://127.0.0.1:{server.server_address[1]}/mcp", None))
        out = io.BytesIO()
        asked = b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}\n'
        bridge.run(io.BytesIO(asked), out)
        assert json.loads(out.getvalue()) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        bridge._write(b'{"jsonrpc":"2.0","method":"late"}')  # (a stream's, say)
        assert out.getvalue().count(b"\n") == 1
    finally:
        server.shutdown()
        server.server_close()
