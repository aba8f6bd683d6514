"""The MCP server's front: answers the handshake while the SDK is still importing.

Importing the MCP SDK takes 1.2-1.5 s on a small machine (it builds pydantic
models for every protocol revision), longer than clients like to wait for
``initialize``. So ``rifflux mcp`` starts here, on the standard library only:

1. It claims the wire (``wire``): the protocol keeps private duplicates of fds 0
   and 1, while fd 0 is pointed at the null device and fd 1 at stderr, so nothing
   a library or child process prints can reach the client.
2. A reader thread reads every line the client sends and queues it in order.
   Until the hand-off, it answers ``initialize``, ``tools/list`` and ``ping``
   itself, from a snapshot of exactly what this SDK and these tools answer
   (``snapshot``: ``handoff.capture_handshake`` asks the SDK).
3. Meanwhile the main thread imports the command line and the SDK, opens the
   index and hands off (``handoff.serve_after_front``): every queued line goes
   to the SDK in order, those the front answered included, so that its
   session is set up exactly as without the front; its answers to those are
   dropped (and compared with the front's). The SDK answers everything from
   then on.

With ``take_early``, it also takes the ``search_rifflux`` calls whose arguments the
tool's published input schema accepts as they are (``taken``) for ``early``, which
answers them from the library with the tool's own function while the SDK loads, and
it passes on a ``notifications/cancelled`` for such a call (the SDK never saw it).

Without a usable snapshot (another SDK or Rifflux version and no cache yet),
or with ``RIFFLUX_MCP_FAST_HANDSHAKE=0``, the front answers nothing and
everything waits for the SDK: slower, never wrong.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..instructions import joined
from .snapshot import answer, load_snapshot, negotiate, tool_schema
from .taken import cancelled_id, early_search
from .wire import Wire

__all__ = ["Front", "Inbound", "start_front"]

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------- the front

#: ``Inbound.answered`` for a request the front's diverting taker answers ...
DIVERTED = "(diverted)"
#: ... and for a cancellation of one of them (``request_id``: the call it cancels).
CANCELLED = "(cancelled)"


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
                 take_early: bool = False,
                 folders: Callable[[], str | None] | None = None) -> None:
        self.wire = wire
        self.snapshot = snapshot
        #: The instructions' line naming the indexed folders, read once by the reader
        #: thread before the first line (``folders_line`` waits for it).
        self._folders_source = folders
        self._folders: str | None = None
        self._folders_read = threading.Event()
        self.negotiated: str | None = None
        #: What the front answered itself, in order (logged at the hand-off).
        self.answered: list[str] = []
        self._inbox: queue.SimpleQueue[Inbound | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._handed_off = False
        #: With ``take_early``: ``search_rifflux`` calls (``taken.early_search``), taken for
        #: ``early.EarlySearches`` (answered from the library while the SDK imports) until
        #: the hand-off, and the cancellations of those not answered yet (``CANCELLED``);
        #: None once no more can come. Only when the front answers the handshake.
        self.early: queue.SimpleQueue[Inbound | None] = queue.SimpleQueue()
        self._take_early = take_early and snapshot is not None
        #: The calls taken and not answered yet (their request ids).
        self._taken: set[Any] = set()
        #: ``search_rifflux``'s input schema as the client was given it (at ``initialize``).
        self._schema: dict[str, Any] | None = None
        #: The client has closed stdin (or gone away).
        self.input_ended = False
        self._thread = threading.Thread(target=self._read_loop, name="rifflux-mcp-front",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def folders_line(self) -> str | None:
        """The line naming the indexed folders, as ``initialize`` was (or will be)
        answered with it: the SDK's server is built with the same."""
        self._read_folders()
        return self._folders

    def _read_folders(self) -> None:
        with self._lock:
            if self._folders_read.is_set():
                return
            try:
                self._folders = (self._folders_source() if self._folders_source is not None
                                 else None)
            except Exception:  # (the line is left out: the instructions stay true)
                logger.exception("could not read the indexed folders for the instructions")
            self._folders_read.set()

    def hand_off(self) -> list[str]:
        """From now on the front answers nothing and takes nothing; everything goes to the
        SDK but the cancellations of calls taken and not answered yet (those are still
        answered: ``early`` ends with None when no more can come, ``end_early``).

        Returns the methods the front answered, in order.
        """
        with self._lock:
            self._handed_off = True
            return list(self.answered)

    def settle(self, request_id: Any) -> None:
        """A call taken has been answered (or cancelled): a cancellation of it from now on
        is the SDK's (which ignores an id it does not know)."""
        with self._lock:
            self._taken.discard(request_id)

    def end_early(self) -> None:
        """No more calls or cancellations for ``early`` (the server is stopping)."""
        self.early.put(None)

    def give_back_early(self) -> None:
        """The calls taken and not answered go to the SDK after all (the library could not
        open: the SDK's server says why); nothing more is taken."""
        with self._lock:
            self._take_early = False
            self._taken.clear()
            while True:
                try:
                    item = self.early.get_nowait()
                except queue.Empty:
                    return
                if item is not None and item.answered == DIVERTED:
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
            self._read_folders()  # (a few milliseconds, before the first line is answered)
            for raw in self.wire.reader:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line:
                    continue
                with self._lock:  # decided atomically with hand_off; sent outside the lock
                    item = self._decide(line)
                if item.answered in (DIVERTED, CANCELLED):
                    continue  # (early answers it, or cancels the call)
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

    def _decide(self, line: str) -> Inbound:
        """What becomes of a line: a cancellation of a call taken goes to ``early``, even
        after the hand-off; until the hand-off, the front answers what it can."""
        if self._taken:
            cancels = cancelled_id(line)
            if cancels is not None and cancels in self._taken:
                self._taken.discard(cancels)
                item = Inbound(line, answered=CANCELLED, request_id=cancels)
                self.early.put(item)
                return item
        return Inbound(line) if self._handed_off else self._try_answer(line)

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
            self._schema = tool_schema(self.snapshot, self.negotiated, "search_rifflux")
        elif method == "tools/list":
            if self.negotiated is None or params.get("cursor") is not None:
                return Inbound(line)  # before initialize, or a later page
        elif method != "ping":
            if (self._take_early and self._schema is not None
                    and message["id"] not in self._taken
                    and early_search(message, self._schema)):
                item = Inbound(line, answered=DIVERTED, request_id=message["id"])
                self._taken.add(message["id"])
                self.early.put(item)
                self.answered.append(f"{method} (early)")
                return item
            return Inbound(line)
        result = answer(self.snapshot, method, self.negotiated)
        if method == "initialize" and self._folders:
            result = {**result, "instructions": joined(result.get("instructions") or "",
                                                       self._folders)}
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


def start_front(*, take_early: bool = False, writes: bool = False,
                folders: Callable[[], str | None] | None = None) -> Front:
    """Claim the wire and start answering the handshake (``rifflux mcp`` calls this first,
    then runs the server behind it: ``early.serve_with_early_searches``), taking plain
    searches from the first line on with ``take_early`` (``Front.early``), from the
    snapshot of a server that writes notes (``writes``: a writable folder) or not.
    ``RIFFLUX_MCP_FAST_HANDSHAKE=0`` leaves every answer to the SDK. ``folders`` reads
    the instructions' line naming the indexed folders (``instructions.folders_of``).
    Raises OSError when stdin or stdout is not open."""
    fast = os.environ.get("RIFFLUX_MCP_FAST_HANDSHAKE", "1").strip().lower()
    snapshot = None if fast in ("0", "false", "no", "off") else load_snapshot(writes=writes)
    front = Front(Wire.claim(), snapshot, take_early=take_early, folders=folders)
    front.start()
    return front
