"""The part of a commit's change that a query matches best: the hunk (or the file,
when it has none: a binary file, a rename) whose lines hold most of the query's words,
as FTS5 would match them (folded and stemmed: ``core.words``), with those words marked.
Pure, for the hits of a history search."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.words import fold, stem

_WORD = re.compile(r"\w+")
#: The lines of a hunk an answer shows, at most.
MATCH_LINES = 12


@dataclass(frozen=True, slots=True)
class Hunk:
    path: str
    header: str | None
    lines: list[str]


def hunks(summary: str) -> list[Hunk]:
    """A commit's summary (``git.read_commits``) cut back into its files' hunks."""
    out: list[Hunk] = []
    path: str | None = None
    current: Hunk | None = None
    for line in summary.split("\n"):
        if line.startswith("@@"):
            current = Hunk(path=path or "", header=line, lines=[])
            out.append(current)
        elif line[:1] in ("+", "-") and current is not None:
            current.lines.append(line)
        else:  # a file's path (or ``path (binary)``)
            path = line[:-9] if line.endswith(" (binary)") else line
            current = None
            out.append(Hunk(path=path, header=None, lines=[]))
    with_hunks = {h.path for h in out if h.header is not None}
    return [h for h in out if h.header is not None or h.path not in with_hunks]


def stems(text: str) -> set[str]:
    return {stem(fold(w)) for w in _WORD.findall(text)}


def best_hunk(summary: str, query: str) -> tuple[Hunk, set[str]] | None:
    """The hunk holding most of the query's words (the first of equals), and those
    words; None when no hunk holds any."""
    wanted = stems(query)
    best: tuple[int, Hunk, set[str]] | None = None
    for hunk in hunks(summary):
        found = wanted & stems("\n".join([hunk.path, hunk.header or "", *hunk.lines]))
        if found and (best is None or len(found) > best[0]):
            best = (len(found), hunk, found)
    return None if best is None else (best[1], best[2])


def marked(line: str, found: set[str]) -> str:
    """``line`` with the words whose stems are in ``found`` marked ``**...**``."""
    return _WORD.sub(lambda m: f"**{m.group(0)}**" if stem(fold(m.group(0))) in found
                     else m.group(0), line)


def shown(hunk: Hunk, found: set[str]) -> str:
    """A hunk's lines as a hit shows them: those holding the words first in their order,
    at most ``MATCH_LINES``."""
    holding = [ln for ln in hunk.lines if stems(ln) & found]
    lines = (holding or hunk.lines)[:MATCH_LINES]
    return "\n".join(marked(ln, found) for ln in lines)
