"""``create_app``: the one ASGI app of ``rifflux serve``, around a ``Rifflux`` already open.

The MCP server is the stdio server's (``rifflux.mcp.build_server``), serving the
same instance; its Streamable HTTP session manager runs in this app's lifespan
and answers at ``/mcp``, one session per client. The Host and Origin checks of
the SDK's transport are off here: ``security.Guard`` makes them, for every route.
"""

from __future__ import annotations

import difflib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.exceptions import HTTPException
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..api import Rifflux
from ..errors import RiffluxError
from ..mcp.instructions import folders_of
from ..mcp.server import build_server
from . import errors, events, history_routes, page, routes
from .errors import ApiError, error_response
from .options import ServeOptions
from .security import AccessLog, Guard

__all__ = ["create_app"]

_ABOUT = """Rifflux's JSON API: one route per method of the `Rifflux` library, answering
the shapes of `rifflux.types` (docs/CONTRACT.md). Errors are
`{"error": {"type", "message"}}`. With a token, send `Authorization: Bearer <token>`.
MCP clients use `/mcp` (Streamable HTTP) instead."""


def create_app(rf: Rifflux, options: ServeOptions) -> FastAPI:
    """The app serving ``rf`` (open, and closed by the caller after the app stops)."""
    mcp = build_server(rf.settings, rifflux=rf,  # (each session: the folders as they are)
                       folders=lambda: folders_of(rf.settings.db_path))
    mcp.streamable_http_app(  # (makes the session manager; the app it returns is unused)
        max_request_body_size=options.max_body_bytes,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    sessions = mcp.session_manager

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with sessions.run():
            app.state.serving = True
            try:
                yield
            finally:
                app.state.serving = False

    app = FastAPI(title="Rifflux", version=_version(), description=_ABOUT, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url="/openapi.json")
    app.state.rifflux, app.state.options, app.state.serving = rf, options, False
    app.include_router(routes.router)
    app.include_router(history_routes.router)
    app.include_router(events.router)
    app.include_router(page.router)
    app.mount("/static", page.static_files(), name="static")
    app.router.routes.append(Route("/mcp", endpoint=_Mcp(sessions), include_in_schema=False))
    for kind in (ApiError, RiffluxError):
        app.add_exception_handler(kind, errors.handle)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, errors.handle)
    app.add_middleware(Guard, options=options)
    app.add_middleware(AccessLog)  # (outermost: it sees refusals too)
    return app


class _Mcp:
    """``/mcp``: every method (POST, GET for the server's stream, DELETE) to the SDK."""

    def __init__(self, sessions: StreamableHTTPSessionManager) -> None:
        self._sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._sessions.handle_request(scope, receive, send)


async def _invalid(request: Request, exc: Any) -> JSONResponse:
    """A request that does not fit the route's model: 400, saying what to fix."""
    problems = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"] if part not in ("query", "body", "path")]
        name = ".".join(loc) or "the request"
        if err["type"] == "extra_forbidden":
            close = difflib.get_close_matches(loc[-1], _known(request), n=1) if loc else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{name} is not an argument of this route{hint}")
        elif err["type"] == "missing":
            problems.append(f"{name} is required")
        elif err["type"] == "json_invalid":  # (its loc: the character where it broke)
            why = (err.get("ctx") or {}).get("error") or err["msg"]
            problems.append(f"the body is not JSON ({why}, at character {loc[-1] if loc else 0}"
                            "); send one JSON object")
        elif not loc and isinstance(err.get("input"), bytes) and not _json(request):
            # (a body sent as a form, curl -d's way: FastAPI reads JSON only when it says so)
            problems.append("the body is not sent as JSON: send one JSON object with the "
                            "header Content-Type: application/json")
        else:
            got = repr(err.get("input"))
            problems.append(f"{name}: {err['msg']} (got {got[:60]})")
    return error_response(400, "invalid_argument",
                          "; ".join(problems) + " (/openapi.json describes every route)")


def _json(request: Request) -> bool:
    """Whether the request says its body is JSON (``application/json``, or ``+json``)."""
    kind = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def _known(request: Request) -> list[str]:
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    names: list[str] = []
    for dep in [dependant, *getattr(dependant, "dependencies", [])]:
        for param in [*getattr(dep, "query_params", []), *getattr(dep, "body_params", [])]:
            annotation = getattr(param.field_info, "annotation", None)
            fields = getattr(annotation, "model_fields", None)
            names += list(fields) if fields else [param.alias]
    return names


async def _http_error(_: Request, exc: Any) -> JSONResponse:
    """Starlette's own answers (no such route, method not allowed) in the API's shape."""
    kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    message = {404: "no such route: /openapi.json lists the API's routes",
               405: "this route does not take that method"}.get(exc.status_code,
                                                                str(exc.detail))
    return error_response(exc.status_code, kind, message, getattr(exc, "headers", None))


def _version() -> str:
    try:
        return version("rifflux")
    except PackageNotFoundError:
        return "0"
