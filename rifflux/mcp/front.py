"""The MCP server's front: answers the handshake while the SDK is still importing.

Importing the MCP SDK takes 1.2-1.5 s on a small machine (it builds pydantic
models for every protocol revision), longer than clients like to wait for
``initialize``. So ``rifflux mcp`` starts here, on the standard library only:

1. It claims the wire: the protocol keeps private duplicates of fds 0 and 1,
   while fd 0 is pointed at the null device and fd 1 at stderr, so nothing a
   library or child process prints can reach the client.
2. A reader thread reads every line the client sends and queues it in order.
   Until the hand-off, it answers ``initialize``, ``tools/list`` and ``ping``
   itself, from a snapshot of exactly what this SDK and these tools answer
   (``handshake.py`` captures it from the SDK; see ``load_snapshot``).
3. Meanwhile the main thread imports the command line and the SDK, opens the
   index and hands off (``handoff.serve_after_front``): every queued line goes
   to the SDK in order, ``initialize`` included so its session is set up the
   same way, and the SDK answers everything from then on. The SDK's second
   answer to ``initialize`` is dropped; requests the front already answered
   are not replayed.

Without a usable snapshot (another SDK or Rifflux version and no cache yet),
or with ``RIFFLUX_MCP_FAST_HANDSHAKE=0``, the front answers nothing and
everything waits for the SDK: slower, never wrong.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

logger = logging.getLogger(__name__)

SEED = Path(__file__).with_name("handshake.json")


# ---------------------------------------------------------------- the snapshot


def installed_versions() -> dict[str, str]:
    """The versions a snapshot is valid for: this Rifflux and this MCP SDK."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("rifflux", "mcp"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "0"
    return out


def cache_path(versions: dict[str, str]) -> Path:
    """Where a snapshot captured at run time is kept, per Rifflux and SDK version."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rifflux" / f"mcp-handshake-{versions['rifflux']}-{versions['mcp']}.json"


def load_snapshot(versions: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The handshake answers for these versions: the run-time cache, else the shipped seed.

    A file made for other versions, or unreadable, is ignored (None: the SDK
    answers everything itself).
    """
    versions = versions or installed_versions()
    for path in (cache_path(versions), SEED):
        try:
            snapshot = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(snapshot, dict) and _usable(snapshot, versions):
            return snapshot
    return None


def _usable(snapshot: dict[str, Any], versions: dict[str, str]) -> bool:
    """Made for these versions, with every answer the front may need."""
    if snapshot.get("versions") != versions or "ping" not in snapshot:
        return False
    handshake, results = snapshot.get("handshake_versions"), snapshot.get("results")
    if not isinstance(handshake, list) or not handshake or not isinstance(results, dict):
        return False
    needed = {"initialize", "tools/list"}
    return all(isinstance(results.get(v), dict) and needed <= results[v].keys()
               for v in handshake)


def answer(snapshot: dict[str, Any], method: str, version: str | None) -> Any:
    """The snapshot's result for ``method`` at a negotiated protocol ``version``."""
    if method == "ping":
        return snapshot["ping"]
    return snapshot["results"][version][method]


def negotiate(snapshot: dict[str, Any], requested: object) -> str:
    """The protocol version the SDK picks: the client's if it knows it, else its latest."""
    versions: list[str] = snapshot["handshake_versions"]
    return requested if isinstance(requested, str) and requested in versions else versions[-1]


# ---------------------------------------------------------------- the wire


class Wire:
    """The protocol's private ends of stdin and stdout (fds 0 and 1 point elsewhere)."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO) -> None:
        self.reader = reader
        self._writer = writer
        self._lock = threading.Lock()

    @classmethod
    def claim(cls) -> Wire:
        """Take fds 0 and 1 for the protocol. Raises OSError when they are not open."""
        # os.dup gives the lowest free descriptor (3 or above while 0-2 are open),
        # not inherited by child processes.
        wire_in = os.dup(0)
        wire_out = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        sys.stdout.flush()
        os.dup2(2, 1)
        return cls(os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"))

    def close(self) -> None:
        with self._lock:
            self._writer.close()
        self.reader.close()

    def send(self, line: str) -> None:
        """Write one message (a JSON text without newlines) and flush it."""
        data = line.encode("utf-8") + b"\n"
        with self._lock:
            self._writer.write(data)
            self._writer.flush()


# ---------------------------------------------------------------- the front


@dataclass(frozen=True, slots=True)
class Inbound:
    """One line from the client, and which method the front already answered for it."""

    line: str
    answered: str | None = None
    request_id: Any = None


class Front:
    """Reads the client's lines; answers the handshake from a snapshot until handed off."""

    def __init__(self, wire: Wire, snapshot: dict[str, Any] | None) -> None:
        self.wire = wire
        self.snapshot = snapshot
        self.negotiated: str | None = None
        #: What the front answered itself, in order (logged at the hand-off).
        self.answered: list[str] = []
        self._inbox: queue.SimpleQueue[Inbound | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._handed_off = False
        self._thread = threading.Thread(target=self._read_loop, name="rifflux-mcp-front",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def hand_off(self) -> list[str]:
        """From now on the front answers nothing; everything goes to the SDK.

        Returns the methods the front answered, in order.
        """
        with self._lock:
            self._handed_off = True
            return list(self.answered)

    def receive(self) -> Inbound | None:
        """The next line in arrival order (blocking); None once the client closed stdin."""
        return self._inbox.get()

    def release(self) -> None:
        """Wake a ``receive`` blocked in a worker thread (at shutdown)."""
        self._inbox.put(None)

    def _read_loop(self) -> None:
        try:
            for raw in self.wire.reader:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                with self._lock:
                    item = Inbound(line) if self._handed_off else self._try_answer(line)
                self._inbox.put(item)
        except (OSError, ValueError) as exc:  # the client went away mid-line
            logger.debug("stdin closed: %s", exc)
        finally:
            self._inbox.put(None)

    def _try_answer(self, line: str) -> Inbound:
        try:
            return self._maybe_answer(line)
        except OSError:
            raise  # the client went away
        except Exception:  # a bad snapshot must not stop the reader: the SDK answers instead
            logger.exception("the MCP front could not answer; leaving everything to the SDK")
            self.snapshot = None
            return Inbound(line)

    def _maybe_answer(self, line: str) -> Inbound:
        if self.snapshot is None:
            return Inbound(line)
        try:
            message = json.loads(line)
        except ValueError:
            return Inbound(line)  # the SDK reports the parse error
        if not isinstance(message, dict) or "id" not in message or message.get("jsonrpc") != "2.0":
            return Inbound(line)
        method, params = message.get("method"), message.get("params")
        if method == "initialize" and self.negotiated is None and isinstance(params, dict):
            if _has_modern_envelope(params):
                return Inbound(line)
            self.negotiated = negotiate(self.snapshot, params.get("protocolVersion"))
        elif method == "tools/list" and self.negotiated is not None:
            if isinstance(params, dict) and (params.get("cursor") or _has_modern_envelope(params)):
                return Inbound(line)
        elif method != "ping":
            return Inbound(line)
        result = answer(self.snapshot, method, self.negotiated)
        self.wire.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result},
                                  ensure_ascii=False, separators=(",", ":")))
        self.answered.append(method)
        return Inbound(line, answered=method, request_id=message["id"])


def _has_modern_envelope(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta


# ---------------------------------------------------------------- entry point


def main(args: Sequence[str]) -> int:
    """``rifflux mcp`` / ``rifflux-mcp``: start the front, then the real server behind it.

    ``args`` is the whole command line after the program name, ``mcp`` included.
    """
    if "-h" in args or "--help" in args:  # help goes to the real stdout, no server
        from ..cli import main as cli_help

        return cli_help(args)
    fast = os.environ.get("RIFFLUX_MCP_FAST_HANDSHAKE", "1").strip().lower()
    snapshot = None if fast in ("0", "false", "no", "off") else load_snapshot()
    try:
        wire = Wire.claim()
    except OSError as exc:  # stdin or stdout closed: let the SDK's transport report it
        logger.warning("MCP front not started: %s", exc)
        from ..cli import main as cli_plain

        return cli_plain(args)
    front = Front(wire, snapshot)
    front.start()
    from ..cli import main as cli_main  # the slow imports start here

    return cli_main(args, mcp_front=front)
