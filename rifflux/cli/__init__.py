"""The command line: ``rifflux`` and ``rifflux-mcp``.

``launch`` holds the console scripts' entry points; ``entry`` turns arguments and
the environment into ``Settings`` and runs a command with signal handling and
exit codes (standard library only at import, for a fast start); ``commands``
holds the commands themselves, and ``terminal`` draws their progress and
results. Nothing is imported here: ``rifflux --help`` and ``rifflux mcp`` start
before numpy, aiosqlite, rich or the MCP SDK load.
"""
