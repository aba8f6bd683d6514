"""The MCP tools: thin adapters over ``Rifflux``, one per tool.

Each tool validates nothing the input schema already declares (the SDK checks
arguments against ``params``), calls one ``Rifflux`` method and shapes the
answer per SPEC.md. Failures the caller can fix come back as tool error results
(``isError``) whose message says what to do; the server keeps serving.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from ..api import Rifflux
from ..errors import RiffluxError
from ..limits import DEFAULT_MAX_CHARS
from ..locate import missing_locations
from ..types import FINISHED, ReindexResult
from . import searching
from .answers import chunk_answer, file_answer, links_answer, neighbors_answer
from .params import (
    Background,
    ChunkId,
    Content,
    DbPath,
    Depth,
    Duplicates,
    EndLine,
    EndPage,
    Explain,
    FilePath,
    FileRoot,
    Force,
    ForgetPath,
    ForgetYes,
    Frontmatter,
    Hypothesis,
    Kinds,
    Lang,
    Limit,
    MaxChars,
    MaxPerFile,
    ModifiedAfter,
    ModifiedBefore,
    Near,
    NearDepth,
    NotePath,
    Page,
    Paths,
    Query,
    ReindexMany,
    ReindexPath,
    ReindexPaths,
    Root,
    SearchMode,
    StartLine,
    Tags,
    TopK,
    Yes,
)
from .searching import ServerState


def _state(ctx: Context[ServerState, Any]) -> ServerState:
    return ctx.request_context.lifespan_context


@contextmanager
def _tool_errors() -> Iterator[None]:
    """The library's errors become error results; their messages already say what to do."""
    try:
        yield
    except RiffluxError as exc:
        raise ToolError(str(exc)) from exc


# ---------------------------------------------------------------- searching and reading


async def search_rifflux(
    ctx: Context[ServerState, Any],
    query: Query,
    top_k: TopK = 10,
    mode: SearchMode = "hybrid",
    paths: Paths = None,
    root: Root = None,
    tags: Tags = None,
    frontmatter: Frontmatter = None,
    modified_after: ModifiedAfter = None,
    modified_before: ModifiedBefore = None,
    near: Near = None,
    depth: NearDepth = None,
    kinds: Kinds = None,
    lang: Lang = None,
    max_per_file: MaxPerFile = None,
    content: Content = "full",
    explain: Explain = False,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
    db_path: DbPath = None,
    duplicates: Duplicates = "collapse",
    hypothesis: Hypothesis = None,
) -> dict[str, Any]:
    """Search the user's notes and documents (PDFs, slides too) first when the answer
    may be there: path, lines or page, heading, snippet, text, scores per hit. First look:
    content='snippet', max_per_file=1, then get_chunk or get_file; a hit's history with
    get_history. For a vague or how/why question, add a hypothesis."""
    with _tool_errors():
        return await searching.search(
            _state(ctx), query, top_k, mode, paths=paths, root=root, tags=tags,
            frontmatter=frontmatter, modified_after=modified_after,
            modified_before=modified_before, near=near, depth=depth, kinds=kinds,
            lang=lang, max_per_file=max_per_file, content=content, explain=explain,
            max_chars=max_chars, db_path=db_path, duplicates=duplicates,
            hypothesis=hypothesis)


async def get_chunk(ctx: Context[ServerState, Any], chunk_id: ChunkId,
                    max_chars: MaxChars = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """Read one hit whole by its chunk_id, with its lines, note title and
    tags, and the ids of the chunks before and after it."""
    with _tool_errors():
        chunk = await _state(ctx).rf.get_chunk(chunk_id)
    if chunk is None:
        raise ToolError(f"chunk {chunk_id!r} not found: use a chunk_id from recent search_rifflux "
                        "results (ids change when a file is edited; search again)")
    return chunk_answer(chunk, max_chars)


async def get_file(
    ctx: Context[ServerState, Any],
    path: FilePath,
    root: FileRoot = None,
    start_line: StartLine = None,
    end_line: EndLine = None,
    page: Page = None,
    end_page: EndPage = None,
    max_chars: MaxChars = DEFAULT_MAX_CHARS,
) -> dict[str, Any]:
    """Read an indexed file: exact lines from disk (start_line, end_line: a
    hit's lines, widened), a PDF's pages or a deck's slides (page, end_page), or
    without them its metadata and chunks. When truncated, read on from
    next_start_line."""
    with _tool_errors():
        found = await _state(ctx).rf.get_file(path, root=root, start_line=start_line,
                                                end_line=end_line, page=page,
                                                end_page=end_page)
    if found is None:
        raise ToolError(f"file {path!r} not found in the index: give the `path` of a search "
                        "result (with its `root`) or an absolute path; if the file is new, "
                        "reindex its folder")
    return file_answer(found, max_chars)


async def get_links(ctx: Context[ServerState, Any], path: NotePath, root: FileRoot = None,
                    limit: Limit = 100,
                    max_chars: MaxChars = DEFAULT_MAX_CHARS) -> dict[str, Any]:
    """A note's links both ways: the notes and files (PDFs...) it links to (outgoing;
    unresolved: not indexed) and the notes linking to it (backlinks), each with where
    it is written."""
    with _tool_errors():
        found = await _state(ctx).rf.links(path, root=root)
    return links_answer(found, limit, max_chars)


async def get_neighbors(ctx: Context[ServerState, Any], path: NotePath, depth: Depth = 1,
                        root: FileRoot = None, limit: Limit = 100) -> dict[str, Any]:
    """The notes and files within depth links of a note or file, either way, nearest
    first. To search among them: search_rifflux with near."""
    with _tool_errors():
        found = await _state(ctx).rf.neighbors(path, depth=depth, root=root)
    return neighbors_answer(path, depth, found, limit)


async def list_tags(ctx: Context[ServerState, Any], paths: Paths = None) -> dict[str, Any]:
    """The tags in use and how many files carry each: values for
    search_rifflux's tags."""
    with _tool_errors():
        tags = await _state(ctx).rf.list_tags(paths)
    return {"count": len(tags), "tags": tags}


async def index_status(ctx: Context[ServerState, Any]) -> dict[str, Any]:
    """What is indexed (files, folders, embeddings), the model, jobs and the
    watcher: whether a reindex has finished, or why a search finds nothing."""
    state = _state(ctx)
    with _tool_errors():
        status = await state.rf.status()
    return {**status, "server_cwd": os.getcwd(), "auto_reindex": state.auto.snapshot()}


# ---------------------------------------------------------------- indexing


async def reindex(
    ctx: Context[ServerState, Any],
    path: ReindexPath = None,
    paths: ReindexPaths = None,
    force: Force = False,
    background: Background = False,
    yes: Yes = False,
) -> dict[str, Any]:
    """Index a folder or file, or bring it up to date. Use it when a folder is
    not indexed yet, or changed with no watcher running. Waits until it is searchable;
    for thousands of files pass background=true."""
    return await _reindex(ctx, path, paths, force, background, yes)


async def reindex_many(
    ctx: Context[ServerState, Any],
    paths: ReindexMany,
    force: Force = False,
    yes: Yes = False,
) -> dict[str, Any]:
    """reindex for several folders or files at once (the counts are
    totals)."""
    return await _reindex(ctx, None, paths, force, False, yes)


async def _reindex(
    ctx: Context[ServerState, Any], path: str | None, paths: list[str] | None, force: bool,
    background: bool, yes: bool,
) -> dict[str, Any]:
    state = _state(ctx)
    cwd = os.getcwd()
    locations = paths if paths else [path] if path else [cwd]
    absent = await missing_locations(locations)
    if len(absent) == len(locations):
        raise ToolError(
            f"nothing to index: {', '.join(repr(p) for p in absent)} not found (relative paths "
            f"resolve against the server's working directory {os.getcwd()!r}); "
            "pass an existing folder or file, preferably as an absolute path"
        )
    with _tool_errors():
        started = await state.rf.reindex(path=path, paths=paths, force=force, background=True,
                                         yes=yes)
        job_id = started["job"]["id"]
        # with neither path nor paths: the folder the answer is about, and why that one
        where = {} if paths or path else {
            "path": cwd, "hint": f"no path was given, so the server's working directory "
                                 f"{cwd} was indexed (the folder the MCP client started the "
                                 "server in); to index another folder, call reindex with "
                                 "its absolute path"}
        if background:
            return {**started, "job_id": job_id, **where,
                    "next_step": "call index_status: this job is listed under `jobs` and "
                                 "reaches status 'completed' once its files are indexed and "
                                 "embedded"}
        out = await _follow(state.rf, job_id, ctx)
    failed = {e["path"]: e["error"] for e in out["errors"]}
    if all(loc in failed for loc in locations):
        why = (" (no path was given, so this is the server's working directory: call "
               "reindex with the absolute path of the folder to index)" if where else "")
        raise ToolError("nothing indexed: " + "; ".join(f"{p}: {failed[p]}" for p in locations)
                        + why)
    return {**out, **where}


async def forget(ctx: Context[ServerState, Any], path: ForgetPath,
                 yes: ForgetYes = False) -> dict[str, Any]:
    """Remove an indexed folder, or a folder or file in one, from the index
    (the files on disk stay). reindex brings it back."""
    state = _state(ctx)
    with _tool_errors():
        return dict(await state.rf.forget(path, yes=yes))


async def _follow(rf: Rifflux, job_id: str, ctx: Context[ServerState, Any]) -> ReindexResult:
    """Wait until the job is indexed and embedded (what a foreground reindex promises),
    sending progress notifications to a client that asked for them: one as the job
    starts, then each second in which more files were indexed, and the last as it
    completes, so that even a reindex of a moment shows its start and its end. The value
    is the files indexed, which only grows (the protocol wants it to increase), so a last
    count that was sent already is not sent again."""
    sent: int | None = None
    while True:
        job = await rf.job(job_id)
        done, ended = int(job["indexed_files"]), job["status"] in FINISHED
        if sent is None or done > sent:
            if not ended:
                await ctx.report_progress(done, None, f"{job['phase']}: {done} files indexed, "
                                                      f"{job['pending_embeddings']} chunks to "
                                                      "embed")
            elif job["status"] == "completed" and job["result"] is not None:
                await ctx.report_progress(done, done, f"completed: {done} files indexed, "
                                                      f"{job['result'].get('embedded_chunks', 0)}"
                                                      " chunks embedded")
            sent = done
        if ended:
            break
        with anyio.move_on_after(1.0):
            await rf.wait_for_job(job_id)
    if job["status"] != "completed":
        raise ToolError(f"reindex {job['status']}: {job['error']}; check index_status and "
                        "call reindex again")
    assert job["result"] is not None  # a completed job has one
    return job["result"]
