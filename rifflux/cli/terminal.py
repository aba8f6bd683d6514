"""What the command line shows on a terminal: search results and links, in colour (the
indexing progress is ``progress``'s). Imported, with rich, only when stdout is a
terminal: elsewhere ``plain`` writes the same lines without styles.
"""

from __future__ import annotations

import errno

from rich.console import Console
from rich.text import Text

from ..types import NoteLinks, SearchExplain, SearchResult
from .plain import also_line, display_path, explain_lines, link_lines, score, why_line


class _Stdout(Console):
    """Results on stdout. A reader that has gone (``rifflux search q | head -1``) is a
    ``BrokenPipeError`` for the command line's boundary, which ends quietly with status
    0, rather than rich's exit with status 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")


def stdout_console(*, soft_wrap: bool = True) -> Console:
    """A console for a command's results (stdout)."""
    return _Stdout(highlight=False, soft_wrap=soft_wrap)


def print_results(console: Console, results: list[SearchResult]) -> None:
    """Each hit: its location (``path:start-end``), breadcrumb and score, then its snippet
    with the matches in colour (and, with explain, why it ranks there)."""
    for n, hit in enumerate(results, 1):
        line = Text(f"{n:>2}. ")
        line.append(display_path(hit), style="bold cyan")
        if hit.get("heading_path"):
            line.append(f"  {hit['heading_path']}", style="magenta")
        line.append(f"  {score(hit['score_breakdown'])}", style="dim")
        console.print(line)
        console.print(_marked("    " + hit["snippet"]))
        if "also_in" in hit:
            console.print(Text(also_line(hit), style="dim"))
        if "explain" in hit:
            console.print(Text(why_line(hit), style="dim"))


def print_explain(console: Console, explain: SearchExplain) -> None:
    """What the search ran: its FTS5 expressions, the stopwords it left out and the
    filters it applied, one dim line each (the last three when there are any)."""
    for line in explain_lines(explain):
        console.print(line, style="dim", markup=False)


def print_links(console: Console, links: NoteLinks) -> None:
    """``plain.link_lines``, each piece in its style."""
    for pieces in link_lines(links):
        line = Text()
        for text, style in pieces:
            line.append(text, style=style)
        console.print(line)


def _marked(snippet: str) -> Text:
    """A snippet with its ``**matches**`` shown in colour instead of between stars."""
    text = Text()
    for i, piece in enumerate(snippet.split("**")):
        text.append(piece, style="bold yellow" if i % 2 else "")
    return text
