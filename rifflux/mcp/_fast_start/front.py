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
   (``handoff.capture_handshake`` asks the SDK; see ``load_snapshot``).
3. Meanwhile the main thread imports the command line and the SDK, opens the
   index and hands off (``handoff.serve_after_front``): every queued line goes
   to the SDK in order, those the front answered included, so that its
   session is set up exactly as without the front; its answers to those are
   dropped (and compared with the front's). The SDK answers everything from
   then on.

Without a usable snapshot (another SDK or Rifflux version and no cache yet),
or with ``RIFFLUX_MCP_FAST_HANDSHAKE=0``, the front answers nothing and
everything waits for the SDK: slower, never wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import queue
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .taken import early_search

if sys.platform != "win32":
    import fcntl

logger = logging.getLogger(__name__)

SEED = Path(__file__).with_name("handshake.json")
#: The server with a writable folder lists the note tools that write: its own snapshot.
SEED_WRITES = Path(__file__).with_name("handshake-writes.json")


# ---------------------------------------------------------------- the snapshot


#: The modules whose source defines what ``tools/list`` answers (in ``rifflux.mcp``).
_TOOL_SOURCES = ("server.py", "tools.py", "params.py", "schemas.py", "note_tools.py")

#: Distributions whose code shapes the SDK's answers (dist-info spelling).
_DISTRIBUTIONS = ("rifflux", "mcp", "mcp_types", "pydantic", "pydantic_core")


def snapshot_key(writes: bool = False) -> dict[str, str]:
    """What a snapshot is valid for: the versions of Rifflux, the SDK and pydantic, the
    tool definitions' source (so an edited checkout never gets a stale answer), and
    whether the server writes notes (``writes``: it then lists more tools).

    Read from the dist-info folder names on ``sys.path`` (as importlib.metadata
    does, without its 50 ms of imports); a distribution not found is "unknown".
    """
    key = dict.fromkeys(_DISTRIBUTIONS, "unknown")
    seen: set[str] = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if not name.endswith(".dist-info"):
                continue
            dist, _, version = name[: -len(".dist-info")].partition("-")
            dist = dist.lower().replace("-", "_").replace(".", "_")
            if dist in key and dist not in seen:  # the first on sys.path wins, as for imports
                seen.add(dist)
                key[dist] = version
    try:
        digest = hashlib.sha256()
        for name in _TOOL_SOURCES:
            digest.update((Path(__file__).parent.parent / name).read_bytes())
        key["tools"] = digest.hexdigest()[:16]
    except OSError:
        key["tools"] = "unknown"
    key["writes"] = "yes" if writes else "no"
    return key


def cache_path(key: dict[str, str]) -> Path:
    """Where a snapshot captured at run time is kept, one file per key."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(base) / "rifflux" / f"mcp-handshake-{digest}.json"


def load_snapshot(key: dict[str, str] | None = None, *,
                  writes: bool = False) -> dict[str, Any] | None:
    """The handshake answers for this key (by default, of a server that writes notes or
    not): the run-time cache, else the shipped seed for the key's kind of server. A file
    made for another key, incomplete or unreadable, is ignored (None: the SDK answers
    everything itself)."""
    key = key or snapshot_key(writes)
    seed = SEED_WRITES if key.get("writes") == "yes" else SEED
    for path in (cache_path(key), seed):
        try:
            snapshot = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(snapshot, dict) and _usable(snapshot, key):
            return snapshot
    return None


def _usable(snapshot: dict[str, Any], key: dict[str, str]) -> bool:
    """Made for this key, with every answer the front may need."""
    if "unknown" in key.values() or snapshot.get("key") != key or "ping" not in snapshot:
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

    def __init__(self, reader: BinaryIO, writer: BinaryIO, *, claimed: bool = False) -> None:
        self.reader = reader
        self._writer = writer
        self._lock = threading.Lock()
        self._claimed = claimed  # fds 0 and 1 were redirected by claim()

    @classmethod
    def claim(cls) -> Wire:
        """Take fds 0 and 1 for the protocol; point fd 0 at the null device and fd 1
        at stderr. Raises OSError when stdin or stdout is not open."""
        if sys.stdin is None or sys.stdout is None:
            raise OSError("stdin or stdout is closed")
        wire_in = _dup_above_std(0)
        try:
            wire_out = _dup_above_std(1)
        except OSError:
            os.close(wire_in)
            raise
        sys.stdout.flush()
        _point(0, os.open(os.devnull, os.O_RDONLY))
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr either
            _point(1, os.open(os.devnull, os.O_WRONLY))
        return cls(os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"), claimed=True)

    def close(self, *, reader: bool = True) -> None:
        """Point fds 0 and 1 back at the wire (after ``claim``) and close the private ends.

        ``reader=False`` leaves the reading end open: closing it while another
        thread is blocked reading it would block until that read returns.
        """
        with self._lock:
            if self._claimed:
                self._claimed = False
                if sys.stdout is not None:
                    sys.stdout.flush()
                os.dup2(self.reader.fileno(), 0)
                os.dup2(self._writer.fileno(), 1)
            # (a client gone away leaves an answer unsent: no error of this server's)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._writer.close()
        if reader:
            self.reader.close()

    def send(self, line: str) -> None:
        """Write one message (a JSON text without newlines) and flush it."""
        data = line.encode("utf-8") + b"\n"
        with self._lock:
            self._writer.write(data)
            self._writer.flush()


def _dup_above_std(fd: int) -> int:
    """A private duplicate of ``fd`` that is never 0-2 and not inherited by children."""
    if sys.platform != "win32":
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    duplicate = os.dup(fd)  # non-inheritable; the lowest free descriptor
    if duplicate <= 2:
        os.close(duplicate)
        raise OSError(f"fd {fd} cannot be duplicated above the standard streams")
    return duplicate


def _point(fd: int, target: int) -> None:
    os.dup2(target, fd)
    os.close(target)


# ---------------------------------------------------------------- the front

#: ``Inbound.answered`` for a request the front's diverting taker answers.
_DIVERTED = "(diverted)"


@dataclass(frozen=True, slots=True)
class Inbound:
    """One line from the client, and which method the front already answered for it."""

    line: str
    answered: str | None = None
    request_id: Any = None
    result: Any = None  # what the front answered


class Front:
    """Reads the client's lines; answers the handshake from a snapshot until handed off."""

    def __init__(self, wire: Wire, snapshot: dict[str, Any] | None, *,
                 take_early: bool = False) -> None:
        self.wire = wire
        self.snapshot = snapshot
        self.negotiated: str | None = None
        #: What the front answered itself, in order (logged at the hand-off).
        self.answered: list[str] = []
        self._inbox: queue.SimpleQueue[Inbound | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._handed_off = False
        #: With ``take_early``: plain ``search_rifflux`` calls (``taken.early_search``), taken
        #: for ``early.EarlySearches`` (answered from the library while the SDK imports)
        #: until the hand-off (None once it ends); only when the front answers the handshake.
        self.early: queue.SimpleQueue[Inbound | None] = queue.SimpleQueue()
        self._take_early = take_early and snapshot is not None
        #: The client has closed stdin (or gone away).
        self.input_ended = False
        self._thread = threading.Thread(target=self._read_loop, name="rifflux-mcp-front",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def hand_off(self) -> list[str]:
        """From now on the front answers nothing and takes nothing; everything goes to the
        SDK (the calls already taken are still answered: ``early`` ends with None).

        Returns the methods the front answered, in order.
        """
        with self._lock:
            self._handed_off = True
            self.early.put(None)
            return list(self.answered)

    def give_back_early(self) -> None:
        """The calls taken and not answered go to the SDK after all (the library could not
        open: the SDK's server says why); nothing more is taken."""
        with self._lock:
            self._take_early = False
            while True:
                try:
                    item = self.early.get_nowait()
                except queue.Empty:
                    return
                if item is not None:
                    self._inbox.put(Inbound(item.line))

    def receive(self) -> Inbound | None:
        """The next line in arrival order (blocking); None once the client closed stdin."""
        return self._inbox.get()

    def release(self) -> None:
        """Wake a ``receive`` blocked in a worker thread (at shutdown)."""
        self._inbox.put(None)

    def close(self) -> None:
        """Give fds 0 and 1 back and close the wire (the reading end only once the reader
        thread has stopped, which it does when the client closes stdin)."""
        self.wire.close(reader=not self._thread.is_alive())

    def _read_loop(self) -> None:
        try:
            for raw in self.wire.reader:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                with self._lock:  # decided atomically with hand_off; sent outside the lock
                    item = Inbound(line) if self._handed_off else self._try_answer(line)
                if item.answered == _DIVERTED:
                    continue  # (its taker answers it)
                if item.answered is not None:
                    self.wire.send(json.dumps(
                        {"jsonrpc": "2.0", "id": item.request_id, "result": item.result},
                        ensure_ascii=False, separators=(",", ":")))
                self._inbox.put(item)
        except (OSError, ValueError) as exc:  # the client went away mid-line
            logger.debug("stdin closed: %s", exc)
        finally:
            self.input_ended = True
            self._inbox.put(None)
            self.early.put(None)  # (no call can come any more)

    def _try_answer(self, line: str) -> Inbound:
        try:
            return self._maybe_answer(line)
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
        if not _plain_request(message):
            return Inbound(line)
        method, params = message["method"], message.get("params") or {}
        if method == "initialize":
            if self.negotiated is not None or not _valid_initialize(params):
                return Inbound(line)  # a second one, or one the SDK would refuse
            self.negotiated = negotiate(self.snapshot, params["protocolVersion"])
        elif method == "tools/list":
            if self.negotiated is None or params.get("cursor") is not None:
                return Inbound(line)  # before initialize, or a later page
        elif method != "ping":
            if self._take_early and self.negotiated is not None and early_search(message):
                item = Inbound(line, answered=_DIVERTED, request_id=message["id"])
                self.early.put(item)
                self.answered.append(f"{method} (early)")
                return item
            return Inbound(line)
        result = answer(self.snapshot, method, self.negotiated)
        self.answered.append(method)
        return Inbound(line, answered=method, request_id=message["id"], result=result)


def _plain_request(message: object) -> bool:
    """A JSON-RPC 2.0 request as the handshake era sends it: a string or integer id,
    a method, params absent or an object without the 2026-07-28 envelope."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return False
    params = message.get("params", {})
    return (isinstance(message.get("method"), str) and isinstance(params, dict)
            and not _has_modern_envelope(params))


def _valid_initialize(params: dict[str, Any]) -> bool:
    """The fields the SDK requires of ``initialize`` (it answers anything else with an error)."""
    info = params.get("clientInfo")
    return (isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict)
            and isinstance(info, dict) and isinstance(info.get("name"), str)
            and isinstance(info.get("version"), str))


def _has_modern_envelope(params: dict[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta


# ---------------------------------------------------------------- entry point


def start_front(*, take_early: bool = False, writes: bool = False) -> Front:
    """Claim the wire and start answering the handshake (``rifflux mcp`` calls this first,
    then runs the server behind it: ``early.serve_with_early_searches``), taking plain
    searches from the first line on with ``take_early`` (``Front.early``), from the
    snapshot of a server that writes notes (``writes``: a writable folder) or not.
    ``RIFFLUX_MCP_FAST_HANDSHAKE=0`` leaves every answer to the SDK. Raises OSError
    when stdin or stdout is not open."""
    fast = os.environ.get("RIFFLUX_MCP_FAST_HANDSHAKE", "1").strip().lower()
    snapshot = None if fast in ("0", "false", "no", "off") else load_snapshot(writes=writes)
    front = Front(Wire.claim(), snapshot, take_early=take_early)
    front.start()
    return front
