"""The console scripts' entry points: ``rifflux`` and ``rifflux-mcp``.

``rifflux mcp`` goes to the MCP front before anything heavy is imported (the
command line alone pulls in rich, numpy and aiosqlite), so that the server can
answer the handshake within a fraction of a second; see ``rifflux.mcp.front``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: The command line's global options that take a value (``--db PATH``).
_VALUED = frozenset({"--db", "--backend", "--include", "--exclude", "--rrf-k", "--log-level"})


def main(argv: Sequence[str] | None = None) -> int:
    """``rifflux``: the command line, or the MCP server for ``rifflux mcp``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return _interruptible(args, mcp=command(args) == "mcp")


def mcp_main() -> int:
    """``rifflux-mcp``: the same as ``rifflux mcp``."""
    return _interruptible(["mcp", *sys.argv[1:]], mcp=True)


def _interruptible(args: list[str], *, mcp: bool) -> int:
    # Ctrl-C while modules are still importing (before the command line's own
    # handling) exits 130 without a traceback too.
    try:
        if mcp:
            from .mcp.front import main as front_main

            return front_main(args)
        from .cli import main as cli_main

        return cli_main(args)
    except KeyboardInterrupt:
        return 130


def command(args: Sequence[str]) -> str | None:
    """The command word in a command line (global options may come before it)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None
