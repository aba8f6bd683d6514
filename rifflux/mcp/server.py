"""The MCP stdio server: one ``Rifflux`` per process, owned by the server's lifespan.

Each tool is a thin adapter over the library: it validates nothing the input
schema already declares (the SDK checks arguments against it), calls one
``Rifflux`` method and shapes the answer per SPEC.md. Failures the caller can
fix come back as tool error results (``isError``) whose message says what to do;
the server keeps serving.

stdout is the protocol channel. Nothing here writes to it: logs go to stderr
(configured by the command line before the server starts), and while serving
fd 1 points at stderr (``front.Wire.claim``) so that stray output from
libraries or child processes cannot corrupt the wire.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError

from ..api import Rifflux
from ..config import Settings
from ..errors import RiffluxError
from ..types import FINISHED, ReindexResult, SearchAnswer, SearchResult
from .auto_reindex import AutoReindex

logger = logging.getLogger(__name__)

SERVER_NAME = "rifflux"
MAX_TOP_K = 100

_INSTRUCTIONS = """\
Rifflux searches the user's local markdown (notes, docs, READMEs) offline.
Start with search_rifflux; read more context with get_chunk or get_file.
If a folder is not indexed yet, or files changed and no watcher is running,
call reindex with an absolute path. index_status tells what is indexed and
whether a background reindex has finished."""


# ---------------------------------------------------------------- server state


@dataclass(slots=True)
class ServerState:
    """What the lifespan yields: the one library instance and its helpers."""

    rf: Rifflux
    settings: Settings
    auto: AutoReindex
    def model_label(self) -> str | None:
        """The active embedding model's label (None while the model is still loading)."""
        return self.rf.embedding_model

    def is_own_db(self, db_path: str) -> bool:
        return _resolved(db_path) == _resolved(self.settings.db_path)


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(path).expanduser().resolve()


def _state(ctx: Context[ServerState, Any]) -> ServerState:
    return ctx.request_context.lifespan_context


@contextmanager
def _tool_errors() -> Iterator[None]:
    """The library's errors become error results; their messages already say what to do."""
    try:
        yield
    except RiffluxError as exc:
        raise ToolError(str(exc)) from exc


# ---------------------------------------------------------------- tools

_READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                          open_world_hint=False)

Query = Annotated[str, Field(description="What to look for: words, a phrase, an identifier or "
                                         "a question. Any text is accepted.")]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many results to return "
                                                            f"(1 to {MAX_TOP_K}).")]
SearchMode = Annotated[
    Literal["hybrid", "lexical", "semantic"],
    Field(description="'hybrid' (default, best in general) fuses keyword and meaning ranks; "
                      "'lexical' for exact words, names, identifiers and error messages; "
                      "'semantic' for paraphrased or conceptual questions."),
]
Force = Annotated[bool, Field(description="Re-read and re-chunk files even when unchanged.")]


async def search_rifflux(
    ctx: Context[ServerState, Any],
    query: Query,
    top_k: TopK = 10,
    mode: SearchMode = "hybrid",
    db_path: Annotated[str | None, Field(
        description="Search another index file instead of the server's own (rarely needed; "
                    "opened for this call only)."
    )] = None,
) -> dict[str, Any]:
    """Search the user's indexed markdown (notes, docs, READMEs) and return the best
    matching chunks, each with its file path, heading breadcrumb, text and scores.
    Use it first whenever the answer may be written down in the indexed folders.
    Read more context with get_chunk (by chunk_id) or get_file (by path). If nothing
    relevant comes back, check index_status and reindex the folder."""
    state = _state(ctx)
    auto: dict[str, Any] | None = None
    with _tool_errors():
        if db_path and not state.is_own_db(db_path):
            results, label = await _search_other_db(state.settings, db_path, query, top_k, mode)
            if state.auto.enabled:
                auto = {"started": False, "reason": "automatic reindex only runs for the "
                                                    "server's own index"}
        else:
            results = await state.rf.search(query, top_k=top_k, mode=mode)
            label = state.model_label()
            auto = await state.auto.after_search()
    out: SearchAnswer = {"query": query, "mode": mode, "count": len(results),
                         "embedding_model": label, "results": results}
    if auto is not None:
        out["auto_reindex"] = auto
    return dict(out)


async def _search_other_db(
    settings: Settings, db_path: str, query: str, top_k: int, mode: str
) -> tuple[list[SearchResult], str | None]:
    if not await anyio.to_thread.run_sync(_resolved(db_path).is_file):
        raise ToolError(f"no index at db_path {db_path!r}: give the path of an existing Rifflux "
                        "index file, or leave db_path out to search the server's own index")
    # read-only: searching another index must never change it (nor drop its vectors when
    # they were made by another model)
    other = settings.with_overrides(db_path=db_path, watch_paths=(), read_only=True)
    async with Rifflux(settings=other) as rf:
        results = await rf.search(query, top_k=top_k, mode=mode)
        label: str | None = (await rf.status())["embedding_model"]
    return results, label


async def reindex(
    ctx: Context[ServerState, Any],
    path: Annotated[str | None, Field(
        description="A folder or markdown file to index; best given as an absolute path "
                    "(relative paths resolve against the server's working directory)."
    )] = None,
    paths: Annotated[list[str] | None, Field(
        description="Several folders or files; when non-empty, `path` is ignored."
    )] = None,
    force: Force = False,
    background: Annotated[bool, Field(
        description="Return a job at once instead of waiting; poll index_status until the job "
                    "is 'completed'."
    )] = False,
) -> dict[str, Any]:
    """Bring the index up to date for a folder or file: new and edited files are
    (re)indexed and embedded, deleted ones dropped; what was indexed from other
    folders is kept. Use it when a folder is not indexed yet or its files changed
    and no watcher runs. A non-empty `paths` wins over `path`; with neither, the
    server's working directory is indexed (rarely what you want). Waits until the
    files are searchable and embedded; for large folders (thousands of files) pass
    background=true and poll index_status."""
    return await _reindex(ctx, path, paths, force, background)


async def reindex_many(
    ctx: Context[ServerState, Any],
    paths: Annotated[list[str], Field(
        min_length=1, description="Folders or markdown files to index, best as absolute paths."
    )],
    force: Force = False,
) -> dict[str, Any]:
    """Reindex several folders or files in one call; `indexed_files` and
    `skipped_files` are totals over all of them. Same behaviour as reindex."""
    return await _reindex(ctx, None, paths, force, False)


async def _reindex(
    ctx: Context[ServerState, Any], path: str | None, paths: list[str] | None, force: bool,
    background: bool,
) -> dict[str, Any]:
    state = _state(ctx)
    locations = paths if paths else [path] if path else [os.getcwd()]
    missing = await anyio.to_thread.run_sync(_missing, locations)
    if len(missing) == len(locations):
        raise ToolError(
            f"nothing to index: {', '.join(repr(p) for p in missing)} not found (relative paths "
            f"resolve against the server's working directory {os.getcwd()!r}); "
            "pass an existing folder or file, preferably as an absolute path"
        )
    with _tool_errors():
        started = await state.rf.reindex(path=path, paths=paths, force=force, background=True)
        job_id = started["job"]["id"]
        if background:
            return {**started, "job_id": job_id,
                    "next_step": "call index_status: this job is listed under `jobs` and "
                                 "reaches status 'completed' once its files are indexed and "
                                 "embedded"}
        out = await _follow(state.rf, job_id, ctx)
    failed = {e["path"]: e["error"] for e in out["errors"]}
    if all(loc in failed for loc in locations):
        raise ToolError("nothing indexed: " + "; ".join(f"{p}: {failed[p]}" for p in locations)
                        + ". Pass existing folders or markdown files (the server's include "
                        "globs come from RIFFLUX_INCLUDE)")
    return dict(out)


async def _follow(rf: Rifflux, job_id: str, ctx: Context[ServerState, Any]) -> ReindexResult:
    """Wait until the job is indexed and embedded (what a foreground reindex promises),
    sending progress notifications to a client that asked for them."""
    sent = 0
    while True:
        with anyio.move_on_after(1.0):
            await rf.wait_for_job(job_id)
        job = await rf.job(job_id)
        if job["status"] in FINISHED:
            break
        done = int(job["indexed_files"])
        if done > sent:  # progress must only increase
            sent = done
            await ctx.report_progress(done, None, f"{job['phase']}: {done} files indexed, "
                                                  f"{job['pending_embeddings']} chunks to embed")
    if job["status"] != "completed":
        raise ToolError(f"reindex {job['status']}: {job['error']}; check index_status and "
                        "call reindex again")
    assert job["result"] is not None  # a completed job has one
    return job["result"]


def _missing(locations: list[str]) -> list[str]:
    return [p for p in locations if not Path(p).expanduser().exists()]


async def index_status(ctx: Context[ServerState, Any]) -> dict[str, Any]:
    """Report what is indexed (files, chunks, embeddings, pending embeddings), the
    database and embedding model in use, the include/exclude globs, recent reindex
    jobs and the watcher's state. Use it to see whether a background reindex has
    finished, or why a search finds nothing."""
    state = _state(ctx)
    with _tool_errors():
        status = await state.rf.status()
    return {**status, "server_cwd": os.getcwd(), "auto_reindex": state.auto.snapshot()}


async def get_chunk(
    ctx: Context[ServerState, Any],
    chunk_id: Annotated[str, Field(description="A chunk_id from search_rifflux results.")],
) -> dict[str, Any]:
    """Read one stored chunk in full by its chunk_id (from search_rifflux results)."""
    with _tool_errors():
        chunk = await _state(ctx).rf.get_chunk(chunk_id)
    if chunk is None:
        raise ToolError(f"chunk {chunk_id!r} not found: use a chunk_id from recent search_rifflux "
                        "results (ids change when a file is edited; search again)")
    return dict(chunk)


async def get_file(
    ctx: Context[ServerState, Any],
    path: Annotated[str, Field(
        description="The file's path as in search results (relative to its indexed folder), "
                    "or an absolute path."
    )],
) -> dict[str, Any]:
    """Read a whole indexed file as its chunks in order. Use it when a search hit
    needs the surrounding context."""
    with _tool_errors():
        found = await _state(ctx).rf.get_file(path)
    if found is None:
        raise ToolError(f"file {path!r} not found in the index: give the `path` of a search "
                        "result or an absolute path; if the file is new, reindex its folder")
    return dict(found)


# ---------------------------------------------------------------- server


class RiffluxMCPServer(MCPServer[ServerState]):
    """``MCPServer`` whose argument-validation errors read as instructions."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any],
        context: Context[ServerState, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(_explain(name, cause)) from cause


def _explain(tool: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "missing":
            problems.append(f"{where} is required")
        else:
            got = repr(err.get("input"))
            got = got if len(got) <= 60 else got[:57] + "..."
            problems.append(f"{where}: {err['msg']} (got {got})")
    return (f"invalid arguments for {tool}: {'; '.join(problems)}. "
            "Fix them as the tool's input schema says and call again.")


def build_server(
    settings: Settings, *, on_open: Callable[[], object] | None = None
) -> RiffluxMCPServer:
    """The server; its lifespan opens ``Rifflux`` (and the watcher, if watch paths are set).

    Opening is quick: the embedding model loads in a worker thread meanwhile, so
    the handshake is answered at once and searches wait for the model only if
    they need it. ``on_open`` is called once the index is open, just before the
    server starts reading requests.
    """

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        started = time.perf_counter()
        async with Rifflux(settings=settings) as rf:
            logger.info("rifflux index %s open in %.0f ms (cwd %s, watching %s)",
                        settings.db_path, (time.perf_counter() - started) * 1000, os.getcwd(),
                        ", ".join(map(str, settings.watch_paths)) or "nothing")
            auto = AutoReindex(rf=rf, enabled=settings.auto_reindex_on_search,
                               min_interval=settings.auto_reindex_min_interval,
                               watch_paths=settings.watch_paths)
            if on_open is not None:
                on_open()
            yield ServerState(rf=rf, settings=settings, auto=auto)

    server = RiffluxMCPServer(SERVER_NAME, instructions=_INSTRUCTIONS, version=_version(),
                              lifespan=lifespan, log_level=_sdk_level(settings.log_level))
    server.add_tool(search_rifflux, annotations=_READS)
    server.add_tool(reindex, annotations=_WRITES)
    server.add_tool(reindex_many, annotations=_WRITES)
    server.add_tool(index_status, annotations=_READS)
    server.add_tool(get_chunk, annotations=_READS)
    server.add_tool(get_file, annotations=_READS)
    return server


_SDK_LEVELS: dict[str, Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]] = {
    "DEBUG": "DEBUG", "INFO": "INFO", "WARNING": "WARNING", "ERROR": "ERROR",
    "CRITICAL": "CRITICAL",
}


def _sdk_level(level: str) -> Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]:
    return _SDK_LEVELS.get(level.upper(), "WARNING")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rifflux")
    except PackageNotFoundError:
        return "0"
