"""The MCP surface: a stdio server whose tools are thin adapters over ``Rifflux``.

``server`` builds the SDK server around the tools (``tools``, their parameters in
``params``, their answers shaped by ``answers`` and ``budget``); ``build_server``
gives the server object to embed or test in-process. ``rifflux mcp`` (also
``rifflux-mcp`` and ``python -m rifflux mcp``) starts it behind ``_fast_start``,
which answers the handshake before the SDK has loaded. The names below are
imported on first use, so that importing ``rifflux.mcp._fast_start.front`` does
not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._fast_start.handoff import serve_stdio
    from .server import RiffluxMCPServer, ServerState, build_server

__all__ = ["RiffluxMCPServer", "ServerState", "build_server", "serve_stdio"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'rifflux.mcp' has no attribute {name!r}")
    from . import server
    from ._fast_start import handoff

    return getattr(handoff if name == "serve_stdio" else server, name)
