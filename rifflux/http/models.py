"""What the JSON API takes: pydantic models, from which FastAPI checks every request and
writes /openapi.json. What it answers are the contract's own types (``rifflux.types``).

An argument a route does not take is refused (``extra="forbid"``), as over MCP: a
misspelt filter (``tag`` for ``tags``) must not widen a search without a word.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..limits import (
    MAX_DEPTH,
    MAX_HYPOTHESIS_CHARS,
    MAX_MAX_CHARS,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    MIN_MAX_CHARS,
    SNIPPET_CHARS,
)
from ..types import Duplicates, Mode

Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                             description="What to look for: words, a phrase, a question.")]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K,
                            description=f"How many results (1 to {MAX_TOP_K}).")]
Globs = Annotated[list[str] | None, Field(
    description="Only files whose path in its indexed folder matches one of these globs, as "
                "in .gitignore: docs/**, **/adr-*.md.")]
Tags = Annotated[list[str] | None, Field(
    description="Only files carrying every one of these tags (front matter or #inline).")]
Kinds = Annotated[list[str] | None, Field(
    description="Only files of these kinds: markdown, text, pdf, pptx, docx, code (as hits' "
                "kind says).")]
Lang = Annotated[list[str] | None, Field(
    description="Only text written in these languages: en, de, ja (ISO 639-1 codes, as "
                "hits' lang says).")]
When = Annotated[str | None, Field(
    description="An ISO date or datetime (2026-11-01, 2026-11-01T09:30) or an age: 7d, 2w, "
                "3m, 1y.")]
NotePath = Annotated[str, Field(min_length=1, description="A note's path as search results "
                                                          "give it, or an absolute path.")]
FolderRoot = Annotated[str | None, Field(
    description="The indexed folder the path is in (its path, or its name when unique), when "
                "several hold the same path.")]
FrontmatterValue = str | int | float | bool | list[str | int | float | bool]


class ErrorDetail(BaseModel):
    type: str = Field(description="not_found, invalid_argument, unauthorized, read_only, "
                                  "body_too_large, index_not_open, ...")
    message: str = Field(description="What went wrong and what to do next.")


class ErrorBody(BaseModel):
    """Every answer other than 2xx."""

    error: ErrorDetail


class _SearchFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Mode = Field("hybrid", description="hybrid (keywords and meaning, fused), lexical "
                                             "(exact words) or semantic (meaning).")
    top_k: TopK = 10
    paths: Globs = None
    root: Annotated[str | None, Field(description="Only this indexed folder (its path, or its "
                                                  "name when unique).")] = None
    tags: Tags = None
    kinds: Kinds = None
    lang: Lang = None
    modified_after: When = None
    modified_before: When = None
    near: Annotated[str | None, Field(description="Only this note and the notes and files "
                                                  "linked to or from it, up to depth links "
                                                  "away.")] = None
    depth: Annotated[int | None, Field(ge=1, le=MAX_DEPTH, description="With near: how many "
                                                                       "links away.")] = None
    max_per_file: Annotated[int | None, Field(ge=1, description="At most this many hits from "
                                                                "one file.")] = None
    content: Literal["full", "snippet"] = Field(
        "full", description="full: each hit's text; snippet: leave the text out (each hit has "
                            "its snippet).")
    snippet_chars: Annotated[int, Field(ge=SNIPPET_CHARS[0], le=SNIPPET_CHARS[2],
                                        description="How long snippets are at most.")
                             ] = SNIPPET_CHARS[1]
    max_chars: Annotated[int | None, Field(
        ge=MIN_MAX_CHARS, le=MAX_MAX_CHARS,
        description="Keep the answer within this many characters: texts are cut first, then "
                    "the lowest-ranked hits left out (the hint says what was cut).")] = None
    explain: bool = Field(False, description="Add why each hit ranks where it does, and the "
                                             "lexical query.")
    duplicates: Duplicates = Field(
        "collapse", description="collapse: a text several chunks hold is one hit, its other "
                                "places in also_in; all: every copy.")
    hypothesis: Annotated[str | None, Field(
        min_length=1, max_length=MAX_HYPOTHESIS_CHARS,
        description="What the answer would look like (a sentence or a paragraph, as the "
                    "notes would say it): the semantic branch embeds it with q, the lexical "
                    "branch keeps q's words.")] = None
    rerank: bool | None = Field(
        None, description="Rescore the first hits with the server's reranker (true), or "
                          "not (false); left out: as the server is configured (--rerank).")


class SearchQuery(_SearchFields):
    """``GET /api/search``: the same arguments in the query string (repeat ``paths`` and
    ``tags``; ``frontmatter`` is a JSON object)."""

    q: Query
    frontmatter: Annotated[str | None, Field(
        description='Front-matter equality, as a JSON object: {"status": "draft"}.')] = None


class SearchBody(_SearchFields):
    """``POST /api/search``."""

    q: Query
    frontmatter: Annotated[dict[str, FrontmatterValue] | None, Field(
        description='Front-matter equality: {"status": "draft"}; a list field matches when '
                    "it holds the value.")] = None


class FileQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: NotePath
    root: FolderRoot = None
    start_line: Annotated[int | None, Field(ge=1, description="First line (1-based); with "
                                                              "a range, the lines as they are "
                                                              "on disk now.")] = None
    end_line: Annotated[int | None, Field(ge=1, description="Last line, inclusive (clamped "
                                                            "to the file's end).")] = None
    page: Annotated[int | None, Field(ge=1, description="A PDF's page or a deck's slide "
                                                        "to read (a hit's page or slide), "
                                                        "instead of lines.")] = None
    end_page: Annotated[int | None, Field(ge=1, description="With page: the last page "
                                                            "(slide) to read, inclusive.")
                        ] = None


class RawQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: NotePath
    root: FolderRoot = None


class LinksQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: NotePath
    root: FolderRoot = None


class NeighborsQuery(LinksQuery):
    depth: Annotated[int, Field(ge=1, le=MAX_DEPTH, description="How many links away.")] = 1


class TagsQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: Globs = None


class ReindexBody(BaseModel):
    """Bring folders or files up to date, in the background (the answer is the job)."""

    model_config = ConfigDict(extra="forbid")

    path: Annotated[str | None, Field(description="An absolute path to a folder or file.")] = None
    paths: Annotated[list[str] | None, Field(description="Several absolute paths (wins over "
                                                         "path).")] = None
    force: bool = Field(False, description="Read unchanged files again too.")
    yes: bool = Field(False, description="Index it even when it is / or the home folder, or "
                                         "a new folder of very many files.")


class ForgetBody(BaseModel):
    """Remove an indexed folder, or a folder or file inside one, from the index."""

    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(min_length=1, description="An indexed folder, or a folder or "
                                                         "file inside one.")]
    yes: bool = Field(False, description="Forget / or the home folder: every indexed folder "
                                         "inside it.")
