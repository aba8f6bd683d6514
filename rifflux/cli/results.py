"""Search results on stdout: in colour on a terminal (``terminal``, with rich), as plain
lines elsewhere (``plain``, without rich, whose import costs a one-shot search about
30 ms)."""

from __future__ import annotations

import os
import sys

from ..types import SearchExplain, SearchResult
from .plain import print_plain

__all__ = ["print_search"]


def print_search(results: list[SearchResult], explain: SearchExplain | None) -> None:
    """What the search ran (with --explain), then each hit: on a terminal in colour (rich),
    elsewhere as plain lines."""
    if sys.stdout.isatty() or os.environ.get("FORCE_COLOR"):
        from .terminal import print_explain, print_results, stdout_console

        out = stdout_console()
        if explain is not None:
            print_explain(out, explain)
        print_results(out, results)
        return
    print_plain(results, explain)
