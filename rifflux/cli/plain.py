"""Search results as plain text, for a stdout that is not a terminal (a pipe, a file,
another program): the same lines a terminal shows, without rich (whose import costs a
one-shot search about 30 ms) and without styles. ``terminal`` draws them in colour with
the same helpers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..types import ScoreBreakdown, SearchExplain, SearchResult

__all__ = ["display_path", "explain_lines", "print_search", "score", "shown", "why_line"]


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
    lines = explain_lines(explain) if explain is not None else []
    for n, hit in enumerate(results, 1):
        head = f"{n:>2}. {display_path(hit)}"
        if hit.get("heading_path"):
            head += f"  {hit['heading_path']}"
        lines += [f"{head}  {score(hit['score_breakdown'])}",
                  "    " + hit["snippet"].replace("**", "")]
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


def display_path(hit: SearchResult) -> str:
    """The file as a person can open it (relative to the working directory when inside
    it) and the lines the hit came from: ``path:start-end``, which terminals and editors
    open at that line, and ``rifflux show`` prints."""
    full = Path(str(hit.get("root", ""))) / str(hit["path"])
    return f"{shown(full)}:{hit['line_start']}-{hit['line_end']}"


def shown(full: Path) -> str:
    """A file as a person opens it: relative to the working directory when inside it."""
    try:
        return full.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(full)


def score(breakdown: ScoreBreakdown) -> str:
    if "rrf" in breakdown:
        lex, sem = breakdown.get("lexical_rank"), breakdown.get("semantic_rank")
        return (f"rrf {breakdown['rrf']:.4f} (lexical {'#' + str(lex) if lex else '-'}, "
                f"semantic {'#' + str(sem) if sem else '-'})")
    if "bm25" in breakdown:
        return f"bm25 {breakdown['bm25']:.3g}"
    return f"cosine {breakdown.get('cosine', 0.0):.3f}"
