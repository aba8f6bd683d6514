"""The MCP front: the handshake answered before the SDK is loaded, then handed off.

Unit tests drive ``Front`` over real pipes; the snapshot tests ask the SDK
itself (in memory) what it answers; the end-to-end test compares, byte for
byte after parsing, what a client gets from a server whose front answers with
what it gets from one where the SDK answers everything.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from rifflux import Settings
from rifflux.mcp._fast_start.front import Front, Inbound
from rifflux.mcp._fast_start.handoff import capture_handshake, refresh_snapshot
from rifflux.mcp._fast_start.snapshot import (
    SEED,
    SEED_WRITES,
    cache_path,
    load_snapshot,
    tool_schema,
)
from rifflux.mcp._fast_start.wire import Wire
from rifflux.mcp.server import build_server

from .helpers import server_env, write_corpus

SEED_DATA: dict[str, Any] = json.loads(SEED.read_text(encoding="utf-8"))
LATEST = SEED_DATA["handshake_versions"][-1]


def _initialize(request_id: int, version: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "front-test", "version": "0"}, **params}}


def _request(request_id: int, method: str, params: dict[str, Any] | None = None
             ) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        out["params"] = params
    return out


class Pipes:
    """A front on real pipes: ``send`` is the client writing, ``answers`` what it read."""

    def __init__(self, snapshot: dict[str, Any] | None, *, take_early: bool = False) -> None:
        in_r, self._in_w = os.pipe()
        self._out_r, out_w = os.pipe()
        self.front = Front(Wire(os.fdopen(in_r, "rb"), os.fdopen(out_w, "wb")), snapshot,
                           take_early=take_early)
        self._answers = os.fdopen(self._out_r, "rb")
        self.front.start()

    def write(self, *messages: dict[str, Any] | str) -> None:
        """Write the messages (what the front does with them is its own)."""
        for message in messages:
            line = message if isinstance(message, str) else json.dumps(message)
            os.write(self._in_w, line.encode() + b"\n")

    def send(self, *messages: dict[str, Any] | str) -> list[Inbound]:
        """Write the messages; return the front's queue entries for them."""
        self.write(*messages)
        return [self._next() for _ in messages]

    def _next(self) -> Inbound:
        item = self.front.receive()
        assert item is not None
        return item

    def answer(self) -> dict[str, Any]:
        line = self._answers.readline()
        assert line, "the front closed its output"
        out: dict[str, Any] = json.loads(line)
        return out

    def close(self) -> None:
        os.close(self._in_w)
        assert self.front.receive() is None  # end of input reaches the consumer
        self.front.wire.close()
        self._answers.close()


@pytest.fixture
def pipes() -> Iterator[Pipes]:
    p = Pipes(SEED_DATA)
    yield p
    p.close()


# ---------------------------------------------------------------- the front alone


def test_the_front_answers_the_handshake_and_queues_every_line_in_order(pipes: Pipes) -> None:
    early = pipes.send(_request(1, "tools/list"), _request(2, "ping"))
    assert [i.answered for i in early] == [None, "ping"]  # no tools/list before initialize
    assert pipes.answer() == {"jsonrpc": "2.0", "id": 2, "result": SEED_DATA["ping"]}

    items = pipes.send(_initialize(3, "2025-06-18"),
                       {"jsonrpc": "2.0", "method": "notifications/initialized"},
                       _request(4, "tools/list"),
                       _request(5, "tools/call", {"name": "index_status", "arguments": {}}))
    assert [i.answered for i in items] == ["initialize", None, "tools/list", None]
    assert [i.request_id for i in items] == [3, None, 4, None]
    assert [json.loads(i.line).get("id") for i in items] == [3, None, 4, 5]
    init = pipes.answer()
    assert init["id"] == 3
    assert init["result"] == SEED_DATA["results"]["2025-06-18"]["initialize"]
    assert init["result"]["protocolVersion"] == "2025-06-18"
    tools = pipes.answer()
    assert tools["id"] == 4
    assert tools["result"] == SEED_DATA["results"]["2025-06-18"]["tools/list"]

    pipes.front.hand_off()
    after = pipes.send(_request(6, "tools/list"), _request(7, "ping"))
    assert [i.answered for i in after] == [None, None]  # the SDK answers from now on


def test_an_unknown_protocol_version_gets_the_latest_one(pipes: Pipes) -> None:
    [item] = pipes.send(_initialize(1, "1999-01-01"))
    assert item.answered == "initialize"
    assert pipes.answer()["result"]["protocolVersion"] == LATEST


ENVELOPE = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


@pytest.mark.parametrize("line", [
    "{not json",
    json.dumps([_request(1, "ping")]),  # a batch
    json.dumps({"id": 1, "method": "ping"}),  # not JSON-RPC 2.0
    json.dumps(_initialize(1, LATEST, **ENVELOPE)),
    json.dumps(_request(1, "ping", ENVELOPE)),  # the 2026 era: the SDK decides
    json.dumps(_request(1, "resources/list")),
    json.dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}),
    json.dumps({"jsonrpc": "2.0", "id": True, "method": "ping"}),
    json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": 5}),
    # initialize without what the SDK requires: it answers with an error, not the front
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LATEST}}),
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LATEST, "capabilities": {},
                           "clientInfo": {"name": "x"}}}),
    json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": 20250618, "capabilities": {},
                           "clientInfo": {"name": "x", "version": "1"}}}),
])
def test_what_the_front_does_not_know_is_left_to_the_sdk(pipes: Pipes, line: str) -> None:
    [item] = pipes.send(line)
    assert item == Inbound(line)


def test_a_paged_tools_list_is_left_to_the_sdk(pipes: Pipes) -> None:
    pipes.send(_initialize(1, LATEST))
    pipes.answer()
    [item] = pipes.send(_request(2, "tools/list", {"cursor": "abc"}))
    assert item.answered is None


def test_without_a_snapshot_the_front_answers_nothing() -> None:
    p = Pipes(None)
    items = p.send(_initialize(1, LATEST), _request(2, "ping"), _request(3, "tools/list"))
    assert [i.answered for i in items] == [None, None, None]
    p.close()


def test_a_broken_snapshot_leaves_everything_to_the_sdk() -> None:
    p = Pipes({"handshake_versions": [LATEST], "results": {}, "ping": {}})
    items = p.send(_initialize(1, LATEST), _request(2, "ping"))
    assert [i.answered for i in items] == [None, None]  # and the reader is still alive
    p.close()


# ---------------------------------------------------------------- the snapshot


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_an_incomplete_cache_file_is_not_used(cache_home: Path) -> None:
    key = SEED_DATA["key"]
    cache = cache_path(key)
    cache.parent.mkdir(parents=True)
    broken = json.loads(json.dumps(SEED_DATA))
    del broken["results"][LATEST]["tools/list"]
    cache.write_text(json.dumps(broken), encoding="utf-8")
    assert load_snapshot(key) == SEED_DATA  # the seed, not the broken cache
    cache.write_text("{half a file", encoding="utf-8")
    assert load_snapshot(key) == SEED_DATA


@pytest.mark.anyio
async def test_the_shipped_seed_is_what_the_sdk_answers(cache_home: Path) -> None:
    captured = await capture_handshake(build_server(Settings()))
    assert set(captured["results"]) == set(captured["handshake_versions"])
    assert captured["key"]["tools"] == SEED_DATA["key"]["tools"], (
        "the tools changed: run python -m rifflux.mcp._fast_start.handoff --write-seed")
    if captured["key"] == SEED_DATA["key"]:
        assert captured == SEED_DATA, (
            "rifflux/mcp/_fast_start/handshake.json is out of date: run "
            "python -m rifflux.mcp._fast_start.handoff --write-seed")
    else:  # another SDK or pydantic version: the seed must never be served
        assert load_snapshot(captured["key"]) is None


@pytest.mark.anyio
async def test_the_writing_servers_seed_is_what_the_sdk_answers_with_the_note_tools(
    cache_home: Path,
) -> None:
    captured = await capture_handshake(build_server(Settings(writable=(Path("notes"),))))
    seed = json.loads(SEED_WRITES.read_text(encoding="utf-8"))
    assert (captured["key"]["writes"], SEED_DATA["key"]["writes"]) == ("yes", "no")
    listed = {t["name"] for t in seed["results"][LATEST]["tools/list"]["tools"]}
    plain = {t["name"] for t in SEED_DATA["results"][LATEST]["tools/list"]["tools"]}
    assert listed - plain == {"write_note", "edit_note", "move_note", "delete_note",
                              "restore_note"} and "recent" in plain
    if captured["key"] == seed["key"]:
        assert captured == seed, ("rifflux/mcp/_fast_start/handshake-writes.json is out of "
                                  "date: run python -m rifflux.mcp._fast_start.handoff "
                                  "--write-seed")
        assert load_snapshot(writes=True) == seed and load_snapshot() == SEED_DATA
    else:  # another SDK or pydantic version: the seed must never be served
        assert load_snapshot(captured["key"]) is None


@pytest.mark.anyio
async def test_a_missing_or_stale_snapshot_is_replaced_by_the_sdks_own_answers(
    cache_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = build_server(Settings())
    assert load_snapshot({**SEED_DATA["key"], "mcp": "0.0.test"}) is None  # another key
    assert load_snapshot({**SEED_DATA["key"], "tools": "unknown"}) is None
    captured = await capture_handshake(server)
    cache = cache_path(captured["key"])

    await refresh_snapshot(server)
    if captured == SEED_DATA:  # the seed already has it: nothing to write
        assert not cache.exists()
    else:
        assert load_snapshot(captured["key"]) == captured == json.loads(cache.read_text())
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

    stale = json.loads(json.dumps(captured))
    stale["results"][LATEST]["tools/list"]["tools"].pop()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(stale), encoding="utf-8")
    assert load_snapshot(captured["key"]) == stale  # the cache comes first
    await refresh_snapshot(server)
    assert "differed" in caplog.text  # a front that answered from it is reported
    assert load_snapshot(captured["key"]) == captured


# ---------------------------------------------------------------- end to end


#: The command line without the front: serve_stdio, for embedding (the SDK answers everything).
NO_FRONT = ["-c", "import sys\n"
                  "from rifflux.cli import entry\n"
                  "from rifflux.mcp import serve_stdio\n"
                  "args, settings = entry.parse(sys.argv[1:])\n"
                  "async def serve(args, settings):\n"
                  "    await serve_stdio(settings)\n"
                  "    return 0\n"
                  "sys.exit(entry.run(serve, args, settings))\n"]
#: The reference: the SDK's own stdio transport (RIFFLUX_DB_PATH gives the index), its
#: instructions naming the indexed folders as they are at start.
SDK_ONLY = ["-c", "import anyio, os; from rifflux.config import settings_from_env; "
                  "from rifflux.mcp.instructions import folders_of; "
                  "from rifflux.mcp.server import build_server; "
                  "s = settings_from_env(os.environ); "
                  "anyio.run(build_server(s, folders=folders_of(s.db_path)).run_stdio_async)"]


async def _raw_session(tmp_path: Path, name: str, env: dict[str, str],
                       messages: list[dict[str, Any]], entry: list[str],
                       argv: list[str] | None = None) -> tuple[list[dict[str, Any]], str]:
    """Start ``python ENTRY --db NAME.db mcp --log-level DEBUG`` (or ``argv``), pipeline
    every message at once, read until every request is answered."""
    wanted = {m["id"] for m in messages if "id" in m}
    stderr_path = tmp_path / f"{name}.stderr"
    received: list[dict[str, Any]] = []
    with stderr_path.open("wb") as errlog:
        process = await anyio.open_process(
            # a global option before the command: the front must still be used
            argv or [sys.executable, *entry, "--db", str(tmp_path / f"{name}.db"), "mcp",
                     "--log-level", "DEBUG"],
            cwd=tmp_path, env=env, stderr=errlog)
        async with process:
            assert process.stdin is not None and process.stdout is not None
            reader = BufferedByteReceiveStream(process.stdout)
            await process.stdin.send(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            with anyio.fail_after(60):
                while not wanted <= {r.get("id") for r in received}:
                    received.append(json.loads(await reader.receive_until(b"\n", 1 << 24)))
                await process.stdin.aclose()
                while True:  # anything after the answers (a second initialize answer?)
                    try:
                        received.append(json.loads(await reader.receive_until(b"\n", 1 << 24)))
                    except (anyio.EndOfStream, anyio.IncompleteRead):
                        break
                assert await process.wait() == 0
    return received, stderr_path.read_text(encoding="utf-8")


async def _snapshot_for_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cache the installed SDK's snapshot where the test's servers look (server_env's
    XDG_CACHE_HOME), so that the front answers even when the seed is for other versions."""
    monkeypatch.setenv("XDG_CACHE_HOME", server_env(tmp_path)["XDG_CACHE_HOME"])
    await refresh_snapshot(build_server(Settings()))
    assert load_snapshot() is not None  # (rifflux is installed: pip install -e)


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-06-18", "2099-12-31"])
async def test_the_front_answers_exactly_what_the_sdk_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    await _snapshot_for_servers(tmp_path, monkeypatch)
    corpus = write_corpus(tmp_path)
    messages = [
        _initialize(1, version),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _request(2, "tools/list"),
        _request(3, "ping"),
        _request(4, "tools/call", {"name": "reindex",
                                   "arguments": {"path": str(corpus["notes"])}}),
    ]
    base = {k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")}
    env = {**base, **server_env(tmp_path)}
    module = ["-m", "rifflux"]
    fast, fast_log = await _raw_session(tmp_path, "fast", env, messages, module)
    off, off_log = await _raw_session(
        tmp_path, "off", {**env, "RIFFLUX_MCP_FAST_HANDSHAKE": "0"}, messages, module)
    plain, plain_log = await _raw_session(tmp_path, "plain", env, messages, NO_FRONT)
    # the reference: the SDK's own stdio transport, no front, no hand-off
    sdk, sdk_log = await _raw_session(
        tmp_path, "sdk", {**env, "RIFFLUX_DB_PATH": str(tmp_path / "sdk.db")}, messages,
        SDK_ONLY)

    assert "the front answered initialize, tools/list, ping before it" in fast_log
    assert "the front answered nothing before it" in off_log
    assert "the front answered nothing before it" in plain_log
    by_id = []
    for answers in (sdk, fast, off, plain):
        ids = [a["id"] for a in answers if "id" in a]
        assert sorted(ids) == [1, 2, 3, 4]  # each request answered exactly once
        assert ids[0] == 1 and sorted(ids[:3]) == [1, 2, 3]  # the handshake first
        by_id.append({a["id"]: a for a in answers if "id" in a})
    for request_id in (1, 2, 3):
        assert all(replies[request_id] == by_id[0][request_id] for replies in by_id)
    for replies in by_id:  # the tools work behind the front as without it
        assert replies[4]["result"]["isError"] is False
        assert _answer(replies[4]["result"])["indexed_files"] == 2


@pytest.mark.parametrize("closed", [0, 1])
def test_a_closed_stdin_or_stdout_is_a_one_line_error(tmp_path: Path, closed: int) -> None:
    env = {**os.environ, **server_env(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "rifflux", "mcp", "--db", str(tmp_path / "x.db")],
        stdin=subprocess.PIPE, capture_output=True, env=env,
        cwd=tmp_path, timeout=60, check=False, preexec_fn=lambda: os.close(closed),
    )
    assert done.returncode == 1
    assert done.stderr.decode().startswith("rifflux: error: cannot serve MCP: stdin or stdout")
    assert b"Traceback" not in done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("script", [["rifflux-mcp"], ["rifflux", "mcp"]])
async def test_the_console_scripts_serve_through_the_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: list[str]
) -> None:
    program = Path(sys.executable).parent / script[0]
    if not program.exists():
        pytest.skip(f"{program} is not installed (pip install -e .)")
    await _snapshot_for_servers(tmp_path, monkeypatch)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")},
           **server_env(tmp_path), "RIFFLUX_LOG_LEVEL": "DEBUG"}
    messages = [_initialize(1, LATEST), {"jsonrpc": "2.0", "method": "notifications/initialized"},
                _request(2, "tools/list"),
                _request(3, "tools/call", {"name": "index_status", "arguments": {}})]
    answers, log = await _raw_session(tmp_path, "script", env, messages, [], argv=[
        str(program), "--db", str(tmp_path / "script.db"), *script[1:]])
    by_id = {a["id"]: a for a in answers if "id" in a}
    assert by_id[1]["result"]["serverInfo"]["name"] == "rifflux"
    assert {t["name"] for t in by_id[2]["result"]["tools"]} >= {"search_rifflux", "reindex"}
    assert by_id[3]["result"]["isError"] is False
    assert "the front answered initialize, tools/list before it" in log


@pytest.mark.anyio
async def test_requests_the_front_answered_still_set_up_the_sdks_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK picks the protocol era from the first request it sees: a ping the front
    # answered must still reach it, or a 2026-style request after it would be served
    # differently than without the front.
    await _snapshot_for_servers(tmp_path, monkeypatch)
    messages = [_request(1, "ping"), _request(2, "tools/list", ENVELOPE)]
    base = {k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")}
    env = {**base, **server_env(tmp_path)}
    fast, fast_log = await _raw_session(tmp_path, "fast", env, messages, ["-m", "rifflux"])
    sdk, _ = await _raw_session(
        tmp_path, "sdk", {**env, "RIFFLUX_DB_PATH": str(tmp_path / "sdk.db")}, messages,
        SDK_ONLY)
    assert "the front answered ping before it" in fast_log
    assert {a["id"]: a for a in fast} == {a["id"]: a for a in sdk}
    assert "error" in {a["id"]: a for a in sdk}[2]  # an enveloped request on a legacy session


@pytest.mark.anyio
@pytest.mark.parametrize(("entry", "watch", "signum"), [
    (["-m", "rifflux"], False, signal.SIGINT),
    (NO_FRONT, False, signal.SIGINT),
    (["-m", "rifflux"], True, signal.SIGINT),
    (["-m", "rifflux"], False, signal.SIGTERM),
    (["-m", "rifflux"], True, signal.SIGTERM),
    (["-m", "rifflux"], False, signal.SIGHUP),
])
async def test_ctrl_c_sigterm_and_sighup_stop_the_server_cleanly(
    tmp_path: Path, entry: list[str], watch: bool, signum: signal.Signals
) -> None:
    env = {**os.environ, **server_env(tmp_path)}
    db = tmp_path / "x.db"
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.md").write_text("# A\n\nsome text about otters\n", encoding="utf-8")
    stderr_path = tmp_path / "server.stderr"
    with stderr_path.open("wb") as errlog:
        process = await anyio.open_process(
            [sys.executable, *entry, "mcp", "--db", str(db),
             *(["--watch", str(tmp_path / "w")] if watch else [])],
            cwd=tmp_path, env=env, stderr=errlog)
        async with process:
            assert process.stdin is not None and process.stdout is not None
            reader = BufferedByteReceiveStream(process.stdout)
            await process.stdin.send(
                json.dumps(_initialize(1, LATEST)).encode() + b"\n"
                + json.dumps(_request(2, "tools/call", {
                    "name": "index_status", "arguments": {}})).encode() + b"\n")
            with anyio.fail_after(60):
                answers = [json.loads(await reader.receive_until(b"\n", 1 << 24))
                           for _ in range(2)]
            assert [a["id"] for a in answers] == [1, 2]  # the SDK is serving
            process.send_signal(signum)
            with anyio.move_on_after(20):
                await process.wait()
            if process.returncode is None:
                process.kill()
                pytest.fail(f"the server did not stop after {signal.Signals(signum).name}")
    stderr = stderr_path.read_text(encoding="utf-8")
    assert process.returncode == (130 if signum == signal.SIGINT else 128 + signum), stderr
    assert "Traceback" not in stderr
    _assert_closed_cleanly(db)


def test_a_client_that_stops_reading_ends_the_server_quietly(tmp_path: Path) -> None:
    # The client closes its end of the server's stdout and keeps stdin open: the next
    # answer cannot be written, and the server stops as if stdin had closed.
    env = {**os.environ, **server_env(tmp_path)}
    db = tmp_path / "x.db"
    stderr_path = tmp_path / "server.stderr"
    with stderr_path.open("wb") as errlog, subprocess.Popen(
        [sys.executable, "-m", "rifflux", "mcp", "--db", str(db)], cwd=tmp_path, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(_initialize(1, LATEST)).encode() + b"\n")
        process.stdin.flush()
        silent = threading.Timer(60, process.kill)  # a server that never answers: no hang
        silent.start()
        try:
            assert json.loads(process.stdout.readline())["id"] == 1
        finally:
            silent.cancel()
        process.stdout.close()
        for i in range(2, 5):  # answers no one reads
            process.stdin.write(json.dumps(_request(i, "tools/call", {
                "name": "index_status", "arguments": {}})).encode() + b"\n")
            process.stdin.flush()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail("the server kept running with no one reading its answers")
    stderr = stderr_path.read_text(encoding="utf-8")
    assert process.returncode == 0, stderr
    assert "error" not in stderr.lower() and "Traceback" not in stderr
    _assert_closed_cleanly(db)


def _assert_closed_cleanly(db: Path) -> None:
    # the last connection's close checkpoints and removes the WAL file (a killed
    # process leaves it behind)
    assert db.exists() and not Path(f"{db}-wal").exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


#: search_rifflux calls: those a fresh server answers before the SDK has loaded, then
#: those it leaves to the SDK (a filter; a number as a string, which the SDK converts).
_EARLY = [{"query": "watering the garden", "mode": "lexical"},
          {"query": "when to water", "mode": "hybrid", "top_k": 3, "content": "snippet",
           "max_per_file": 1, "explain": True},
          {"query": "the", "mode": "lexical"},
          {"query": "water", "mode": "lexical", "max_chars": 1000},
          {"query": "water", "paths": ["**"], "frontmatter": {"n": 3}, "depth": None},
          {"query": "water", "tags": [""]}]  # (an error, in the library's words)
_LEFT_TO_THE_SDK = [{"query": "water", "top_k": "3"}, {"query": "water", "top_k": None}]


def _answer(result: dict[str, Any]) -> Any:
    """A tool result's answer: its one text, JSON."""
    (text,) = result["content"]
    return json.loads(text["text"])


def _without_model_label(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result without what depends on how far the server had got at start: the
    model's label (null until it has loaded) and the hits' ``backlink_count`` (left out
    until the catalog of files has loaded), in both of its forms; an error as it is."""
    assert "structuredContent" not in result  # (the client receives an answer once)
    if result.get("isError"):
        return result
    data = _answer(result)
    data.pop("embedding_model", None)
    for hit in data.get("results", []):
        hit.pop("backlink_count", None)
    return {**result, "content": data}


@pytest.mark.anyio
async def test_searches_before_the_sdk_has_loaded_are_answered_as_the_sdk_answers_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rifflux import Rifflux

    await _snapshot_for_servers(tmp_path, monkeypatch)
    corpus = write_corpus(tmp_path)
    for name in ("fast", "off"):
        async with Rifflux(tmp_path / f"{name}.db", embedding_backend="hash") as rf:
            await rf.reindex(corpus["notes"])
    calls = [*_EARLY, *_LEFT_TO_THE_SDK]
    messages = [_initialize(1, "2025-06-18"),
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                *(_request(10 + i, "tools/call", {"name": "search_rifflux", "arguments": a})
                  for i, a in enumerate(calls))]
    base = {k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")}
    env = {**base, **server_env(tmp_path)}
    fast, fast_log = await _raw_session(tmp_path, "fast", env, messages, ["-m", "rifflux"])
    off, _ = await _raw_session(tmp_path, "off", {**env, "RIFFLUX_MCP_FAST_HANDSHAKE": "0"},
                                messages, ["-m", "rifflux"])
    # the plain calls were answered before the SDK, the others by it
    assert fast_log.count("before the MCP SDK") == len(_EARLY), fast_log
    assert (f"the front answered initialize, {', '.join(['tools/call (early)'] * len(_EARLY))}"
            " before it") in fast_log
    early = {a["id"]: a for a in fast if "id" in a}
    sdk = {a["id"]: a for a in off if "id" in a}
    assert sorted(early) == sorted(sdk) == [1, *range(10, 10 + len(calls))]
    for request_id in range(10, 10 + len(calls)):
        assert early[request_id].keys() == sdk[request_id].keys() == {"jsonrpc", "id", "result"}
        mine, theirs = (_without_model_label(answers[request_id]["result"])
                        for answers in (early, sdk))
        if request_id == 13:  # cut to max_chars: the model's label (or null) counts too
            mine, theirs = ({"cut": a["content"]["truncated"],
                             "hits": [h["chunk_id"] for h in a["content"]["results"]]}
                            for a in (mine, theirs))
            assert mine["cut"] is True
        assert mine == theirs, request_id
    refused = early[10 + len(_EARLY) - 1]["result"]  # (tags=[""]: the library's words)
    assert refused["isError"] and "tag" in refused["content"][0]["text"]


def test_the_calls_taken_early_are_those_the_published_schema_accepts_as_they_are() -> None:
    from rifflux.mcp._fast_start.taken import early_search

    schema = tool_schema(SEED_DATA, LATEST, "search_rifflux")
    assert schema is not None and schema["additionalProperties"] is False

    def call(**arguments: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "search_rifflux", "arguments": arguments}}

    for plain in ({"top_k": 100, "mode": "lexical", "max_per_file": None},
                  {"tags": ["a"], "paths": ["docs/**"], "depth": 10, "near": "a.md"},
                  {"frontmatter": {"status": "draft", "n": 3, "ok": True, "xs": ["a", 1]}},
                  {"db_path": "other.db", "max_chars": 1000, "explain": False}):
        assert early_search(call(query="x", **plain), schema), plain
    top_k = schema["properties"]["top_k"]
    odds: list[dict[str, Any]] = [
        {"top_k": top_k["maximum"] + 1}, {"top_k": top_k["minimum"] - 1}, {"top_k": "3"},
        {"top_k": True}, {"top_k": 3.0}, {"top_k": None}, {"mode": "fuzzy"},
        {"max_chars": 999}, {"explain": 1}, {"tags": "a"}, {"tags": [1]},
        {"frontmatter": {"k": None}}, {"frontmatter": {"k": {}}}, {"depth": 11},
        {"tag": ["a"]}]
    for odd in odds:
        assert not early_search(call(query="x", **odd), schema), odd
    assert not early_search(call(top_k=3), schema)  # (no query: the SDK says it is required)
    assert not early_search(call(query=None), schema)
    with_meta = call(query="x")
    with_meta["params"]["_meta"] = {"progressToken": 1}  # (progress: the SDK's)
    assert not early_search(with_meta, schema)
    # a schema with a keyword the check does not know takes nothing
    assert not early_search(call(query="x"), {**schema, "anyOf": [{"required": ["query"]}]})


@pytest.mark.anyio
async def test_a_client_that_leaves_after_an_early_search_does_not_wait_for_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rifflux import Rifflux

    await _snapshot_for_servers(tmp_path, monkeypatch)
    corpus = write_corpus(tmp_path)
    async with Rifflux(tmp_path / "gone.db", embedding_backend="hash") as rf:
        await rf.reindex(corpus["notes"])
    messages = [_initialize(1, "2025-06-18"),
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                _request(2, "tools/call", {"name": "search_rifflux",
                                           "arguments": {"query": "water", "mode": "lexical"}})]
    base = {k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")}
    answers, log = await _raw_session(tmp_path, "gone", {**base, **server_env(tmp_path)},
                                      messages, ["-m", "rifflux"])
    assert {a["id"] for a in answers if "id" in a} == {1, 2}
    assert _answer(answers[-1]["result"])["count"] > 0
    # stdin closed right after the answer: the server ended (exit 0, in _raw_session)
    # without the SDK ever serving; its import, under way, was left behind
    assert "answering search_rifflux 2 before the MCP SDK" in log
    assert "MCP SDK serving" not in log, log


# ---------------------------------------------------------------- early calls, in process


@pytest.mark.anyio
async def test_an_early_search_that_fails_unexpectedly_is_that_calls_error_and_the_next_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def answers(early: Any, pipes: Pipes) -> dict[int, dict[str, Any]]:
        pipes.write(_search(10, "boom"), _search(11, "water"))
        got = [await anyio.to_thread.run_sync(pipes.answer) for _ in range(2)]
        return {a["id"]: a["result"] for a in got}

    got, log = await _early_session(tmp_path, monkeypatch, answers)
    assert got[10]["isError"] is True
    assert got[10]["content"][0]["text"].startswith(
        "search_rifflux failed: unexpected RuntimeError; this call failed and the server "
        "goes on")
    assert "injected" not in got[10]["content"][0]["text"]  # (the traceback stays in the log)
    assert got[11]["isError"] is False and _answer(got[11])["count"] > 0
    assert "injected" in log


@pytest.mark.anyio
@pytest.mark.parametrize("after_hand_off", [False, True])
async def test_a_cancelled_early_search_stops_and_is_not_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after_hand_off: bool
) -> None:
    async def answers(early: Any, pipes: Pipes) -> dict[int, dict[str, Any]]:
        pipes.write(_search(12, "slow"))
        with anyio.fail_after(10):
            await _SLOW.started.wait()
        if after_hand_off:  # (the SDK serves now; the call it never saw is still early's)
            pipes.front.hand_off()
        pipes.write({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 12, "reason": "the user pressed stop"}})
        with anyio.fail_after(10):
            await _SLOW.cancelled.wait()
        if after_hand_off:
            return {}
        pipes.write(_search(13, "water"))
        got = await anyio.to_thread.run_sync(pipes.answer)
        return {got["id"]: got["result"]}

    got, _ = await _early_session(tmp_path, monkeypatch, answers)
    assert 12 not in got  # (read until the next answer: none came for 12 before it)
    if not after_hand_off:
        assert _answer(got[13])["count"] > 0


class _Slow:
    """What the patched search saw of a call for "slow": it started, and was cancelled."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()


_SLOW = _Slow()


def _search(request_id: int, query: str) -> dict[str, Any]:
    return _request(request_id, "tools/call",
                    {"name": "search_rifflux", "arguments": {"query": query, "mode": "lexical"}})


async def _early_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    talk: Any,
) -> tuple[dict[int, dict[str, Any]], str]:
    """A front taking early calls on real pipes, and ``EarlySearches`` answering them from a
    real index, with the tool's search patched: "boom" raises a RuntimeError, "slow" waits
    until cancelled; ``talk(early, pipes)`` after ``initialize``. Its answers, and the log."""
    import logging

    from rifflux import Rifflux
    from rifflux.mcp._fast_start import early as early_module
    from rifflux.mcp.auto_reindex import AutoReindex
    from rifflux.mcp.other_indexes import OtherIndexes
    from rifflux.mcp.searching import ServerState, search

    global _SLOW
    _SLOW = _Slow()

    async def patched(state: ServerState, **args: Any) -> dict[str, Any]:
        if args["query"] == "boom":
            raise RuntimeError("injected failure")
        if args["query"] == "slow":
            _SLOW.started.set()
            try:
                await anyio.sleep_forever()
            finally:
                _SLOW.cancelled.set()
        return await search(state, **args)

    monkeypatch.setattr(early_module, "search", patched)
    corpus = write_corpus(tmp_path)
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(  # type: ignore[method-assign]
        record.getMessage() + (str(record.exc_info[1]) if record.exc_info else ""))
    logging.getLogger("rifflux").addHandler(handler)
    pipes = Pipes(SEED_DATA, take_early=True)
    try:
        async with Rifflux(tmp_path / "early.db", embedding_backend="hash") as rf, \
                OtherIndexes(rf.settings) as others:
            await rf.reindex(corpus["notes"])
            state = ServerState(opened=rf, settings=rf.settings, others=others,
                                auto_reindex=AutoReindex(rf=rf, enabled=False, min_interval=0,
                                                         watch_paths=()))
            early = early_module.EarlySearches(pipes.front, state)
            async with anyio.create_task_group() as tg:
                tg.start_soon(early.run)
                assert [i.answered for i in pipes.send(_initialize(1, LATEST))] == ["initialize"]
                assert (await anyio.to_thread.run_sync(pipes.answer))["id"] == 1
                got = await talk(early, pipes)
                pipes.front.end_early()
                with anyio.fail_after(10):
                    await early.done.wait()
    finally:
        logging.getLogger("rifflux").removeHandler(handler)
        pipes.close()
    return got, "\n".join(records)
