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
    ScoreBreakdown,
    SearchExplain,
    SearchResult,
)


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
        line.append(_display_path(hit), style="bold cyan")
        if hit.get("heading_path"):
            line.append(f"  {hit['heading_path']}", style="magenta")
        line.append(f"  {_score(hit['score_breakdown'])}", style="dim")
        console.print(line)
        console.print(_marked("    " + hit["snippet"]))
        if "explain" in hit:
            why = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                            for k, v in hit["explain"].items())
            console.print(Text(f"    why: {why or 'no branch found it'}", style="dim"))


def print_explain(console: Console, explain: SearchExplain) -> None:
    """What the search ran: its FTS5 expressions, the stopwords it left out and the
    filters it applied, one dim line each (the last three when there are any)."""
    lines = [f"lexical query: {explain['fts_query'] or '(no searchable word)'}"]
    if explain["fts_every"]:
        lines.append(f"holding every word first: {explain['fts_every']}")
    if explain["stopwords_dropped"]:
        lines.append(f"stopwords left out: {', '.join(explain['stopwords_dropped'])}")
    if explain["filters"]:
        lines.append("filters: " + "; ".join(f"{name} {_shown_value(value)}"
                                             for name, value in explain["filters"].items()))
    for line in lines:
        console.print(line, style="dim", markup=False)


def _shown_value(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}={_shown_value(v)}" for k, v in value.items())
    return str(value)


def print_links(console: Console, links: NoteLinks) -> None:
    """A note's outgoing links (line, link as written, where it goes), then its
    backlinks (``path:line`` as editors open it, heading, the link)."""
    root = Path(links["root"])
    console.print(Text(_shown(root / links["path"]), style="bold cyan"))
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
        line.append(f"{_shown(root / back['path'])}:{back['line']}", style="cyan")
        if back["heading"]:
            line.append(f"  {back['heading']}", style="magenta")
        line.append(f"  {_written(back)}")
        console.print(line)


def print_files(console: Console, files: list[IndexedFile]) -> None:
    """Each file: its number of chunks, where it is (as a person opens it), its title."""
    width = max((len(f"{f['chunks']:,}") for f in files), default=0)
    for file in files:
        where = _shown(Path(file["root"]) / file["path"])
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


def _display_path(hit: SearchResult) -> str:
    """The file as a person can open it (relative to the working directory when inside
    it) and the lines the hit came from: ``path:start-end``, which terminals and editors
    open at that line, and ``rifflux show`` prints."""
    full = Path(str(hit.get("root", ""))) / str(hit["path"])
    return f"{_shown(full)}:{hit['line_start']}-{hit['line_end']}"


def _shown(full: Path) -> str:
    """A file as a person opens it: relative to the working directory when inside it."""
    try:
        return full.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(full)


def _score(breakdown: ScoreBreakdown) -> str:
    if "rrf" in breakdown:
        lex, sem = breakdown.get("lexical_rank"), breakdown.get("semantic_rank")
        return (f"rrf {breakdown['rrf']:.4f} (lexical {'#' + str(lex) if lex else '-'}, "
                f"semantic {'#' + str(sem) if sem else '-'})")
    if "bm25" in breakdown:
        return f"bm25 {breakdown['bm25']:.3g}"
    return f"cosine {breakdown.get('cosine', 0.0):.3f}"
