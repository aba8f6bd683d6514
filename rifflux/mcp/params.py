"""The MCP tools' parameters: each type carries the description a client shows its model.

The SDK builds every tool's input schema from these annotations and checks the
arguments against it before a tool runs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ..core.graph import MAX_DEPTH
from .budget import MAX_MAX_CHARS, MIN_MAX_CHARS

MAX_TOP_K = 100

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
DbPath = Annotated[str | None, Field(
    description="Search another index file instead of the server's own (rarely needed; "
                "opened for this call only).")]

# ---------------------------------------------------------------- filters

Paths = Annotated[list[str] | None, Field(
    description="Only files whose path (relative to its indexed folder) matches one of these "
                "globs, as in .gitignore: 'docs/**', '**/adr-*.md', 'notes/2026-*'. Applied "
                "before ranking, so small folders are never crowded out.")]
Root = Annotated[str | None, Field(
    description="Only files under this indexed folder: its absolute path, or its name when "
                "only one indexed folder has that name (index_status lists them).")]
Tags = Annotated[list[str] | None, Field(
    description="Only files carrying every one of these tags (front matter or inline "
                "#tags; 'project' also matches nested 'project/alpha'). list_tags shows "
                "the tags in use.")]
FrontmatterValue = str | int | float | bool | list[str | int | float | bool]
Frontmatter = Annotated[dict[str, FrontmatterValue] | None, Field(
    description="Only files whose front matter has these values, e.g. {\"status\": "
                "\"draft\"}; a list field matches when it contains the value; a list of "
                "values needs all of them (ask once per value for any of them).")]
ModifiedAfter = Annotated[str | None, Field(
    description="Only files modified at or after this time: an ISO date or datetime "
                "(2026-11-01, 2026-11-01T09:30; local time unless a zone is given) or an "
                "age: 7d, 2w, 3m (months), 1y.")]
ModifiedBefore = Annotated[str | None, Field(
    description="Only files modified before this time (same forms as modified_after).")]

Near = Annotated[str | None, Field(
    description="Only this note and the notes linked to or from it (up to `depth` links "
                "away, either way): the note's `path` as search results give it (with "
                "`root` when several folders hold it). get_neighbors lists them.")]
Depth = Annotated[int, Field(
    ge=1, le=MAX_DEPTH, description="How many links away: 1 (default) the notes linked to "
                                    "or from the note; 2 adds the notes linked to or from "
                                    "those, and so on.")]
NearDepth = Annotated[int | None, Field(
    ge=1, le=MAX_DEPTH, description="With near: how many links away (default 1, the notes "
                                    "linked to or from the note; 2 adds the notes linked "
                                    "to or from those). Without near it is an error.")]

# ---------------------------------------------------------------- shaping the answer

MaxPerFile = Annotated[int | None, Field(
    ge=1, description="At most this many hits from one file (the list goes on down the "
                      "ranking). Use 1 or 2 to see which files are relevant rather than "
                      "many sections of one long file.")]
Content = Annotated[Literal["full", "snippet"], Field(
    description="'full' (default) returns each hit's whole text; 'snippet' a cheap "
                "first look: where each hit is and 80-240 characters around the "
                "matches, about 4,000 characters in all (read a hit whole with "
                "get_chunk).")]
Explain = Annotated[bool, Field(
    description="Add each hit's ranks and raw scores (bm25, cosine) and the lexical query "
                "and filters applied.")]
MaxChars = Annotated[int, Field(
    ge=MIN_MAX_CHARS, le=MAX_MAX_CHARS,
    description="Most characters in the whole answer (its JSON text); a longer one is cut, "
                "says so (truncated, hint) and says how to read the rest.")]

# ---------------------------------------------------------------- reading

FilePath = Annotated[str, Field(
    description="The file's `path` from search results (relative to its indexed folder), "
                "or an absolute path inside an indexed folder.")]
FileRoot = Annotated[str | None, Field(
    description="The indexed folder the path is relative to (the `root` of a search "
                "result), when several folders hold the same path.")]
StartLine = Annotated[int | None, Field(
    ge=1, description="First line to read (1-based), e.g. a result's line_start. With a "
                      "line range the lines come from the file on disk.")]
EndLine = Annotated[int | None, Field(
    ge=1, description="Last line to read (inclusive), e.g. a result's line_end; past the "
                      "end of the file it stops at the last line.")]
ChunkId = Annotated[str, Field(description="A chunk_id from search_rifflux results.")]
NotePath = Annotated[str, Field(
    description="The note's `path` from search results (relative to its indexed folder), "
                "or an absolute path inside an indexed folder.")]
MAX_LIMIT = 1000
Limit = Annotated[int, Field(
    ge=1, le=MAX_LIMIT, description=f"Most entries per list in the answer (1 to {MAX_LIMIT}); "
                                    "the rest are counted, and `truncated` says so.")]

# ---------------------------------------------------------------- indexing

Force = Annotated[bool, Field(description="Re-read and re-chunk files even when unchanged.")]
Yes = Annotated[bool, Field(
    description="Index it even when it is / or the home folder itself, or a folder not "
                "indexed yet with more than 50,000 markdown files (refused otherwise: it "
                "is nearly always a wrong working directory). Ask the user first.")]
ForgetYes = Annotated[bool, Field(
    description="Forget / or the home folder, which removes every indexed folder inside "
                "it (refused otherwise). Ask the user first.")]
ForgetPath = Annotated[str, Field(
    min_length=1, description="An indexed folder (as index_status lists it under "
                              "indexed_roots), or a folder or file inside one; absolute "
                              "paths are best.")]
ReindexPath = Annotated[str | None, Field(
    description="A folder or markdown file to index; best given as an absolute path "
                "(relative paths resolve against the server's working directory).")]
ReindexPaths = Annotated[list[str] | None, Field(
    description="Several folders or files; when non-empty, `path` is ignored.")]
ReindexMany = Annotated[list[str], Field(
    min_length=1, description="Folders or markdown files to index, best as absolute paths.")]
Background = Annotated[bool, Field(
    description="Return a job at once instead of waiting; poll index_status until the job "
                "is 'completed'.")]
