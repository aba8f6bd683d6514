"""``python -m rifflux ...`` runs the command line (``python -m rifflux mcp`` the MCP server)."""

from .launch import main

raise SystemExit(main())
