"""Every request passes here first: Host, Origin, token and body size, then the route.

- ``Host`` must be a loopback name, an IP address or a name this server was given:
  a page whose domain the attacker re-points at 127.0.0.1 (DNS rebinding) is
  answered 421 (the MCP transport specification requires this of local servers).
- An ``Origin`` other than the server's own (or one given with --allow-origin) is
  answered 403: no other web page may call it, cookie or not.
- With a token, every route but /healthz needs ``Authorization: Bearer <token>``,
  compared in constant time. The page cannot send a header when it is opened, so
  ``/?token=...`` (or the form at /login) sets an HttpOnly, SameSite=Strict
  cookie holding it and redirects to the same page without the token; the cookie
  is never sent by another site's page, and the Origin check refuses such a page
  anyway.
- A body over the limit is answered 413 before any route reads it.

``AccessLog`` writes one line per request: method, path, status, milliseconds (the
query string, which holds search words, only at DEBUG).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import deque
from http.cookies import CookieError, SimpleCookie
from importlib.resources import files
from urllib.parse import parse_qs, urlencode

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_response
from .options import ServeOptions, split_host

__all__ = ["COOKIE", "AccessLog", "Guard"]

access_logger = logging.getLogger("rifflux.http.access")

COOKIE = "rifflux_token"
#: Answered without a token: the health check, and the form that asks for the token.
_OPEN = frozenset({"/healthz", "/login", "/favicon.ico"})


class Guard:
    def __init__(self, app: ASGIApp, options: ServeOptions) -> None:
        self._app = app
        self._options = options
        self._token = options.token.encode() if options.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":  # (no route takes a websocket: none is let past)
            await send({"type": "websocket.close", "code": 1008})
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if self._token is not None and scope["path"] in ("/", "/login"):
            login = await self._login(scope, receive)
            if login is not None:
                await login(scope, receive, send)
                return
        await self._limited(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host or not self._options.host_allowed(split_host(host)):
            return error_response(
                421, "misdirected_request",
                f"this server does not answer to the host {host!r}: call it by a loopback "
                "name or address (http://127.0.0.1:PORT), or start it with --allow-host NAME")
        origin = headers.get("origin")
        if origin is not None and not self._options.origin_allowed(origin, host):
            return error_response(
                403, "forbidden_origin",
                f"requests from pages of {origin!r} are refused: only the server's own page "
                "may call it; start it with --allow-origin ORIGIN to let another page in")
        if self._token is not None and not _logging_in(scope) and not self.authorized(headers):
            return self._unauthorized(scope, headers)
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() \
                and int(declared) > self._options.max_body_bytes:
            return _too_large(self._options.max_body_bytes)
        return None

    def authorized(self, headers: Headers) -> bool:
        assert self._token is not None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and _same(given.strip().encode(), self._token):
            return True
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get("cookie", ""))
        except CookieError:  # (a malformed cookie header holds no token)
            return False
        held = cookie.get(COOKIE)
        return held is not None and _same(held.value.encode(), self._token)

    def _unauthorized(self, scope: Scope, headers: Headers) -> Response:
        if scope["path"] == "/" and "text/html" in headers.get("accept", ""):
            return RedirectResponse("/login", status_code=303)  # a person, at the page
        return error_response(
            401, "unauthorized",
            "this server needs its token: send `Authorization: Bearer <token>` (the value "
            "of --token or RIFFLUX_TOKEN where it runs); people open /?token=<token> once",
            {"WWW-Authenticate": 'Bearer realm="rifflux"'})

    async def _login(self, scope: Scope, receive: Receive) -> Response | None:
        """``/?token=`` and the /login form: a cookie from a right token; the form again
        after a wrong one; None: nothing to do here (the page itself)."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.pop("token", [None])[0]
        if scope["path"] == "/login" and scope["method"] == "POST":
            body = await _read_body(receive, self._options.max_body_bytes)
            given = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0]
        elif scope["path"] == "/login":
            return _login_page(wrong=False)
        if given is None:
            return None
        assert self._token is not None
        if not _same(given.encode(), self._token):
            return _login_page(wrong=True)
        rest = urlencode({k: v[0] for k, v in query.items()})
        response = RedirectResponse("/" + (f"?{rest}" if rest else ""), status_code=303)
        response.set_cookie(COOKIE, given, httponly=True, samesite="strict", path="/")
        return response

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The body is read here, up to the limit, and handed on whole: a chunked body
        that grows past it is refused before the route sees a byte."""
        limit = self._options.max_body_bytes
        held: deque[Message] = deque()
        size = 0
        while True:
            message = await receive()
            held.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > limit:
                await _too_large(limit)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return held.popleft() if held else await receive()

        await self._app(scope, replay, send)


def _logging_in(scope: Scope) -> bool:
    path = scope["path"]  # (the page's stylesheet and script are no secret)
    return path in _OPEN or path.startswith("/static/") or (
        path == "/" and b"token=" in scope.get("query_string", b""))


def _same(given: bytes, token: bytes) -> bool:
    return hmac.compare_digest(given, token)


def _too_large(limit: int) -> Response:
    return error_response(413, "body_too_large",
                          f"the request body is over {limit:,} bytes: send less (a search "
                          "needs a query and a few filters)")


async def _read_body(receive: Receive, limit: int) -> bytes:
    body = b""
    while len(body) <= limit:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    return body[:limit]


def _login_page(*, wrong: bool) -> HTMLResponse:
    page = files(__package__).joinpath("static/login.html").read_text(encoding="utf-8")
    note = "That token is not this server's. " if wrong else ""
    return HTMLResponse(page.replace("{{note}}", note), status_code=401 if wrong else 200,
                        headers={"Cache-Control": "no-store"})


class AccessLog:
    """One line per request when it ends: ``GET /api/search 200 4.1 ms``."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_logger.isEnabledFor(logging.INFO):
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            query = scope.get("query_string", b"")
            shown = scope["path"]
            if query and access_logger.isEnabledFor(logging.DEBUG):
                shown += "?" + _without_token(query.decode("latin-1"))
            access_logger.info("%s %s %s %.1f ms", scope["method"], shown, status or "-",
                               (time.perf_counter() - started) * 1000)


def _without_token(query: str) -> str:
    return "&".join("token=…" if part.startswith("token=") else part
                    for part in query.split("&"))
