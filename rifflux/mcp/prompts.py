"""The prompts a client shows as commands (``/rifflux:search-notes``, ...): each takes its
arguments, calls the tool that answers them (the tool's own function, on the server's
state) and gives the model the answer with what to do with it.

- ``search-notes`` (query, folder): search_rifflux's first look (snippets, one hit a note);
- ``recent-changes`` (since, folder): recent's notes, newest first;
- ``backlinks`` (path, folder): get_links' backlinks of a note.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from pydantic import Field

from ..errors import RiffluxError
from . import searching
from .answers import links_answer
from .searching import ServerState

__all__ = ["PROMPTS"]

Folder = Annotated[str | None, Field(
    description="Only this indexed folder (its path, or its name); leave empty for all")]

#: What a prompt gives of an answer, at most (its JSON text).
_PROMPT_CHARS = 20_000


def _state(ctx: Context[ServerState, Any]) -> ServerState:
    return ctx.request_context.lifespan_context


def _json(answer: Any) -> str:
    return "```json\n" + json.dumps(answer, ensure_ascii=False, indent=1) + "\n```"


def _failed(exc: RiffluxError) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=str(exc))


async def search_notes(
    ctx: Context[ServerState, Any],
    query: Annotated[str, Field(description="What to look for: words, a name, a question")],
    folder: Folder = None,
) -> UserMessage:
    """Search my notes for something, then read the best hits and answer from them."""
    try:
        answer = await searching.search(_state(ctx), query, 8, "hybrid", root=folder or None,
                                        content="snippet", max_per_file=1,
                                        max_chars=_PROMPT_CHARS)
    except RiffluxError as exc:
        raise _failed(exc) from exc
    return UserMessage(
        f"Search my notes for: {query}\n\nsearch_rifflux found these (a first look: one "
        f"snippet per note, best first):\n{_json(answer)}\n\nRead the hits that answer it "
        "with get_chunk (a hit's chunk_id) or get_file (its path, root and lines), then "
        "answer from what my notes say, citing path:line_start-line_end. If none answers "
        "it, search again with other words, or mode='lexical' for exact names.")


async def recent_changes(
    ctx: Context[ServerState, Any],
    since: Annotated[str, Field(description="How far back: 7d, 2w, 3m, or a date")] = "7d",
    folder: Folder = None,
) -> UserMessage:
    """What changed recently in my notes (or in one folder), summarised."""
    try:
        notes = await _state(ctx).rf.recent(50, since or "7d", root=folder or None)
    except RiffluxError as exc:
        raise _failed(exc) from exc
    where = f"in {folder}" if folder else "in my notes"
    if not notes:
        return UserMessage(f"What changed recently {where} (since {since})? recent found no "
                           "note changed since then: say so, and offer to look further back.")
    return UserMessage(
        f"What changed recently {where} (since {since})? recent found these notes, newest "
        f"first:\n{_json({'count': len(notes), 'notes': notes})}\n\nSummarise what each is "
        "about and what changed, reading a note with get_file (its path and root) where its "
        "title does not say enough; group related notes together.")


async def backlinks(
    ctx: Context[ServerState, Any],
    path: Annotated[str, Field(description="The note, as search_rifflux gives its path")],
    folder: Folder = None,
) -> UserMessage:
    """What links to this note, and what those notes say about it."""
    try:
        found = await _state(ctx).rf.links(path, root=folder or None)
    except RiffluxError as exc:
        raise _failed(exc) from exc
    answer = links_answer(found, 100, _PROMPT_CHARS)
    answer.pop("outgoing", None)
    answer.pop("unresolved", None)
    if not found["backlinks"]:
        return UserMessage(f"What links to {path}? get_links found no note linking to it. "
                           "Say so; get_neighbors or a search for its title may find notes "
                           "that mention it without a link.")
    return UserMessage(
        f"What links to {path}? get_links found these backlinks (each with the linking "
        f"note, its line, heading and context):\n{_json(answer)}\n\nSay which notes link to "
        "it and what each says about it, citing path:line; read more of a linking note with "
        "get_file where its context line is not enough.")


PROMPTS = (
    Prompt.from_function(search_notes, name="search-notes", title="Search my notes"),
    Prompt.from_function(recent_changes, name="recent-changes", title="What changed recently"),
    Prompt.from_function(backlinks, name="backlinks", title="What links to this note"),
)
