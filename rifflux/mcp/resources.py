"""Notes as MCP resources: each indexed file is ``rifflux://FOLDER/PATH`` (``FOLDER`` the
indexed folder's name, ``PATH`` the note's path in it, percent-encoded), text/markdown.

- ``resources/list`` gives the notes changed most recently, newest first, 100 a page
  (``RESOURCE_PAGE``) and at most ``MAX_LIMIT`` (1,000) in all: a client attaches
  notes from it, and reads any other through the template.
- ``resources/templates/list`` gives that template, ``rifflux://{folder}/{+path}``.
- ``resources/read`` gives the note's text as it is on disk now, within a budget
  (``DEFAULT_MAX_CHARS`` characters, whole lines): a note longer than that ends with a
  line saying where it stopped and the URI that reads on (``?start_line=N``; also
  ``max_chars=N``), which ``_meta`` gives too (``next_start_line``, ``next_uri``).

The reads are the library's (``Rifflux.recent``, ``roots``, ``get_file``); errors are
JSON-RPC errors whose message says what to give.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

import anyio
from mcp.server import MCPServer
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    Annotations,
    EmptyResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    SubscribeRequestParams,
    TextResourceContents,
    UnsubscribeRequestParams,
)

from ..api import Rifflux
from ..errors import RiffluxError
from ..limits import DEFAULT_MAX_CHARS, MAX_LIMIT, MAX_MAX_CHARS, MIN_MAX_CHARS, RESOURCE_PAGE
from ..types import FileLines
from . import sdk
from .searching import ServerState

__all__ = ["MIME", "SCHEME", "TEMPLATE", "NoteRef", "list_notes", "note_uri", "parse_uri",
           "read_note", "root_names", "serve_resources", "templates"]

SCHEME = "rifflux"
TEMPLATE = "rifflux://{folder}/{+path}"
MIME = "text/markdown"


@dataclass(frozen=True, slots=True)
class NoteRef:
    """What a note's URI names: the folder's name, the path in it, and how to read."""

    folder: str
    path: str
    start_line: int = 1
    max_chars: int = DEFAULT_MAX_CHARS


def root_names(roots: Sequence[str]) -> dict[str, str]:
    """Each indexed folder by the name its URIs use: its last part; a folder whose name
    an earlier one has is told apart by its path's digest (``notes-3f9a0c``)."""
    names: dict[str, str] = {}
    for root in roots:
        name = Path(root).name or "root"
        if name in names:
            name = f"{name}-{hashlib.sha256(root.encode()).hexdigest()[:6]}"
        names[name] = root
    return names


def note_uri(folder: str, path: str, start_line: int | None = None) -> str:
    uri = f"{SCHEME}://{quote(folder, safe='')}/{quote(path, safe='/')}"
    return uri if start_line is None or start_line <= 1 else f"{uri}?start_line={start_line}"


def parse_uri(uri: str) -> NoteRef:
    """The note a URI names; a URI that names none is an error saying what to give."""
    parts = urlsplit(uri)
    path = unquote(parts.path.lstrip("/"))
    if parts.scheme != SCHEME or not parts.netloc or not path:
        raise _invalid(f"{uri!r} is not a note's URI: give rifflux://FOLDER/PATH (as "
                       "resources/list gives them; FOLDER is an indexed folder's name)")
    asked = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = set(asked) - {"start_line", "max_chars"}
    if unknown:
        raise _invalid(f"{uri!r}: a note's URI takes start_line and max_chars, not "
                       f"{', '.join(sorted(unknown))}")
    try:
        start = int(asked.get("start_line", "1"))
        budget = int(asked.get("max_chars", str(DEFAULT_MAX_CHARS)))
    except ValueError:
        raise _invalid(f"{uri!r}: start_line and max_chars are whole numbers") from None
    if start < 1 or not MIN_MAX_CHARS <= budget <= MAX_MAX_CHARS:
        raise _invalid(f"{uri!r}: start_line is 1 or more, max_chars from {MIN_MAX_CHARS:,} "
                       f"to {MAX_MAX_CHARS:,}")
    return NoteRef(unquote(parts.netloc), path, start, budget)


def _invalid(message: str, uri: str | None = None) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message,
                    data={"uri": uri} if uri else None)


def templates() -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(resource_templates=[ResourceTemplate(
        name="note", title="A note, by its path", uri_template=TEMPLATE, mime_type=MIME,
        description="Any indexed note: FOLDER is the indexed folder's name (as "
                    "resources/list gives it), PATH the note's path in it; add "
                    "?start_line=N to read from line N.")])


# ---------------------------------------------------------------- listing


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"rifflux:{offset}".encode()).decode()


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor.encode()).decode()
        offset = int(raw.removeprefix("rifflux:")) if raw.startswith("rifflux:") else -1
    except (ValueError, binascii.Error, UnicodeDecodeError):
        offset = -1
    if not 0 <= offset < MAX_LIMIT:
        raise _invalid(f"the cursor {cursor!r} is not one this server gave: list again "
                       "without a cursor")
    return offset


async def list_notes(rf: Rifflux, cursor: str | None) -> ListResourcesResult:
    """A page of the notes changed most recently, newest first."""
    offset = _offset(cursor)
    try:
        recent = await rf.recent(MAX_LIMIT)
        names = {root: name for name, root in root_names(await rf.roots()).items()}
    except RiffluxError as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from exc
    page = recent[offset:offset + RESOURCE_PAGE]
    sizes = await anyio.to_thread.run_sync(
        _sizes, [os.path.join(note["root"], note["path"]) for note in page])
    resources = [Resource(
        uri=note_uri(names.get(note["root"], Path(note["root"]).name), note["path"]),
        name=f"{names.get(note['root'], Path(note['root']).name)}/{note['path']}",
        title=note["title"], mime_type=MIME, size=size,
        annotations=Annotations(last_modified=note["modified"]))
        for note, size in zip(page, sizes, strict=True)]
    more = offset + RESOURCE_PAGE
    return ListResourcesResult(resources=resources,
                               next_cursor=_cursor(more) if more < len(recent) else None)


def _sizes(paths: list[str]) -> list[int | None]:
    out: list[int | None] = []
    for path in paths:
        try:
            out.append(os.stat(path).st_size)
        except OSError:
            out.append(None)
    return out


# ---------------------------------------------------------------- reading


async def read_note(rf: Rifflux, uri: str) -> ReadResourceResult:
    """The note's text from its start line, within its budget, with how to read on."""
    ref = parse_uri(uri)
    try:
        names = root_names(await rf.roots())
        root = names.get(ref.folder)
        if root is None:
            raise _invalid(f"no indexed folder is named {ref.folder!r} (they are "
                           f"{', '.join(sorted(names)) or 'none yet'}): give one of those, "
                           "as resources/list names them", uri)
        found = await rf.get_file(ref.path, root=root, start_line=ref.start_line)
    except RiffluxError as exc:
        raise _invalid(str(exc), uri) from exc
    if found is None or "text" not in found:
        raise _invalid(f"{ref.path!r} is not a note in {ref.folder} (not indexed, or gone): "
                       "resources/list and search_rifflux give the notes' paths", uri)
    text, meta = _within(found, ref)
    return ReadResourceResult(contents=[TextResourceContents(
        uri=uri, mime_type=MIME, text=text, _meta=meta)])


def _within(found: FileLines, ref: NoteRef) -> tuple[str, dict[str, Any]]:
    """The lines read, whole, up to the budget (a first line longer than it is cut), and
    what says where they stop."""
    lines = found["text"].split("\n")
    used, kept = 0, 0
    for line in lines:
        used += len(line) + 1
        if used > ref.max_chars + 1:
            break
        kept += 1
    meta: dict[str, Any] = {"start_line": found["start_line"], "total_lines":
                            found["total_lines"], "sha256": found.get("sha256")}
    if found.get("changed_since_indexed"):
        meta["changed_since_indexed"] = True
    if kept == len(lines):
        meta["end_line"] = found["end_line"]
        return found["text"], meta
    if kept == 0:  # one line longer than the budget
        text = lines[0][:ref.max_chars] + f"…[+{len(lines[0]) - ref.max_chars} chars]"
        kept = 1
    else:
        text = "\n".join(lines[:kept])
    end = found["start_line"] + kept - 1
    meta["end_line"] = end
    if end >= found["total_lines"]:
        return text, meta
    next_uri = note_uri(ref.folder, ref.path, end + 1) + (
        f"&max_chars={ref.max_chars}" if ref.max_chars != DEFAULT_MAX_CHARS else "")
    if "?" not in next_uri:  # (start_line 1 is never next; max_chars alone)
        next_uri = next_uri.replace("&", "?", 1)
    meta.update(truncated=True, next_start_line=end + 1, next_uri=next_uri)
    said = (f"\n…[lines {found['start_line']}-{end} of {found['total_lines']}, cut to fit "
            f"{ref.max_chars:,} characters: read on with {next_uri}]")
    return text + said, meta


# ---------------------------------------------------------------- the handlers

Ctx = ServerRequestContext[ServerState, Any]


def _state(ctx: Ctx) -> ServerState:
    state = ctx.lifespan_context
    if state.opened is None:  # (the index could not open: every answer says why)
        raise MCPError(code=INVALID_PARAMS, message=state.open_error or "the index is not open")
    return state


def serve_resources(server: MCPServer[ServerState]) -> None:
    """Answer the resources' methods from the index (and subscriptions, ``NoteWatch``)."""

    async def listing(ctx: Ctx, params: PaginatedRequestParams) -> ListResourcesResult:
        return await list_notes(_state(ctx).rf, params.cursor)

    async def listing_templates(ctx: Ctx, params: PaginatedRequestParams
                                ) -> ListResourceTemplatesResult:
        return templates()

    async def reading(ctx: Ctx, params: ReadResourceRequestParams) -> ReadResourceResult:
        return await read_note(_state(ctx).rf, params.uri)

    async def subscribing(ctx: Ctx, params: SubscribeRequestParams) -> EmptyResult:
        watch = _state(ctx).watch
        if watch is not None:
            await watch.subscribe(sdk.connection_of(ctx.session), params.uri)
        return EmptyResult()

    async def unsubscribing(ctx: Ctx, params: UnsubscribeRequestParams) -> EmptyResult:
        watch = _state(ctx).watch
        if watch is not None:
            watch.unsubscribe(sdk.connection_of(ctx.session), params.uri)
        return EmptyResult()

    sdk.handle(server, "resources/list", PaginatedRequestParams, listing)
    sdk.handle(server, "resources/templates/list", PaginatedRequestParams, listing_templates)
    sdk.handle(server, "resources/read", ReadResourceRequestParams, reading)
    sdk.handle(server, "resources/subscribe", SubscribeRequestParams, subscribing)
    sdk.handle(server, "resources/unsubscribe", UnsubscribeRequestParams, unsubscribing)
