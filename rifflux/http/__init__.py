"""The HTTP surface: one process, one ``Rifflux``, for every agent and every person.

``rifflux serve`` runs one ASGI app (``app.create_app``) on uvicorn:

    /mcp          MCP over Streamable HTTP: the stdio server's very tools (``rifflux.mcp``)
    /api/...      a JSON API, one route per ``Rifflux`` method (``routes``), described at
                  /openapi.json from the contract's types (``rifflux.types``)
    /api/events   Server-Sent Events: jobs and commits as they happen (``events``)
    /             the page, from package data (``page``, ``static/``)
    /healthz      200 while the index is open

Every request first passes ``security.Guard`` (Host, Origin, token, body size) and
``security.AccessLog``. This package sits beside ``rifflux.mcp`` on top of the
facade; it never reaches past ``rifflux.api``. ``serve`` writes the file beside
the index that tells ``rifflux mcp --connect auto`` where a server runs
(``rifflux.discovery``); importing this package loads nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .options import ServeOptions

__all__ = ["ServeOptions", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from .app import create_app

        return create_app
    if name == "ServeOptions":
        from .options import ServeOptions

        return ServeOptions
    raise AttributeError(f"module 'rifflux.http' has no attribute {name!r}")
