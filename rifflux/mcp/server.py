"""The MCP stdio server: one ``Rifflux`` per process, owned by the server's lifespan.

The tools are in ``tools`` (their parameters, described for the client's model,
in ``params``); this module builds the server around them. stdout is the
protocol channel. Nothing here writes to it: logs go to stderr (configured by
the command line before the server starts), and while serving fd 1 points at
stderr (``_fast_start.front.Wire.claim``) so that stray output from libraries or child
processes cannot corrupt the wire.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, cast

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, Tool, ToolAnnotations
from pydantic import ValidationError

from ..api import Rifflux
from ..config import Settings
from ..errors import RiffluxError
from ..limits import MAX_TOP_K
from . import sdk
from .auto_reindex import AutoReindex
from .history_tools import HISTORY_TOOLS
from .instructions import BASE, NOTES, joined
from .note_tools import WRITE_TOOLS, recent
from .other_indexes import OtherIndexes
from .prompts import PROMPTS
from .resources import serve_resources
from .results import tool_error, tool_result, unexpected
from .schemas import tighten
from .searching import ServerState
from .subscriptions import NoteWatch
from .tools import (
    forget,
    get_chunk,
    get_file,
    get_links,
    get_neighbors,
    index_status,
    list_tags,
    reindex,
    reindex_many,
    search_rifflux,
)

__all__ = ["MAX_TOP_K", "SERVER_NAME", "RiffluxMCPServer", "ServerState", "build_server"]

logger = logging.getLogger(__name__)

SERVER_NAME = "rifflux"

_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                          open_world_hint=False)
_REMOVES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                           open_world_hint=False)
_EDITS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                         open_world_hint=False)
_CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                           open_world_hint=False)
_DESTRUCTIVE = frozenset({"write_note", "edit_note", "delete_note"})


# ---------------------------------------------------------------- server


class RiffluxMCPServer(MCPServer[ServerState]):
    """``MCPServer`` whose argument-validation errors read as instructions."""

    #: Whether the tools that write notes are listed (a writable folder is set).
    writes: bool = False

    async def call_tool(
        self, name: str, arguments: dict[str, Any],
        context: Context[ServerState, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """The tool's result, or its error, encoded as the front's early answers are
        (``results``): a failure the caller can fix in the tool's (or the library's) own
        words, arguments the schema refuses explained, anything unexpected logged here and
        answered as that call's error."""
        try:
            self._refuse_unknown(name, arguments)
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            logger.error("tool %s failed unexpectedly", name, exc_info=exc.__cause__ or exc)
            return _encoded(tool_error(unexpected(name, exc.__cause__ or exc)))
        except ToolError as exc:
            cause = exc.__cause__
            said = (_explain(name, cause) if isinstance(cause, ValidationError)
                    else str(cause) if isinstance(cause, ToolError) else str(exc))
            return _encoded(tool_error(said))
        if isinstance(result, CallToolResult) and result.structured_content is not None:
            return _encoded(tool_result(result.structured_content))
        return result

    async def list_tools(self) -> list[Tool]:
        """The tools, published without an output schema: a result is its compact JSON
        text alone (``results.tool_result``), which an agent pays for once."""
        return [tool.model_copy(update={"output_schema": None})
                for tool in await super().list_tools()]

    def close_schema(self, name: str) -> None:
        """Publish that ``name`` takes no arguments beyond its own, in a schema as strict
        and shorter (``schemas.tighten``)."""
        schema = sdk.tool_input_schema(self, name)
        if schema is not None:
            tighten(schema)
            schema["additionalProperties"] = False

    def _refuse_unknown(self, name: str, arguments: dict[str, Any]) -> None:
        """An argument the tool does not take is an error, not ignored: a misspelt filter
        (``tag`` for ``tags``) would otherwise widen the search without a word."""
        schema = sdk.tool_input_schema(self, name)
        if schema is None:
            return  # an unknown tool: the SDK says so
        known = list(schema.get("properties", {}))
        unknown = [key for key in arguments if key not in known]
        if not unknown:
            return
        problems = []
        for key in unknown:
            close = difflib.get_close_matches(key, known, n=1)
            problems.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ToolError(f"{name} takes no argument {', '.join(problems)}; it takes "
                        f"{', '.join(known)}. Call again with those names.")


def _encoded(result: dict[str, Any]) -> CallToolResult:
    return CallToolResult.model_validate(result, by_name=False)


def _explain(tool: str, exc: ValidationError) -> str:
    # A value that fits no member of a union fails once per member, each error located
    # at the member's name (frontmatter.k.str, frontmatter.k.int, ...): said once here.
    errors = exc.errors()
    by_parent: dict[tuple[int | str, ...], list[Any]] = {}
    for err in errors:
        by_parent.setdefault(err["loc"][:-1], []).append(err)
    problems = []
    said: set[tuple[int | str, ...]] = set()
    for err in errors:
        loc, parent = err["loc"], err["loc"][:-1]
        got = repr(err.get("input"))
        got = got if len(got) <= 60 else got[:57] + "..."
        siblings = by_parent[parent]
        union = (len(loc) > 1 and len(siblings) > 1
                 and len({e["msg"] for e in siblings}) == len(siblings))
        if err["type"] == "missing":
            problems.append(f"{'.'.join(map(str, loc)) or 'arguments'} is required")
        elif union:
            if parent not in said:
                said.add(parent)
                wanted = [e["msg"].removeprefix("Input should be ") for e in siblings]
                problems.append(f"{'.'.join(map(str, parent))} should be "
                                f"{', '.join(wanted[:-1])} or {wanted[-1]} (got {got})")
        else:
            problems.append(f"{'.'.join(map(str, loc)) or 'arguments'}: {err['msg']} "
                            f"(got {got})")
    return (f"invalid arguments for {tool}: {'; '.join(problems)}. "
            "Fix them as the tool's input schema says and call again.")


def build_server(
    settings: Settings, *, on_open: Callable[[], object] | None = None,
    open_index: Callable[[Settings], Rifflux] | None = None,
    rifflux: Rifflux | None = None, auto_reindex: AutoReindex | None = None,
    others: OtherIndexes | None = None, folders: str | Callable[[], str] | None = None,
) -> RiffluxMCPServer:
    """The server, for every transport; its lifespan opens ``Rifflux`` (and the watcher,
    if watch paths are set), or serves ``rifflux``, an instance the caller has open and
    closes (``rifflux serve``: one instance behind MCP, the JSON API and the page).

    Opening is quick: the embedding model loads in a worker thread meanwhile, so
    the handshake is answered at once and searches wait for the model only if
    they need it. ``on_open`` is called once the index is open, just before the
    server starts reading requests. ``open_index`` opens the other index files
    searched by ``db_path`` (``OtherIndexes``; ``Rifflux`` by default). ``auto_reindex``
    and ``others``: the throttle of reindexing on search and the other indexes that the
    searches answered before the SDK used (the caller closes ``others``). ``folders``:
    the line of the instructions that names the indexed folders (as the front said it,
    ``instructions.folders_line``; None: no such line), or how to read it again for each
    client's ``initialize`` (``rifflux serve``, which runs for days: each session is
    told the folders as they are when it starts).

    Notes are resources (``resources``: listed, read, subscribed to: ``subscriptions``)
    and three prompts call the tools for a person's command (``prompts``).
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        started = time.perf_counter()
        async with contextlib.AsyncExitStack() as stack:
            if others is None:
                kept = await stack.enter_async_context(
                    OtherIndexes(settings, open_index=open_index))
            else:
                kept = others
            broken: ServerState | None
            try:
                rf = (rifflux if rifflux is not None
                      else await stack.enter_async_context(Rifflux(settings=settings)))
            except RiffluxError as exc:
                # The client sees nothing of stderr: every tool answers with this
                # instead, and the server stays up so that it can.
                logger.error("cannot open the index %s: %s", settings.db_path, exc)
                broken = ServerState(
                    opened=None, settings=settings, auto_reindex=None, others=kept,
                    open_error=(f"the Rifflux MCP server could not open its index: {exc} "
                                "(these are the server's settings, in the MCP client's "
                                "configuration; restart the server after changing them)"))
            else:
                broken = None
            if broken is not None:
                if on_open is not None:
                    on_open()
                yield broken
                return
            logger.info("rifflux index %s open in %.0f ms (cwd %s, watching %s)",
                        settings.db_path, (time.perf_counter() - started) * 1000, os.getcwd(),
                        ", ".join(map(str, settings.watch_paths)) or "nothing")
            auto = auto_reindex or AutoReindex(
                rf=rf, enabled=settings.auto_reindex_on_search,
                min_interval=settings.auto_reindex_min_interval,
                watch_paths=settings.watch_paths)
            watch = await stack.enter_async_context(NoteWatch(rf))
            if on_open is not None:
                on_open()
            yield ServerState(opened=rf, settings=settings, auto_reindex=auto, others=kept,
                              watch=watch)

    writes = bool(settings.writable)  # the note tools that write are listed only then
    base = BASE + (NOTES if writes else "")
    told = _Instructions(base, folders) if callable(folders) else None
    server = RiffluxMCPServer(SERVER_NAME, instructions=joined(
        base, folders if isinstance(folders, str) else None),
        version=_version(), lifespan=lifespan, log_level=_sdk_level(settings.log_level),
        middleware=[told] if told else None)
    if told is not None:
        told.server = server
    server.writes = writes
    tools: list[tuple[Callable[..., Any], ToolAnnotations]] = [
        (search_rifflux, _READS), (index_status, _READS), (get_chunk, _READS),
        (get_file, _READS), (get_links, _READS), (get_neighbors, _READS),
        (list_tags, _READS), (reindex, _WRITES), (reindex_many, _WRITES),
        (forget, _REMOVES), (recent, _READS),
        *((tool, _READS) for tool in HISTORY_TOOLS)]
    if writes:  # (overwriting, editing and deleting destroy what was there; not moving)
        tools += [(tool, _CHANGES if tool.__name__ in _DESTRUCTIVE else _EDITS)
                  for tool in WRITE_TOOLS]
    for tool, hints in tools:
        server.add_tool(tool, description=" ".join((tool.__doc__ or "").split()),
                        annotations=hints)
        server.close_schema(tool.__name__)
    serve_resources(server)
    for prompt in PROMPTS:
        server.add_prompt(prompt)
    return server


class _Instructions:
    """Middleware: before each ``initialize``, the instructions with the folders as they
    are now."""

    server: RiffluxMCPServer | None = None

    def __init__(self, base: str, folders: Callable[[], str]) -> None:
        self._base, self._folders = base, folders

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "initialize" and self.server is not None:
            line = await anyio.to_thread.run_sync(self._folders)
            sdk.set_instructions(self.server, joined(self._base, line))
        return await call_next(ctx)


def _sdk_level(level: str) -> Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]:
    return cast(Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                level.upper())  # (one of them: Settings checks it)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rifflux")
    except PackageNotFoundError:
        return "0"
