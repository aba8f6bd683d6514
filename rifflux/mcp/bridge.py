"""``rifflux mcp --connect URL``: an MCP client's stdio, passed on to a running ``rifflux serve``.

For clients that start servers only over stdio. Each line the client writes is
POSTed unchanged to the server's ``/mcp`` (Streamable HTTP), with the session
id the server gave at ``initialize``; each message the server answers with (a
JSON body, or the events of an SSE stream: progress first, then the answer) is
written unchanged to stdout, one line each. Requests run side by side (a long
reindex does not hold up a search), and a GET stream carries what the server
sends on its own. No index is opened and no model or SDK is loaded: standard
library only, a few MB.

If the server restarts, its sessions are gone (it answers 404): the bridge opens
a new one with the client's own ``initialize`` and sends the request again, so
the client notices nothing. A request the server cannot be asked (not running,
wrong token) is answered with a JSON-RPC error that says so; the bridge goes on.

``--connect auto`` finds the server from the file beside the index
(``rifflux.discovery``); without one, ``rifflux mcp`` serves over stdio as
usual.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from .. import discovery
from ..config import Settings

__all__ = ["Bridge", "Target", "main", "target_for"]

logger = logging.getLogger(__name__)

_SESSION = "mcp-session-id"
_VERSION = "mcp-protocol-version"
#: JSON-RPC error code for "the server behind the bridge could not answer".
_UNREACHABLE = -32000
#: How long the requests under way when stdin ends are given to be answered, in all.
_FINISH_S = 10.0


@dataclass(frozen=True, slots=True)
class Target:
    url: str  # the MCP endpoint: http://127.0.0.1:7474/mcp
    token: str | None = None


def target_for(args: argparse.Namespace, settings: Settings) -> Target | None:
    """Where ``--connect`` points; None when ``auto`` finds no server running."""
    token = args.token or os.environ.get("RIFFLUX_TOKEN") or None
    if args.connect == "auto":
        if not isinstance(settings.db_path, Path):  # (a database has no file beside it)
            logger.info("--connect auto looks beside an index file: serving over stdio")
            return None
        running = discovery.find(settings.db_path)
        if running is None:
            logger.info("no rifflux serve runs on %s: serving over stdio", settings.db_path)
            return None
        return Target(running.url.rstrip("/") + "/mcp", token or running.token)
    url = urlsplit(args.connect)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"--connect {args.connect!r} is not an http(s) URL: give the "
                         "server's address, e.g. http://127.0.0.1:7474/mcp, or auto")
    path = url.path if url.path not in ("", "/") else "/mcp"
    return Target(f"{url.scheme}://{url.netloc}{path}", token)


def main(args: argparse.Namespace, settings: Settings) -> int | None:
    """Run the bridge to its exit code; None: ``auto`` found no server (serve as usual)."""
    from ..exits import EXIT_OK, EXIT_USAGE, configure_logging, fail

    configure_logging(settings.log_level)
    try:
        target = target_for(args, settings)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    if target is None:
        return None
    if sys.stdin.isatty():
        sys.stderr.write(f"rifflux: passing MCP on stdio to {target.url}; an MCP client "
                         "starts this command. Ctrl-D stops.\n")
    try:
        Bridge(target).run(sys.stdin.buffer, sys.stdout.buffer)
    except KeyboardInterrupt:
        pass
    return EXIT_OK


class Bridge:
    def __init__(self, target: Target) -> None:
        url = urlsplit(target.url)
        assert url.hostname is not None
        self._url = target.url
        self._https = url.scheme == "https"
        self._host, self._port = url.hostname, url.port or (443 if self._https else 80)
        self._path = url.path or "/mcp"
        self._token = target.token
        self._session: str | None = None
        self._version: str | None = None
        self._initialize: bytes | None = None  # the client's, for a new session
        self._initialized: bytes | None = None
        self._out: IO[bytes] | None = None
        self._write_lock = threading.Lock()
        self._session_lock = threading.Lock()
        self._stream_started = False
        self._requests: list[threading.Thread] = []
        #: Set (under the write lock) once stdin ended and the requests were answered:
        #: nothing is written after it. A daemon thread still writing to stdout while the
        #: interpreter shuts down aborts the process ("could not acquire lock for
        #: stdout at interpreter shutdown"): seen, 1 run in 6, under a loaded machine.
        self._done = False

    def run(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self._out = stdout
        for line in stdin:
            if not line.strip():
                continue
            message = _parse(line)
            method = message.get("method") if isinstance(message, dict) else None
            if method == "initialize":
                self._initialize = line
                self._send(line, message)  # (first: later requests need its session)
            elif method == "notifications/initialized":
                self._initialized = line
                self._send(line, message)
                self._open_stream()
            elif isinstance(message, dict) and "id" in message and method is not None:
                request = threading.Thread(target=self._send, args=(line, message),
                                           daemon=True, name="rifflux-bridge-request")
                self._requests = [t for t in self._requests if t.is_alive()] + [request]
                request.start()
            else:  # notifications and the client's answers: quick, and in order
                self._send(line, message)
        self._finish()
        self._close()

    def _finish(self) -> None:
        """stdin ended: the requests under way are answered (for at most
        ``_FINISH_S`` in all), then nothing more is written."""
        deadline = time.monotonic() + _FINISH_S
        for request in self._requests:
            request.join(max(0.0, deadline - time.monotonic()))
        unanswered = sum(t.is_alive() for t in self._requests)
        if unanswered:
            logger.warning("stdin ended with %d request(s) unanswered after %.0f s: "
                           "their answers are dropped", unanswered, _FINISH_S)
        with self._write_lock:
            self._done = True

    # ------------------------------------------------------------ one message

    def _send(self, line: bytes, message: Any, retried: bool = False) -> None:
        request_id = message.get("id") if isinstance(message, dict) else None
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        session = self._session
        try:
            conn = self._connection(timeout=None)
            try:
                conn.request("POST", self._path, body=line, headers=self._headers(
                    {"Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream"}))
                response = conn.getresponse()
                if response.status == 404 and session is not None and not retried \
                        and self._initialize is not None:
                    response.read()
                    self._new_session(session)
                    self._send(line, message, retried=True)
                    return
                self._answer(response, request_id if is_request else None)
            finally:
                conn.close()
        except (OSError, http.client.HTTPException) as exc:
            logger.warning("cannot reach %s: %s", self._url, exc)
            if is_request:
                self._error(request_id, f"the Rifflux server at {self._url} cannot be reached "
                                        f"({exc}); start it with `rifflux serve`, or remove "
                                        "--connect to run the server here")

    def _answer(self, response: http.client.HTTPResponse, request_id: Any) -> None:
        if response.status in (202, 204):
            response.read()
            return
        if response.status >= 400:
            body = response.read().decode("utf-8", "replace")
            logger.warning("%s answered %d: %s", self._url, response.status, body[:500])
            if request_id is not None:
                self._error(request_id, f"the Rifflux server at {self._url} answered "
                                        f"{response.status}: {_reason(body)}")
            return
        if response.getheader(_SESSION):
            self._session = response.getheader(_SESSION)
        kind = response.getheader("content-type", "")
        if kind.startswith("text/event-stream"):
            for data in _events(response):
                self._remember_version(data)
                self._write(data)
        else:
            answer = response.read()
            self._remember_version(answer)
            self._write(answer)

    def _new_session(self, stale: str) -> None:
        """The server forgot the session (it restarted): open a new one with the client's
        own handshake, whose answers the client has had already."""
        with self._session_lock:
            if self._session != stale:
                return  # another request did it
            logger.info("the server forgot session %s: opening a new one", stale[:8])
            self._session = None
            conn = self._connection(timeout=30)
            try:
                for line in (self._initialize, self._initialized):
                    if line is None:
                        continue
                    conn.request("POST", self._path, body=line, headers=self._headers(
                        {"Content-Type": "application/json",
                         "Accept": "application/json, text/event-stream"}))
                    response = conn.getresponse()
                    self._session = response.getheader(_SESSION) or self._session
                    response.read()
            finally:
                conn.close()

    # ------------------------------------------------------------ the server's own stream

    def _open_stream(self) -> None:
        if not self._stream_started:
            self._stream_started = True
            threading.Thread(target=self._stream, daemon=True, name="rifflux-bridge-get").start()

    def _stream(self) -> None:
        """What the server sends outside any request (GET); best effort."""
        try:
            conn = self._connection(timeout=None)
            conn.request("GET", self._path, headers=self._headers({"Accept": "text/event-stream"}))
            response = conn.getresponse()
            if response.status != 200:
                response.read()
                return
            for data in _events(response):
                self._write(data)
        except (OSError, http.client.HTTPException) as exc:
            logger.debug("the server's stream ended: %s", exc)

    def _close(self) -> None:
        """stdin ended: the client is gone; end the session (best effort)."""
        if self._session is None:
            return
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = self._connection(timeout=2)
            conn.request("DELETE", self._path, headers=self._headers({}))
            conn.getresponse().read()
            conn.close()

    # ------------------------------------------------------------ plumbing

    def _connection(self, timeout: float | None) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        return kind(self._host, self._port, timeout=timeout)

    def _headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = dict(extra)
        if self._session:
            headers[_SESSION] = self._session
        if self._version:
            headers[_VERSION] = self._version
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def _remember_version(self, data: bytes) -> None:
        if self._version is None and b"protocolVersion" in data:
            message = _parse(data)
            result = message.get("result") if isinstance(message, dict) else None
            if isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                self._version = result["protocolVersion"]

    def _write(self, data: bytes) -> None:
        line = data.strip()
        if b"\n" in line:  # (one message, one line: the stdio framing)
            line = json.dumps(json.loads(line), separators=(",", ":")).encode()
        assert self._out is not None
        with self._write_lock:
            if self._done:  # (stdin ended: the client reads no more)
                return
            self._out.write(line + b"\n")
            self._out.flush()

    def _error(self, request_id: Any, message: str) -> None:
        self._write(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                "error": {"code": _UNREACHABLE, "message": message}}).encode())


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None  # (passed on as it is: the server answers a parse error)


def _reason(body: str) -> str:
    """The message of an error answer: the API's shape, JSON-RPC's, or the text."""
    with contextlib.suppress(ValueError, KeyError, TypeError):
        parsed = json.loads(body)
        return str(parsed["error"]["message"])
    return body.strip()[:300] or "no reason given"


def _events(response: http.client.HTTPResponse) -> Any:
    """The data of each ``message`` event of an SSE stream, as it arrives."""
    data: list[bytes] = []
    kind = b"message"
    while True:
        raw = response.readline()
        if not raw:
            return
        line = raw.rstrip(b"\r\n")
        if not line:
            if data and kind == b"message":
                yield b"\n".join(data)
            data, kind = [], b"message"
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
        elif line.startswith(b"event:"):
            kind = line[6:].strip()
