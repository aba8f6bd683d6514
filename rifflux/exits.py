"""How a command-line process ends and reports: exit codes, a failure as one line on
stderr, logs on stderr.

Every process started from the command line shares these: the commands (``cli``), the
stdio bridge (``mcp.bridge``) and ``rifflux serve`` (``http.serve``). Standard library
only at the top (rich is imported only to log to a terminal): ``rifflux mcp`` reaches
this before the MCP front starts, and the front must start within milliseconds (see
``rifflux.mcp._fast_start.front``).

Exit codes: 0 success, 1 failure (or a search with no results), 2 bad usage or
configuration, 130 interrupted, 128 + N stopped by signal N (SIGTERM, SIGHUP).
"""

from __future__ import annotations

import logging
import sys

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "configure_logging",
           "fail"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def fail(message: str, code: int = EXIT_FAILURE) -> int:
    """Report one failure line on stderr; returns ``code``."""
    if sys.stderr is not None:
        sys.stderr.write(f"rifflux: error: {message}\n")
    return code


def configure_logging(level: str) -> None:
    """Logs go to stderr only: under ``rifflux mcp`` stdout is the protocol channel."""
    handler: logging.Handler
    if sys.stderr is None:  # started with fd 2 closed: nowhere to log
        handler = logging.NullHandler()
    elif sys.stderr.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(stderr=True), show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)  # (checked)
