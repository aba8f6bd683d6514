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
import os
import sys

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "configure_logging",
           "end", "fail"]

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


def end(code: int) -> int:
    """``code``, for a console script to exit with; called last, once everything is
    closed. While a load still runs in a background thread (the model's warm-up, which
    nothing will use now), the process ends here instead: logs, stdout and stderr are
    flushed, then ``os._exit(code)``. The interpreter's exit would tear the load down
    under it, and onnxruntime aborts a process that exits during its load (exit code 134,
    "terminate called without an active exception"); ``rifflux.native`` makes it
    wait for the step in flight instead, up to a few hundred milliseconds, and this
    does not wait at all."""
    from .loading import running  # (standard library only, like this module)

    if not running():
        return code
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # (closed, or its reader has gone: nothing to flush)
            pass
    os._exit(code)
