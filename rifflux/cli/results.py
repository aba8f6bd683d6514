"""Results on stdout: in colour on a terminal (``terminal``, with rich), as plain lines
elsewhere (``plain``, without rich, whose import costs a one-shot command about 30 ms)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .plain import Lines, on_terminal, print_plain

if TYPE_CHECKING:
    from ..types import SearchExplain, SearchResult
    from .plain import Out

__all__ = ["out", "print_search"]


def out() -> Out:
    """A command's results: on a terminal rich's console (imported now), else plain
    lines."""
    if on_terminal():
        from .terminal import stdout_console

        return stdout_console()
    return Lines()


def print_search(results: list[SearchResult], explain: SearchExplain | None) -> None:
    """What the search ran (with --explain), then each hit: on a terminal in colour (rich),
    elsewhere as plain lines."""
    if on_terminal():
        from .terminal import print_explain, print_results, stdout_console

        console = stdout_console()
        if explain is not None:
            print_explain(console, explain)
        print_results(console, results)
        return
    print_plain(results, explain)
