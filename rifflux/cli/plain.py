"""Results as plain text, for a stdout that is not a terminal (a pipe, a file, another
program): the same lines a terminal shows, without rich (whose import costs a one-shot
command about 30 ms) and without styles. ``terminal`` draws them in colour with the
same helpers; ``results`` picks one of the two."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.style import Style

    from ..types import (
        ChunkDetail,
        IndexedFile,
        LinkPlace,
        NoteLinks,
        ScoreBreakdown,
        SearchExplain,
        SearchResult,
    )

__all__ = ["Lines", "Out", "display_path", "explain_lines", "link_lines", "on_terminal",
           "print_files", "print_plain", "score", "shown", "why_line"]


class Out(Protocol):
    """Where a command prints its results: rich's console on a terminal, plain lines
    elsewhere (``results.out``)."""

    def print(self, text: str, /, *, style: str | Style | None = None,
              markup: bool | None = None) -> None: ...


class Lines:
    """Each text on a line of its own, as written (no markup, no styles, no wrapping)."""

    def print(self, text: str, /, *, style: str | Style | None = None,
              markup: bool | None = None) -> None:
        sys.stdout.write(f"{text}\n")


def on_terminal() -> bool:
    """Whether results are drawn for people (rich, in colour): stdout is a terminal, or
    FORCE_COLOR asks for colour anyway."""
    return sys.stdout.isatty() or bool(os.environ.get("FORCE_COLOR"))


def print_plain(results: list[SearchResult], explain: SearchExplain | None) -> None:
    """What the search ran (with --explain), then each hit, as plain lines."""
    lines = explain_lines(explain) if explain is not None else []
    for n, hit in enumerate(results, 1):
        head = f"{n:>2}. {display_path(hit)}"
        if hit.get("heading_path"):
            head += f"  {hit['heading_path']}"
        lines += [f"{head}  {score(hit['score_breakdown'])}",
                  "    " + hit["snippet"].replace("**", "")]
        if "also_in" in hit:
            lines.append(also_line(hit))
        if "explain" in hit:
            lines.append(why_line(hit))
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
        sys.stdout.flush()


def explain_lines(explain: SearchExplain) -> list[str]:
    """What the search ran: its FTS5 expressions, the stopwords it left out and the
    filters it applied (the last three when there are any)."""
    lines = [f"lexical query: {explain['fts_query'] or '(no searchable word)'}"]
    if explain["fts_every"]:
        lines.append(f"holding every word first: {explain['fts_every']}")
    if explain["stopwords_dropped"]:
        lines.append(f"stopwords left out: {', '.join(explain['stopwords_dropped'])}")
    if explain["filters"]:
        lines.append("filters: " + "; ".join(f"{name} {_shown_value(value)}"
                                             for name, value in explain["filters"].items()))
    return lines


def also_line(hit: SearchResult, most: int = 5) -> str:
    """The other places of a hit's text (``also_in``), as ``path:line`` (the first few)."""
    places = hit.get("also_in", [])
    shown_places = [f"{shown(Path(p['root']) / p['path'])}:{p['line_start']}"
                    for p in places[:most]]
    more = hit.get("also_in_count", len(places)) - len(shown_places)
    return "    also in: " + ", ".join(shown_places) + (f" and {more} more" if more else "")


def why_line(hit: SearchResult) -> str:
    why = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                    for k, v in hit.get("explain", {}).items())
    return f"    why: {why or 'no branch found it'}"


def _shown_value(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}={_shown_value(v)}" for k, v in value.items())
    return str(value)


def display_path(hit: SearchResult | ChunkDetail) -> str:
    """The file as a person can open it (relative to the working directory when inside
    it) and the lines the hit came from: ``path:start-end``, which terminals and editors
    open at that line, and ``rifflux show`` prints; a PDF's or a deck's hit, its page or
    slide: ``paper.pdf:14`` (``rifflux show`` prints that page)."""
    full = Path(str(hit.get("root", ""))) / str(hit["path"])
    page = hit.get("page", hit.get("slide"))
    if page is not None:
        return f"{shown(full)}:{page}"
    return f"{shown(full)}:{hit['line_start']}-{hit['line_end']}"


def shown(full: Path) -> str:
    """A file as a person opens it, and as every command prints a path (search's hits,
    show, links both ways, neighbors, files, recent): relative to the working directory
    when inside it (from an indexed folder: its own paths), else absolute."""
    try:
        return full.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(full)


def score(breakdown: ScoreBreakdown) -> str:
    if "rrf" in breakdown:
        lex, sem = breakdown.get("lexical_rank"), breakdown.get("semantic_rank")
        return (f"fused {breakdown['fused']:.4f} (lexical {'#' + str(lex) if lex else '-'}, "
                f"semantic {'#' + str(sem) if sem else '-'})")
    if "bm25" in breakdown:
        return f"bm25 {breakdown['bm25']:.3g}"
    return f"cosine {breakdown.get('cosine', 0.0):.3f}"


def print_files(out: Out, files: list[IndexedFile]) -> None:
    """Each file: its number of chunks, where it is (as a person opens it), its title."""
    width = max((len(f"{f['chunks']:,}") for f in files), default=0)
    for file in files:
        where = shown(Path(file["root"]) / file["path"])
        out.print(f"{file['chunks']:>{width},}  {where}  {file['title']}", markup=False)


#: A line of ``rifflux links`` as pieces of text, each with its style on a terminal.
Pieces = list[tuple[str, str]]


def link_lines(links: NoteLinks) -> list[Pieces]:
    """A note's outgoing links (line, link as written, where it goes), then its
    backlinks (``path:line`` as editors open it, heading, the link)."""
    root = Path(links["root"])
    outgoing, unresolved = links["outgoing"], len(links["unresolved"])
    lines: list[Pieces] = [
        [(shown(root / links["path"]), "bold cyan")],
        [(f"links to: {len(outgoing)}"
          + (f" ({unresolved} unresolved)" if unresolved else ""), "bold")]]
    for link in outgoing:
        lines.append([(f"  {link['line']:>5}  {_written(link)}  ", ""),
                      ("unresolved", "red") if link["path"] is None
                      else (shown(root / link["path"]), "cyan")])
    lines.append([(f"linked from: {len(links['backlinks'])}", "bold")])
    for back in links["backlinks"]:
        line = [("  ", ""), (f"{shown(root / back['path'])}:{back['line']}", "cyan")]
        if back["heading"]:
            line.append((f"  {back['heading']}", "magenta"))
        lines.append([*line, (f"  {_written(back)}", "")])
    return lines


def _written(link: LinkPlace) -> str:
    """A link as it was written (near enough: a wikilink's shown text is left out)."""
    bang = "!" if link["embed"] else ""
    if link["kind"] == "wikilink":
        return f"{bang}[[{link['target']}]]"
    return f"{bang}[{link['text']}]({link['target']})"
