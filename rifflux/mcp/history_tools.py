"""The MCP tools of the git history, two (the tool list stays light): ``search_history``
over ``Rifflux.search_history``, and ``get_history`` over ``history`` (a file's
commits, or its lines') and ``show_commit`` (one commit); each answer within its
budget. As in ``params``, a description says when to use a tool or an argument, in a
few words; the details are in docs/CONTRACT.md ("History")."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from ..answers.budget import Shaped, fit_texts, within
from ..limits import DEFAULT_MAX_CHARS
from .answers import fit_lists
from .params import EndLine, MaxChars, Query, SearchMode, StartLine, TopK
from .searching import ServerState
from .tools import _state, _tool_errors

HistoryPaths = Annotated[list[str] | None, Field(
    description="Only commits changing these paths.")]
Author = Annotated[str | None, Field(description="Only commits by this name or email (part).")]
Since = Annotated[str | None, Field(description="Only commits since: 2026-11-01, or 7d.")]
Before = Annotated[str | None, Field(description="Only commits before it.")]
Repo = Annotated[str | None, Field(description="Only this repository (folder or name).")]
HistoryPath = Annotated[str | None, Field(description="A file (a hit's path): its commits.")]
Commit = Annotated[str | None, Field(description="Or one commit: its hash (a hit's short).")]


async def search_history(
    ctx: Context[ServerState, Any], query: Query, top_k: TopK = 10,
    mode: SearchMode = "hybrid", paths: HistoryPaths = None, author: Author = None,
    since: Since = None, before: Before = None, repo: Repo = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> dict[str, Any]:
    """Search the git history of the indexed folders when asked when, why or by whom
    something changed; search_rifflux finds what is written now. Hits give hash, title,
    author, date, paths, best hunk; read one with get_history(commit)."""
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


async def get_history(ctx: Context[ServerState, Any], path: HistoryPath = None,
                      start_line: StartLine = None, end_line: EndLine = None,
                      commit: Commit = None,
                      max_chars: MaxChars = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """Why a file reads as it does: the commits that changed it (following renames), or
    with start_line/end_line (a hit's lines) those that last changed the lines, as git
    blame; or one commit whole: message, paths, change."""
    if (path is None) == (commit is None):
        raise ToolError("give path (a file's history) or commit (one commit), one of them")
    rf = _state(ctx).rf
    if commit is not None:
        with _tool_errors():
            shown = await rf.show_commit(commit)

        def shape_commit(out: dict[str, Any], budget: int) -> Shaped:
            if not fit_texts(out, [(out, "change"), (out, "body")], budget):
                return Shaped(out)
            return Shaped(out, cut=True, hints=[
                f"the change was cut to fit max_chars={max_chars}: ask with a larger "
                "max_chars"])

        return within(shape_commit, dict(shown), max_chars)
    assert path is not None
    with _tool_errors():
        found = await rf.history(path, start_line, end_line)
    answer: dict[str, Any] = {**found, "count": len(found["commits"])}

    def shape(out: dict[str, Any], budget: int) -> Shaped:
        fit_lists(out, ["commits"], budget)
        if len(out["commits"]) == out["count"]:
            return Shaped(out)
        return Shaped(out, cut=True, hints=[
            f"older commits were left out to fit max_chars={max_chars}: ask with a larger "
            "max_chars, or for a range of lines"])

    return within(shape, answer, max_chars)


HISTORY_TOOLS = (search_history, get_history)
