"""The MCP surface: a stdio server whose tools are thin adapters over ``Rifflux``.

``rifflux mcp`` (also ``rifflux-mcp`` and ``python -m rifflux mcp``) runs it,
starting in ``front`` (standard library only, answers the handshake at once)
and handing off to the SDK server in ``server``; ``build_server`` gives the
server object to embed or test in-process. The names below are imported on
first use, so that importing ``rifflux.mcp.front`` does not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handoff import serve_stdio
    from .server import RiffluxMCPServer, ServerState, build_server

__all__ = ["RiffluxMCPServer", "ServerState", "build_server", "serve_stdio"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'rifflux.mcp' has no attribute {name!r}")
    from . import handoff, server

    return getattr(handoff if name == "serve_stdio" else server, name)
