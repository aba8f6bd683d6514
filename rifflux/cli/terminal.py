"""What the command line shows on a terminal: search results, links and files (the
indexing progress is ``progress``'s).

Uses rich; on a non-terminal it writes the same text without styles.
"""

from __future__ import annotations

import errno
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..types import (
    IndexedFile,
    LinkPlace,
    NoteLinks,
    SearchExplain,
    SearchResult,
)
from .plain import display_path, explain_lines, score, shown, why_line


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
        if "explain" in hit:
            console.print(Text(why_line(hit), style="dim"))


def print_explain(console: Console, explain: SearchExplain) -> None:
    """What the search ran: its FTS5 expressions, the stopwords it left out and the
    filters it applied, one dim line each (the last three when there are any)."""
    for line in explain_lines(explain):
        console.print(line, style="dim", markup=False)


def print_links(console: Console, links: NoteLinks) -> None:
    """A note's outgoing links (line, link as written, where it goes), then its
    backlinks (``path:line`` as editors open it, heading, the link)."""
    root = Path(links["root"])
    console.print(Text(shown(root / links["path"]), style="bold cyan"))
    outgoing, unresolved = links["outgoing"], len(links["unresolved"])
    console.print(f"links to: {len(outgoing)}" + (f" ({unresolved} unresolved)" if unresolved
                                                  else ""), style="bold", markup=False)
    for link in outgoing:
        line = Text(f"  {link['line']:>5}  {_written(link)}  ")
        if link["path"] is None:
            line.append("unresolved", style="red")
        else:
            line.append(link["path"], style="cyan")
        console.print(line)
    console.print(f"linked from: {len(links['backlinks'])}", style="bold", markup=False)
    for back in links["backlinks"]:
        line = Text("  ")
        line.append(f"{shown(root / back['path'])}:{back['line']}", style="cyan")
        if back["heading"]:
            line.append(f"  {back['heading']}", style="magenta")
        line.append(f"  {_written(back)}")
        console.print(line)


def print_files(console: Console, files: list[IndexedFile]) -> None:
    """Each file: its number of chunks, where it is (as a person opens it), its title."""
    width = max((len(f"{f['chunks']:,}") for f in files), default=0)
    for file in files:
        where = shown(Path(file["root"]) / file["path"])
        console.print(f"{file['chunks']:>{width},}  {where}  {file['title']}", markup=False)


def _written(link: LinkPlace) -> str:
    """A link as it was written (near enough: a wikilink's shown text is left out)."""
    bang = "!" if link["embed"] else ""
    if link["kind"] == "wikilink":
        return f"{bang}[[{link['target']}]]"
    return f"{bang}[{link['text']}]({link['target']})"


def _marked(snippet: str) -> Text:
    """A snippet with its ``**matches**`` shown in colour instead of between stars."""
    text = Text()
    for i, piece in enumerate(snippet.split("**")):
        text.append(piece, style="bold yellow" if i % 2 else "")
    return text
