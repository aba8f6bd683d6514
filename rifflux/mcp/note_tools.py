"""The MCP tools for notes: thin adapters over ``Rifflux``'s note operations.

``recent`` is always listed; the tools that write (``write_note``, ``edit_note``,
``move_note``, ``delete_note``, ``restore_note``) only when the server has a writable
folder (``--writable DIR``). Their parameters are described here for the client's model.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, ConfigDict, Field

from .tools import ServerState, _state, _tool_errors

NotePath = Annotated[str, Field(
    min_length=1, description="The note's path relative to the writable folder, ending in "
                              ".md, e.g. 'decisions/2026-11-22-database.md' (folders are "
                              "made as needed).")]
Content = Annotated[str, Field(description="The note's markdown text.")]
Title = Annotated[str | None, Field(
    description="A title, written into the note's front matter (title:).")]
NoteTags = Annotated[list[str] | None, Field(
    description="Tags, added to the note's front matter (tags:), e.g. ['decision', "
                "'database']; one word each.")]
IfMatch = Annotated[str | None, Field(
    description="The sha256 of the note as you last read it (from a write or edit answer, "
                "or get_file with a line range): the call fails with a conflict, writing "
                "nothing, if the note changed since (a person or another agent edited it).")]
Overwrite = Annotated[bool, Field(
    description="Replace the note if it exists (otherwise an existing note is a conflict; "
                "prefer if_match, which replaces only the version you read).")]
Folder = Annotated[str | None, Field(
    description="Which writable folder (its path or name), when the server has several; "
                "default the first (for an existing note: the first that holds it).")]
Addition = Annotated[str | None, Field(
    description="Text added as a block of its own (a blank line apart from its "
                "neighbours).")]
Find = Annotated[str | None, Field(
    description="Exact text to replace (it must occur once, unless replace_all); an error "
                "says where it is when it occurs more than once or not at all.")]
Replace = Annotated[str | None, Field(description="The text put in place of find ('' deletes "
                                                  "it).")]
ReplaceAll = Annotated[bool, Field(description="Replace every occurrence of find.")]
UpdateLinks = Annotated[bool, Field(
    description="Rewrite the [[wikilinks]] and markdown links to the note in the folder's "
                "notes (and the note's own relative links) so that they still find it.")]
Limit = Annotated[int, Field(ge=1, le=1000, description="How many notes to list (1 to 1000).")]
Since = Annotated[str | None, Field(
    description="Only notes changed at or after this time: an ISO date or datetime "
                "(2026-11-01) or an age: 7d, 2w, 3m, 1y.")]
RecentRoot = Annotated[str | None, Field(
    description="Only notes under this indexed folder (its path, or its name when unique).")]


class SectionReplacement(BaseModel):
    """Which section, and its new text."""

    model_config = ConfigDict(extra="forbid")

    heading: str = Field(description="The heading's text ('Decisions' or '## Decisions'), or "
                                     "its breadcrumb ('Project > Decisions') when several "
                                     "share it.")
    text: str = Field(description="The section's new text (under the heading, up to the "
                                  "next heading of its level or higher; the heading line "
                                  "stays).")


async def write_note(ctx: Context[ServerState, Any], path: NotePath, content: Content,
                     title: Title = None, tags: NoteTags = None, if_match: IfMatch = None,
                     overwrite: Overwrite = False, folder: Folder = None) -> dict[str, Any]:
    """Create a markdown note in the writable folder: a decision, a fix, a meeting
    summary, anything worth finding in a later session. It is searchable when this call
    returns (search_rifflux finds its words at once; vector_stored says whether it is
    found by meaning yet). The answer gives its path, sha256 (pass it as if_match to
    change the note later) and lines. An existing note is not replaced unless overwrite
    or if_match says so."""
    with _tool_errors():
        return dict(await _state(ctx).rf.write_note(
            path, content, title=title, tags=tags, if_match=if_match, overwrite=overwrite,
            folder=folder))


async def edit_note(ctx: Context[ServerState, Any], path: NotePath, append: Addition = None,
                    prepend: Addition = None,
                    replace_section: SectionReplacement | None = None,
                    find: Find = None, replace: Replace = None,
                    replace_all: ReplaceAll = False, if_match: IfMatch = None,
                    folder: Folder = None) -> dict[str, Any]:
    """Edit one part of a note in the writable folder, keeping the rest byte for byte
    (front matter, line endings, encoding). Give exactly one of: append (at the end),
    prepend (at the top, after the front matter), replace_section ({heading, text}), or
    find with replace. Pass if_match (the sha256 you last read) so that a change made
    meanwhile by a person or another agent is a conflict instead of being overwritten:
    then read the note again and redo the edit. Searchable when the call returns."""
    section = None if replace_section is None else (replace_section.heading,
                                                    replace_section.text)
    with _tool_errors():
        return dict(await _state(ctx).rf.edit_note(
            path, append=append, prepend=prepend, replace_section=section, find=find,
            replace=replace, replace_all=replace_all, if_match=if_match, folder=folder))


async def move_note(ctx: Context[ServerState, Any], src: NotePath, dst: NotePath,
                    update_links: UpdateLinks = True, if_match: IfMatch = None,
                    folder: Folder = None) -> dict[str, Any]:
    """Move or rename a note within its writable folder. The links to it in the folder's
    notes ([[Name]], [[Name#Heading]], [[Name|alias]], ![[Name]], [text](dir/Name.md))
    are rewritten to its new path (links_updated lists each); links in code are left
    alone. Refused when dst exists."""
    with _tool_errors():
        return dict(await _state(ctx).rf.move_note(src, dst, update_links=update_links,
                                                   if_match=if_match, folder=folder))


async def delete_note(ctx: Context[ServerState, Any], path: NotePath,
                      if_match: IfMatch = None, folder: Folder = None) -> dict[str, Any]:
    """Delete a note: it moves to .rifflux-trash/ in its writable folder (never searched)
    and leaves the index; restore_note brings it back."""
    with _tool_errors():
        return dict(await _state(ctx).rf.delete_note(path, if_match=if_match, folder=folder))


async def restore_note(ctx: Context[ServerState, Any], path: NotePath,
                       folder: Folder = None) -> dict[str, Any]:
    """Bring back the note last deleted at this path (refused when a note is there now)."""
    with _tool_errors():
        return dict(await _state(ctx).rf.restore_note(path, folder=folder))


async def recent(ctx: Context[ServerState, Any], limit: Limit = 20, since: Since = None,
                 root: RecentRoot = None) -> dict[str, Any]:
    """List the notes changed most recently, by anyone (the user, other agents, you),
    newest first, each with its path, title, tags and time. Look here first when a
    session starts, to pick up where the work was left."""
    with _tool_errors():
        notes = await _state(ctx).rf.recent(limit, since, root=root)
    return {"count": len(notes), "notes": notes}


#: The tools that write, listed only with a writable folder.
WRITE_TOOLS = (write_note, edit_note, move_note, delete_note, restore_note)
