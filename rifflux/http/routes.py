"""The JSON API: one route per ``Rifflux`` method, answering the contract's types.

Routes return ``JSONResponse``s: the declared ``response_model`` (a type from
``rifflux.types``) writes /openapi.json, and the answer goes out as the library
gave it, without being validated again on its way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, JSONResponse

from ..answers import Words, search_answer
from ..api import Rifflux
from ..core.filters import make_filters
from ..types import (
    BackgroundReindex,
    ChunkDetail,
    FileLines,
    FileRecord,
    ForgetResult,
    JobInfo,
    Neighbor,
    NoteLinks,
    SearchAnswer,
    Status,
    TagCount,
)
from .errors import ApiError
from .models import (
    ErrorBody,
    FileQuery,
    ForgetBody,
    LinksQuery,
    NeighborsQuery,
    RawQuery,
    ReindexBody,
    SearchBody,
    SearchQuery,
    TagsQuery,
)

__all__ = ["router"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": what} for status, what in (
        (400, "A bad argument (the message says which, and what to give)"),
        (401, "No token, or not the server's"),
        (403, "Another site's page, or a write on a read-only server"),
        (404, "No such chunk, note, file or job"),
        (413, "The body is over the server's limit"),
        (503, "The index is not open (starting, stopping, or unusable)"),
    )}

router = APIRouter(prefix="/api", responses=_ERRORS)


async def _rf(request: Request) -> Rifflux:  # (async: a plain def runs in a thread)
    rf: Rifflux = request.app.state.rifflux
    return rf


RF = Annotated[Rifflux, Depends(_rf)]


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status)


# ---------------------------------------------------------------- search

#: What a search answer says over HTTP.
WORDS = Words(
    why={
        "no files": "the index holds no files yet: POST /api/reindex with a folder's absolute "
                    "path, then search again",
        "rebuilt": "the index was found damaged and has started anew (/api/status shows "
                   "`recovered`); its folders are being indexed again: search again in a "
                   "moment",
        "filters": "nothing matched within these filters: relax them (/api/tags lists the "
                   "tags, /api/status the folders), or search without them",
        "no words": "the query has no searchable word: give words",
        "no match": "nothing matched: try other words or mode=semantic; if the files "
                    "changed, reindex their folder",
        "meaning only": "no chunk contains these words: every hit is only close in meaning "
                        "(semantic); check the spelling, or try the words the notes would use",
        "meaning only, sentence": "no chunk contains the words of this sentence: every hit "
                                  "is only close in meaning (semantic); try its key words on "
                                  "their own, separated by spaces",
    },
    pending=lambda n: (f"{n} chunks are still being embedded: semantic results cover part "
                       "of the index"),
    read_hit="GET /api/chunks/{chunk_id}",
    names={"top_k": "top_k", "max_per_file": "max_per_file", "max_chars": "max_chars",
           "snippet": "content=snippet"},
)


@router.get("/search", response_model=SearchAnswer, summary="Search the index")
async def search_get(rf: RF, params: Annotated[SearchQuery, Query()]) -> JSONResponse:
    frontmatter = None
    if params.frontmatter is not None:
        try:
            frontmatter = json.loads(params.frontmatter)
        except ValueError:
            frontmatter = params.frontmatter  # (the library says what it must be)
        if not isinstance(frontmatter, dict):
            raise ApiError(400, "invalid_argument",
                           f"frontmatter must be a JSON object such as {{\"status\": "
                           f"\"draft\"}}, not {params.frontmatter!r}")
    return _json(await _search(rf, params, frontmatter))


@router.post("/search", response_model=SearchAnswer, summary="Search the index (JSON body)")
async def search_post(rf: RF, params: SearchBody) -> JSONResponse:
    return _json(await _search(rf, params, params.frontmatter))


async def _search(rf: Rifflux, p: SearchQuery | SearchBody,
                  frontmatter: dict[str, Any] | None) -> SearchAnswer:
    if not p.q.strip():
        raise ApiError(400, "invalid_argument", "q is blank: give words to search for")
    filters: dict[str, Any] = {
        "paths": p.paths, "root": p.root, "tags": p.tags, "frontmatter": frontmatter,
        "modified_after": p.modified_after, "modified_before": p.modified_before,
        "near": p.near, "depth": p.depth, "kinds": p.kinds, "lang": p.lang}
    applied = make_filters(**filters)  # (once: for the search and its explain)
    results = await rf.search_filtered(p.q, applied, p.top_k, p.mode,
                                       max_per_file=p.max_per_file, content=p.content,
                                       explain=p.explain, snippet_chars=p.snippet_chars,
                                       duplicates=p.duplicates, hypothesis=p.hypothesis,
                                       rerank=p.rerank)
    answered = await search_answer(rf, p.q, p.mode, results, filters, words=WORDS,
                                   explain=p.explain, applied=applied, max_chars=p.max_chars,
                                   hypothesis=p.hypothesis, rerank=p.rerank)
    return answered.answer


# ---------------------------------------------------------------- reads


@router.get("/status", response_model=Status, summary="What is indexed, and how it is going")
async def status(rf: RF) -> JSONResponse:
    return _json(await rf.status())


@router.get("/chunks/{chunk_id}", response_model=ChunkDetail, summary="A chunk by its id")
async def chunk(rf: RF, chunk_id: str) -> JSONResponse:
    found = await rf.get_chunk(chunk_id)
    if found is None:
        raise ApiError(404, "not_found", f"no chunk {chunk_id!r}: use a chunk_id from recent "
                                         "search results (ids change when a file is edited)")
    return _json(found)


@router.get("/file", response_model=FileRecord | FileLines,
            summary="A file's chunks and metadata, or its lines from disk")
async def file(rf: RF, params: Annotated[FileQuery, Query()]) -> JSONResponse:
    if params.start_line and params.end_line and params.end_line < params.start_line:
        raise ApiError(400, "invalid_argument",
                       f"end_line {params.end_line} is before start_line {params.start_line}")
    found = await rf.get_file(params.path, root=params.root, start_line=params.start_line,
                              end_line=params.end_line, page=params.page,
                              end_page=params.end_page)
    if found is None:
        raise ApiError(404, "not_found", f"{params.path!r} is not in the index: give a path "
                                         "as search results give it (with its root), or "
                                         "reindex its folder if it is new")
    return _json(found)


@router.get("/raw", response_class=FileResponse,
            summary="An indexed file's bytes as they are on disk (a PDF to open at a page)")
async def raw(rf: RF, params: Annotated[RawQuery, Query()]) -> FileResponse:
    found = await rf.get_file(params.path, root=params.root)
    if found is None:
        raise ApiError(404, "not_found", f"{params.path!r} is not in the index: only indexed "
                                         "files are served; give a path as search results "
                                         "give it (with its root)")
    disk = Path(found["root"]) / found["path"]
    if not await anyio.Path(disk).is_file():
        raise ApiError(404, "not_found", f"{found['path']} is no longer on disk; reindex "
                                         "its folder")
    return FileResponse(disk, content_disposition_type="inline", filename=disk.name)


@router.get("/links", response_model=NoteLinks, summary="A note's links, both ways")
async def links(rf: RF, params: Annotated[LinksQuery, Query()]) -> JSONResponse:
    return _json(await rf.links(params.path, root=params.root))


@router.get("/neighbors", response_model=list[Neighbor],
            summary="The notes and files within depth links of a note, nearest first")
async def neighbors(rf: RF, params: Annotated[NeighborsQuery, Query()]) -> JSONResponse:
    return _json(await rf.neighbors(params.path, depth=params.depth, root=params.root))


@router.get("/tags", response_model=list[TagCount], summary="The tags in use")
async def tags(rf: RF, params: Annotated[TagsQuery, Query()]) -> JSONResponse:
    return _json(await rf.list_tags(params.paths))


@router.get("/jobs/{job_id}", response_model=JobInfo, summary="A reindex job's state")
async def job(rf: RF, job_id: str) -> JSONResponse:
    return _json(await rf.job(job_id))


# ---------------------------------------------------------------- writes


async def _absolute(paths: list[str]) -> list[str]:
    for path in paths:
        if not path.strip() or not (os.path.isabs(path) or path.startswith("~")):
            raise ApiError(400, "invalid_argument",
                           f"{path!r} is not an absolute path: the server's working "
                           "directory is not the caller's, so give an absolute path")
    def exists(path: str) -> bool:
        return Path(path).expanduser().exists()

    found = [p for p in paths if await anyio.to_thread.run_sync(exists, p)]
    if not found:
        raise ApiError(404, "not_found", f"nothing to index: {', '.join(map(repr, paths))} "
                                         "not found on the server's machine")
    return paths


@router.post("/reindex", response_model=BackgroundReindex, status_code=202,
             summary="Bring folders or files up to date (in the background)")
async def reindex(rf: RF, body: ReindexBody) -> JSONResponse:
    locations = body.paths or ([body.path] if body.path else [])
    if not locations:
        raise ApiError(400, "invalid_argument", "give path (or paths): the absolute path of "
                                                "a folder or file to index")
    await _absolute(locations)
    started = await rf.reindex(paths=locations, force=body.force, background=True,
                               yes=body.yes)
    return _json(started, 202)


@router.post("/forget", response_model=ForgetResult,
             summary="Remove a folder (or a part of one) from the index")
async def forget(rf: RF, body: ForgetBody) -> JSONResponse:
    result: ForgetResult = await rf.forget(body.path, yes=body.yes)
    return _json(result)
