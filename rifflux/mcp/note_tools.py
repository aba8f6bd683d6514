"""The MCP tools for notes: thin adapters over ``Rifflux``'s note operations.

``recent`` is always listed; the tools that write (``write_note``, ``edit_note``,
``move_note``, ``delete_note``, ``restore_note``) only when the server has a writable
folder (``--writable DIR``). As in ``params``, a description says when to use a tool or
an argument, in a few words (agents read the list in every session); the details are
in docs/CONTRACT.md ("Notes").
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from .searching import ServerState
from .tools import _state, _tool_errors

NotePath = Annotated[str, Field(
    min_length=1, description="Relative to the writable folder, ending in .md: 'adr/db.md'.")]
Content = Annotated[str, Field(description="The note's markdown text.")]
Title = Annotated[str | None, Field(description="A title for its front matter.")]
NoteTags = Annotated[list[str] | None, Field(description="Tags for its front matter, "
                                                         "one word each.")]
IfMatch = Annotated[str | None, Field(
    description="The sha256 you last read: a conflict, writing nothing, if it changed since.")]
Overwrite = Annotated[bool, Field(description="Replace an existing note (if_match is safer).")]
Folder = Annotated[str | None, Field(description="Which writable folder, when there are "
                                                 "several (path or name).")]
Addition = Annotated[str | None, Field(description="Text added as a block of its own.")]
Section = Annotated[dict[str, str] | None, Field(
    description="{\"heading\": its text or 'A > B', \"text\": the section's new text}.")]
Find = Annotated[str | None, Field(description="Exact text to replace; it must occur once "
                                               "unless replace_all.")]
Replace = Annotated[str | None, Field(description="What find becomes ('' deletes it).")]
ReplaceAll = Annotated[bool, Field(description="Replace every occurrence of find.")]
UpdateLinks = Annotated[bool, Field(description="Rewrite the links to it so they still "
                                                "find it.")]
Limit = Annotated[int, Field(ge=1, le=1000, description="How many (1 to 1000).")]
Since = Annotated[str | None, Field(description="Only those changed since a date or an age "
                                                "(7d).")]


async def write_note(ctx: Context[ServerState, Any], path: NotePath, content: Content,
                     title: Title = None, tags: NoteTags = None, if_match: IfMatch = None,
                     overwrite: Overwrite = False, folder: Folder = None) -> dict[str, Any]:
    """Record what you learned (a decision, a fix, a summary) as a markdown note in the
    writable folder; searchable when the call returns. The answer gives its sha256
    (your if_match for later changes), lines and whether it is found by meaning yet."""
    with _tool_errors():
        return dict(await _state(ctx).rf.write_note(
            path, content, title=title, tags=tags, if_match=if_match, overwrite=overwrite,
            folder=folder))


async def edit_note(ctx: Context[ServerState, Any], path: NotePath, append: Addition = None,
                    prepend: Addition = None, replace_section: Section = None,
                    find: Find = None, replace: Replace = None,
                    replace_all: ReplaceAll = False, if_match: IfMatch = None,
                    folder: Folder = None) -> dict[str, Any]:
    """Change one part of a note, the rest kept byte for byte: give one of append,
    prepend (after the front matter), replace_section, or find with replace. Pass
    if_match: a change made meanwhile by someone else is then a conflict (read the note
    again and redo the edit)."""
    section = None
    if replace_section is not None:
        if set(replace_section) != {"heading", "text"}:
            raise ToolError("replace_section is {\"heading\": the heading's text or "
                            "breadcrumb, \"text\": the section's new text}; call again so")
        section = (replace_section["heading"], replace_section["text"])
    with _tool_errors():
        return dict(await _state(ctx).rf.edit_note(
            path, append=append, prepend=prepend, replace_section=section, find=find,
            replace=replace, replace_all=replace_all, if_match=if_match, folder=folder))


async def move_note(ctx: Context[ServerState, Any], src: NotePath, dst: NotePath,
                    update_links: UpdateLinks = True, if_match: IfMatch = None,
                    folder: Folder = None) -> dict[str, Any]:
    """Move or rename a note in its writable folder; the [[wikilinks]] and markdown links
    to it in the folder's notes are rewritten (links_updated lists each). Refused when
    dst exists."""
    with _tool_errors():
        return dict(await _state(ctx).rf.move_note(src, dst, update_links=update_links,
                                                   if_match=if_match, folder=folder))


async def delete_note(ctx: Context[ServerState, Any], path: NotePath,
                      if_match: IfMatch = None, folder: Folder = None) -> dict[str, Any]:
    """Delete a note: it moves to .rifflux-trash/ in its folder (never searched) and
    leaves the index; restore_note brings it back."""
    with _tool_errors():
        return dict(await _state(ctx).rf.delete_note(path, if_match=if_match, folder=folder))


async def restore_note(ctx: Context[ServerState, Any], path: NotePath,
                       folder: Folder = None) -> dict[str, Any]:
    """Bring back the note last deleted at this path (refused when a note is there now)."""
    with _tool_errors():
        return dict(await _state(ctx).rf.restore_note(path, folder=folder))


async def recent(ctx: Context[ServerState, Any], limit: Limit = 20,
                 since: Since = None) -> dict[str, Any]:
    """The notes changed most recently, by anyone, newest first. Look here first in a
    new session."""
    with _tool_errors():
        notes = await _state(ctx).rf.recent(limit, since)
    return {"count": len(notes), "notes": notes}


#: The tools that write, listed only with a writable folder.
WRITE_TOOLS = (write_note, edit_note, move_note, delete_note, restore_note)
