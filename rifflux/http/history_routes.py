"""The JSON API of the git history: ``GET /api/history`` (a search over commits),
``GET /api/commits/{commit}`` (one commit) and ``GET /api/history/file`` (a file's
commits, or the ones that last changed a range of its lines). Answers are the
library's (``rifflux.history_types``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ..history_types import CommitDetail, FileHistory, HistoryAnswer
from ..types import Mode
from .models import NotePath, TopK, When
from .models import Query as QueryText
from .routes import _ERRORS, RF, _json

__all__ = ["router"]

router = APIRouter(prefix="/api", responses=_ERRORS)


class HistoryQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: QueryText
    top_k: TopK = 10
    mode: Mode = "hybrid"
    paths: Annotated[list[str] | None, Field(
        description="Only commits that changed these files or folders.")] = None
    author: Annotated[str | None, Field(
        description="Only commits whose author's name or email holds this.")] = None
    since: When = None
    before: When = None
    repo: Annotated[str | None, Field(description="Only this repository.")] = None


class FileHistoryQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: NotePath
    start_line: Annotated[int | None, Field(ge=1, description="With end_line: the commits "
                                                              "that last changed these "
                                                              "lines.")] = None
    end_line: Annotated[int | None, Field(ge=1)] = None


@router.get("/history", response_model=HistoryAnswer,
            summary="Search the git history of the indexed folders")
async def history(rf: RF, params: Annotated[HistoryQuery, Query()]) -> JSONResponse:
    return _json(await rf.search_history(
        params.query, top_k=params.top_k, mode=params.mode, paths=params.paths,
        author=params.author, since=params.since, before=params.before, repo=params.repo))


@router.get("/commits/{commit}", response_model=CommitDetail, summary="One commit")
async def commit(rf: RF, commit: str) -> JSONResponse:
    return _json(await rf.show_commit(commit))


@router.get("/history/file", response_model=FileHistory,
            summary="The commits that changed a file, or last changed its lines")
async def file_history(rf: RF, params: Annotated[FileHistoryQuery, Query()]) -> JSONResponse:
    return _json(await rf.history(params.path, params.start_line, params.end_line))
