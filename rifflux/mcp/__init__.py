"""The MCP surface: a stdio server whose tools are thin adapters over ``Rifflux``.

``rifflux mcp`` (also ``rifflux-mcp`` and ``python -m rifflux mcp``) runs it;
``build_server`` gives the server object to embed or test in-process.
"""

from .server import RiffluxMCPServer, ServerState, build_server, serve_stdio

__all__ = ["RiffluxMCPServer", "ServerState", "build_server", "serve_stdio"]
