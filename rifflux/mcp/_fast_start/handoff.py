"""The SDK side of ``rifflux mcp``: take the wire over from the front, and snapshot the handshake.

``serve_after_front`` runs the SDK server on the lines the front queued (see
``front.py`` for why the front exists). ``capture_handshake`` asks the SDK
itself, in memory, what it answers to ``initialize``, ``tools/list`` and
``ping`` at every handshake protocol version: that is the snapshot the front
answers from, one for a server that writes notes and one for a server that does
not (their tool lists differ). The shipped seeds (``handshake.json``,
``handshake-writes.json``) are made with
``python -m rifflux.mcp._fast_start.handoff --write-seed``; a test fails when it no longer
matches. When the front had no snapshot for this key, the server captures the
SDK's answers in the background and, when neither the seed nor the cache holds
them, caches them per snapshot
key (the Rifflux, SDK and pydantic versions and the tools' source), so that
an upgraded SDK is answered from its own snapshot from the second start on.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from ...api import Rifflux
from ...config import Settings
from .. import sdk
from ..auto_reindex import AutoReindex
from ..instructions import folders_of
from ..other_indexes import OtherIndexes
from ..server import RiffluxMCPServer, build_server
from .front import Front, Inbound
from .snapshot import SEED, SEED_WRITES, cache_path, load_snapshot, snapshot_key
from .wire import Wire

__all__ = ["capture_handshake", "refresh_snapshot", "serve_after_front", "serve_stdio"]

logger = logging.getLogger(__name__)

#: Seconds the searches answered before the SDK may take to finish at shutdown.
_EARLY_GRACE = 10.0
#: Seconds after the hand-off before the snapshot is checked against the SDK.
_REFRESH_DELAY = 1.0


async def serve_after_front(settings: Settings, front: Front, *,
                            rifflux: Rifflux | None = None,
                            auto_reindex: AutoReindex | None = None,
                            others: OtherIndexes | None = None,
                            early_done: anyio.Event | None = None) -> None:
    """Serve MCP over the front's wire until the client closes stdin.

    The front keeps answering the handshake until the index is open (the
    server's lifespan calls ``hand_off``); the lines it queued meanwhile are
    replayed to the SDK in arrival order. With ``rifflux`` open already (and
    ``early.EarlySearches`` answering searches meanwhile:
    ``early.serve_with_early_searches``), the server serves that instance (with the
    same reindex throttle and other indexes); the searches it took are answered
    (``early_done`` is set) before the wire closes.
    """

    def hand_off() -> None:
        answered = front.hand_off()  # (and takes nothing more for ``early``)
        logger.debug("MCP SDK serving; the front answered %s before it",
                     ", ".join(answered) if answered else "nothing")

    server = build_server(settings, on_open=hand_off, rifflux=rifflux,
                          auto_reindex=auto_reindex, others=others,
                          folders=front.folders_line())
    read_send, read_recv = anyio.create_memory_object_stream[sdk.Message | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[sdk.Message](0)
    # Requests the front answered: the SDK sees them too (so that its session is
    # exactly as without the front) but its answers are not sent a second time.
    replayed: dict[Any, Inbound] = {}

    async def pump_in() -> None:
        async with read_send:
            while True:
                item = await anyio.to_thread.run_sync(front.receive, abandon_on_cancel=True)
                if item is None:
                    return  # the client closed stdin
                if item.answered is not None:
                    replayed[item.request_id] = item
                await read_send.send(sdk.parse(item.line))

    async def pump_out() -> None:
        async with write_recv:
            async for out in write_recv:
                line = sdk.dump(out)
                answered = sdk.answer_to(out)
                if answered is not None and answered in replayed:
                    _check_replayed(replayed.pop(answered), json.loads(line))
                    continue
                try:
                    await anyio.to_thread.run_sync(front.wire.send, line)
                except (BrokenPipeError, ConnectionResetError):
                    # the client went away without closing stdin first: nobody is left
                    # to answer, and that is no error of this server's
                    logger.info("the MCP client closed its end of stdout: stopping")
                    tg.cancel_scope.cancel()
                    return

    try:
        async with anyio.create_task_group() as tg:
            # pump_out is never cancelled: it ends when the SDK closes its side,
            # after the last answer is written.
            tg.start_soon(pump_out)
            async with write_send, anyio.create_task_group() as inner:
                inner.start_soon(pump_in)
                if front.snapshot is None:  # else the key (versions, tools) already matched
                    inner.start_soon(refresh_snapshot, server, _REFRESH_DELAY)
                await sdk.run_lowlevel(server, read_recv, write_send)
                inner.cancel_scope.cancel()
    finally:
        if early_done is not None:  # the searches taken are answered before the wire closes
            front.end_early()
            with anyio.move_on_after(_EARLY_GRACE, shield=True):
                await early_done.wait()
        front.release()
        front.close()


def _check_replayed(item: Inbound, sdk: dict[str, Any]) -> None:
    """The SDK's answer to a request the front answered: it should be the same."""
    if "error" in sdk:
        logger.error("the MCP SDK refused %s, which the front had answered (%s); the client's "
                     "session may fail: restart with RIFFLUX_MCP_FAST_HANDSHAKE=0 and report "
                     "this", item.answered, sdk["error"].get("message"))
    elif sdk.get("result") != item.result:
        logger.warning("the front's answer to %s differed from the MCP SDK's (a stale "
                       "handshake snapshot?); it is refreshed shortly", item.answered)


async def serve_stdio(settings: Settings) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes stdin.

    For embedding: the SDK answers everything (no snapshot), over the same
    transport as ``rifflux mcp``, whose reads never hold up a shutdown.
    """
    front = Front(Wire.claim(), None, folders=lambda: folders_of(settings.db_path))
    front.start()
    await serve_after_front(settings, front)


async def refresh_snapshot(server: RiffluxMCPServer, delay: float = 0.0) -> None:
    """Capture what the SDK answers and cache it, unless the seed or cache already has it
    (what a server whose front had no snapshot does in the background, ``delay`` seconds
    after the hand-off; then the front answers from the next start on)."""
    await anyio.sleep(delay)  # after the first requests, which are what the client waits for
    try:
        captured = await capture_handshake(server)
    except Exception:
        logger.warning("could not capture the MCP handshake; the front will keep waiting "
                       "for the SDK", exc_info=True)
        return
    key = captured["key"]
    if "unknown" in key.values():
        return  # a snapshot for an unknown version would never be used
    current = await anyio.to_thread.run_sync(load_snapshot, key)
    if current == captured:
        return
    if current is not None:
        logger.warning("the MCP handshake snapshot differed from what the SDK answers; the "
                       "cache is refreshed (regenerate the seed: python -m "
                       "rifflux.mcp._fast_start.handoff --write-seed)")
    path = cache_path(key)
    try:
        await anyio.to_thread.run_sync(_write_json, path, captured)
    except OSError as exc:
        logger.info("MCP handshake snapshot not cached at %s: %s", path, exc)
    else:
        logger.debug("MCP handshake snapshot cached at %s", path)


async def capture_handshake(server: RiffluxMCPServer) -> dict[str, Any]:
    """What the SDK answers to the handshake at each protocol version, as the front needs it.

    Runs the server's own request handling in memory, without its lifespan
    (these three methods never touch the library).
    """
    results: dict[str, dict[str, Any]] = {}
    ping: Any = None
    for version in sdk.HANDSHAKE_PROTOCOL_VERSIONS:
        replies = await _exchange(server, [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "rifflux-handshake-capture", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ])
        results[version] = {"initialize": replies[1], "tools/list": replies[2]}
        ping = replies[3]
    return {"key": snapshot_key(server.writes),
            "handshake_versions": list(sdk.HANDSHAKE_PROTOCOL_VERSIONS),
            "ping": ping, "results": results}


async def _exchange(server: RiffluxMCPServer, messages: list[dict[str, Any]]) -> dict[int, Any]:
    read_send, read_recv = anyio.create_memory_object_stream[sdk.Message | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[sdk.Message](16)
    expected = {m["id"] for m in messages if "id" in m}
    replies: dict[int, Any] = {}
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(sdk.serve_in_memory, server, read_recv, write_send)
            async with read_send, write_recv:
                for message in messages:
                    await read_send.send(sdk.to_message(message))
                async for out in write_recv:
                    reply = sdk.loads(out)
                    if sdk.is_request(out) or "id" not in reply:
                        continue  # not an answer (the SDK asked or told the client something)
                    if "error" in reply:
                        raise RuntimeError(f"the MCP SDK refused {reply['id']}: {reply['error']}")
                    replies[int(reply["id"])] = reply["result"]
                    if expected <= replies.keys():
                        break
    return replies


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


async def _write_seed() -> dict[str, str]:
    """Both seeds: of a server without a writable folder, and of one with (the folder
    itself is never looked at to list the tools)."""
    key: dict[str, str] = {}
    for seed, settings in ((SEED, Settings()), (SEED_WRITES, Settings(writable=(Path("notes"),)))):
        captured = await capture_handshake(build_server(settings))
        if "unknown" in captured["key"].values():
            raise SystemExit(f"not written: some versions are unknown {captured['key']} (is "
                             "rifflux installed, e.g. pip install -e .?)")
        _write_json(seed, captured)
        key = captured["key"]
    return key


if __name__ == "__main__":
    if sys.argv[1:] != ["--write-seed"]:
        raise SystemExit("usage: python -m rifflux.mcp._fast_start.handoff --write-seed")
    written = anyio.run(_write_seed)
    print(f"wrote {SEED} and {SEED_WRITES.name} for {written}", file=sys.stderr)  # noqa: T201
