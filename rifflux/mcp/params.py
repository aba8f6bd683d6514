"""The MCP tools' parameters: each type carries the description a client shows its model.

The SDK builds every tool's input schema from these annotations and checks the
arguments against it before a tool runs. Agents read the tool list in every
session, so a description says when to use an argument, in a few words; the
details are in docs/CONTRACT.md. Types, enums and bounds stay exact.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..limits import (
    MAX_DEPTH,
    MAX_LIMIT,
    MAX_MAX_CHARS,
    MAX_TOP_K,
    MIN_MAX_CHARS,
)

Query = Annotated[str, Field(description="Words, a phrase, a name or a question.")]
#: (at most MAX_HYPOTHESIS_CHARS: the library says so; the schema stays light)
Hypothesis = Annotated[str | None, Field(
    description="Your guess at the answer, as the notes would word it.")]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description="How many hits.")]
SearchMode = Annotated[
    Literal["hybrid", "lexical", "semantic"],
    Field(description="hybrid: best in general; lexical: exact words, names, errors; "
                      "semantic: meaning, paraphrases."),
]
DbPath = Annotated[str | None, Field(description="Search another index file instead.")]

# ---------------------------------------------------------------- filters

Paths = Annotated[list[str] | None, Field(
    description="Only paths matching a glob, as in .gitignore: 'docs/**'.")]
Root = Annotated[str | None, Field(description="Only this indexed folder (path or name).")]
Tags = Annotated[list[str] | None, Field(description="Only notes with all these tags.")]
Kinds = Annotated[list[str] | None, Field(
    description="Only these kinds: markdown, text, pdf, pptx, docx, code.")]
Lang = Annotated[list[str] | None, Field(
    description="Only these languages: en, de.")]
FrontmatterValue = str | int | float | bool | list[str | int | float | bool]
Frontmatter = Annotated[dict[str, FrontmatterValue] | None, Field(
    description="Only notes whose front matter has: {\"status\": \"draft\"}.")]
ModifiedAfter = Annotated[str | None, Field(
    description="Only files modified since: 2026-11-01, or 7d, 2w, 3m, 1y.")]
ModifiedBefore = Annotated[str | None, Field(description="Only files modified before it.")]

Near = Annotated[str | None, Field(
    description="Only this note and the files linked to or from it.")]
Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH, description="How many links away.")]
NearDepth = Annotated[int | None, Field(
    ge=1, le=MAX_DEPTH, description="With near: how many links away (default 1).")]

# ---------------------------------------------------------------- shaping the answer

MaxPerFile = Annotated[int | None, Field(
    ge=1, description="At most this many hits per file: 1 shows which files matter.")]
Content = Annotated[Literal["full", "snippet"], Field(
    description="snippet: a cheap first look (about 4,000 characters); full: whole texts.")]
Duplicates = Annotated[Literal["collapse", "all"], Field(
    description="collapse: a text several files hold once (others in also_in); all: "
                "every copy.")]
Explain = Annotated[bool, Field(
    description="Add why: ranks, raw scores, the query and filters that ran.")]
MaxChars = Annotated[int, Field(
    ge=MIN_MAX_CHARS, le=MAX_MAX_CHARS,
    description="Most characters in the answer; a cut one says how to read on.")]

# ---------------------------------------------------------------- reading

FilePath = Annotated[str, Field(description="A hit's path, or an absolute path.")]
FileRoot = Annotated[str | None, Field(
    description="A hit's root, when several folders hold the path.")]
StartLine = Annotated[int | None, Field(
    description="First line, e.g. a hit's line_start (before 1 reads from 1).")]
EndLine = Annotated[int | None, Field(ge=1, description="Last line (inclusive).")]
Page = Annotated[int | None, Field(ge=1, description="A PDF's page or a deck's slide "
                                                     "(a hit's page or slide), not lines.")]
EndPage = Annotated[int | None, Field(ge=1, description="Last page or slide (inclusive).")]
ChunkId = Annotated[str, Field(description="A hit's chunk_id.")]
NotePath = FilePath
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Most entries per list.")]

# ---------------------------------------------------------------- indexing

Force = Annotated[bool, Field(description="Re-read unchanged files too.")]
Yes = Annotated[bool, Field(
    description="Allow / or home, or with no path a new cwd of over 50,000 files. Ask the "
                "user first.")]
ForgetYes = Annotated[bool, Field(
    description="Allow / or home (every folder in it). Ask the user first.")]
ForgetPath = Annotated[str, Field(
    min_length=1, description="An indexed folder, or a folder or file in one.")]
ReindexPath = Annotated[str | None, Field(
    description="A folder or markdown file, best absolute (default: the server's cwd).")]
ReindexPaths = Annotated[list[str] | None, Field(description="Several; wins over path.")]
ReindexMany = Annotated[list[str], Field(
    min_length=1, description="Folders or markdown files, best absolute.")]
Background = Annotated[bool, Field(
    description="Return a job at once; poll index_status until it is completed.")]
