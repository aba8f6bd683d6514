"""``python -m rifflux ...`` runs the command line (``python -m rifflux mcp`` the MCP server)."""

from .cli.launch import main

raise SystemExit(main())
