"""The MCP tools of the git history: thin adapters over ``Rifflux.search_history``,
``show_commit`` and ``history``, each answer within its budget. As in ``params``, a
description says when to use a tool or an argument, in a few words; the details are in
docs/CONTRACT.md ("History")."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from ..answers.budget import Shaped, fit_texts, within
from ..limits import DEFAULT_MAX_CHARS
from .answers import fit_lists
from .params import EndLine, FilePath, MaxChars, Query, SearchMode, StartLine, TopK
from .searching import ServerState
from .tools import _state, _tool_errors

HistoryPaths = Annotated[list[str] | None, Field(
    description="Only commits that changed these files or folders (a hit's path).")]
Author = Annotated[str | None, Field(description="Only commits whose author's name or "
                                                 "email holds this.")]
Since = Annotated[str | None, Field(
    description="Only commits made since: 2026-11-01, or an age: 7d, 2w, 3m, 1y.")]
Before = Annotated[str | None, Field(description="Only commits made before it.")]
Repo = Annotated[str | None, Field(description="Only this repository (its folder or name).")]
Commit = Annotated[str, Field(min_length=4, max_length=40,
                              description="A commit's hash, or its first digits (a hit's "
                                          "short).")]


async def search_history(
    ctx: Context[ServerState, Any], query: Query, top_k: TopK = 10,
    mode: SearchMode = "hybrid", paths: HistoryPaths = None, author: Author = None,
    since: Since = None, before: Before = None, repo: Repo = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> dict[str, Any]:
    """Search the git history of the indexed folders (commit messages, changed paths,
    diffs) when the question is when, why or by whom something changed; search_rifflux
    answers what is written now. Hits give hash, title, author, date, paths and the
    matching hunk; read one with get_commit. To see why a search hit's lines are as they
    are: get_history(path, start_line, end_line)."""
    with _tool_errors():
        found = await _state(ctx).rf.search_history(
            query, top_k=top_k, mode=mode, paths=paths, author=author, since=since,
            before=before, repo=repo)
    answer: dict[str, Any] = {"query": query, "count": len(found["results"]), **found}

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        fit_lists(out, ["results"], budget)
        if len(out["results"]) == out["count"]:
            return Shaped(out)
        return Shaped(out, cut=True, hints=[
            f"{out['count'] - len(out['results'])} hits were left out to fit "
            f"max_chars={max_chars}: ask for fewer (top_k) or a larger max_chars"])

    return within(shape, answer, max_chars)


async def get_commit(ctx: Context[ServerState, Any], commit: Commit,
                     max_chars: MaxChars = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """Read one commit of the history: its message, the paths it changed and its
    change (hunks, lines added and removed)."""
    with _tool_errors():
        found = await _state(ctx).rf.show_commit(commit)

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        if not fit_texts(out, [(out, "change"), (out, "body")], budget):
            return Shaped(out)
        return Shaped(out, cut=True, hints=[
            f"the change was cut to fit max_chars={max_chars}: ask with a larger max_chars"])

    return within(shape, dict(found), max_chars)


async def get_history(ctx: Context[ServerState, Any], path: FilePath,
                      start_line: StartLine = None, end_line: EndLine = None,
                      max_chars: MaxChars = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """The commits that changed an indexed file, newest first, following renames; with
    start_line (and end_line, e.g. a search hit's lines), the commits that last changed
    those lines, as git blame."""
    with _tool_errors():
        found = await _state(ctx).rf.history(path, start_line, end_line)
    answer: dict[str, Any] = {**found, "count": len(found["commits"])}

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        fit_lists(out, ["commits"], budget)
        if len(out["commits"]) == out["count"]:
            return Shaped(out)
        return Shaped(out, cut=True, hints=[
            f"older commits were left out to fit max_chars={max_chars}: ask with a larger "
            "max_chars, or for a range of lines"])

    return within(shape, answer, max_chars)


HISTORY_TOOLS = (search_history, get_commit, get_history)
