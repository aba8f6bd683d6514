"""Markdown text -> heading-aware chunks, from mistune's AST.

Rules (each has a test):
- a heading opens a section; its breadcrumb ``A > B > C`` is the chunk's
  ``heading_path`` and its line (``## B``) opens the section's first chunk, so
  heading words are searchable and embedded;
- blocks are packed into chunks of at most ``max_chars``; a fenced code block is
  kept whole up to ``code_max_chars`` and split at line boundaries beyond it;
  any other oversized block is split at paragraph, line, sentence or word
  boundaries;
- chunks follow sections: a chunk never spans two sections of the same or a higher
  level; a chunk shorter than ``min_chars`` merges only with the rest of its own
  section, or (a short opening, a bare heading) with the subsection right after it;
  otherwise it stays as it is (no content is lost);
- every chunk knows the source lines it came from (``line_start``/``line_end``,
  1-based, as ``str.splitlines()`` counts them);
- HTML comments are not text: readers never see them;
- YAML front matter becomes file metadata (title, tags, aliases, the whole front
  matter), not body text; inline ``#tags`` join the front-matter tags, and the first
  H1 is the title when the front matter gives none;
- links to other notes (``core.links``) are kept with their line and chunk.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .frontmatter import FileMetadata, split_front_matter
from .lines import SourceMap
from .links import Link, LinkFinder
from .packing import Block, ChunkLimits, attach_headings, merge_small, pack
from .render import block, block_tokens, inline, inline_tags

__all__ = [
    "Chunk",
    "ChunkLimits",
    "FileMetadata",
    "Link",
    "ParsedDocument",
    "embed_text",
    "make_chunk",
    "parse_markdown",
    "split_front_matter",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    chunk_index: int
    heading_path: str
    content: str
    #: sha256 of ``embed_text``: vectors are stored and reused by this hash.
    content_hash: str
    #: The source lines the text came from (1-based, inclusive).
    line_start: int = 0
    line_end: int = 0
    #: The page (a PDF's) or slide (a deck's) the text is on, 1-based; None: the file's
    #: units are lines.
    page: int | None = None
    #: The language its text is written in (``core.language``: ISO 639-1), None when it
    #: cannot be told; found in the parse worker (``core.document``).
    lang: str | None = None


def embed_text(heading_path: str, content: str) -> str:
    """What the embedding model sees: the breadcrumb, then the text.

    A section's own heading line opens its first chunk; the breadcrumb already ends
    with that heading, so the line is left out here rather than said twice (the
    model reads at most 256 tokens: they are better spent on the body).
    """
    if not heading_path:
        return content
    first, sep, rest = content.partition("\n")
    if first.startswith("#") and first.lstrip("#").strip() == heading_path.rsplit(" > ", 1)[-1]:
        content = rest.lstrip("\n")
    return f"{heading_path}\n{content}"


def make_chunk(index: int, heading_path: str, content: str,
               lines: tuple[int, int] = (0, 0), page: int | None = None) -> Chunk:
    digest = hashlib.sha256(embed_text(heading_path, content).encode("utf-8")).hexdigest()
    return Chunk(chunk_index=index, heading_path=heading_path, content=content,
                 content_hash=digest, line_start=lines[0], line_end=lines[1], page=page)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocument:
    metadata: FileMetadata
    chunks: tuple[Chunk, ...]
    line_count: int = 0  # as str.splitlines() counts them
    links: tuple[Link, ...] = ()  # in document order


def parse_markdown(text: str, limits: ChunkLimits | None = None) -> ParsedDocument:
    """Parse one markdown document into metadata and bounded chunks."""
    limits = limits or ChunkLimits()
    # Lines as str.splitlines() counts them (CRLF, CR and the rarer breaks alike), so
    # that line numbers agree with every reader of the file.
    lines = text.lstrip("\ufeff").splitlines()
    text = "\n".join(lines)
    metadata, body = split_front_matter(text)
    source = SourceMap(body, first_line=text.count("\n", 0, len(text) - len(body)) + 1)
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    first_h1: str | None = None
    tags: list[str] = []
    links = LinkFinder(body)
    for tok, start, end in block_tokens(body):
        kind = tok.get("type")
        if kind == "heading":
            level = int(tok.get("attrs", {}).get("level", 1))
            title = inline(str(tok.get("text", ""))).strip()
            if level == 1 and first_h1 is None and title:
                first_h1 = title
            tags += inline_tags(title)
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            links.scan(tok, start, end, stack)
            if title:  # a heading that is only a comment closes sections, shows nothing
                blocks.append(Block(tuple(t for _, t in stack), f"{'#' * level} {title}",
                                    is_heading=True, src=(start, end)))
            continue
        links.scan(tok, start, end, stack)
        rendered = block(tok).strip("\n")
        if rendered.strip():
            is_code = kind == "block_code"
            if not is_code:
                tags += inline_tags(rendered)
            blocks.append(Block(tuple(t for _, t in stack), rendered, is_code=is_code,
                                src=(start, end)))
    drafts = merge_small(pack(attach_headings(blocks, limits), limits, source), limits)
    chunks = tuple(
        make_chunk(i, " > ".join(p for p in d.path if p), d.text, d.lines)
        for i, d in enumerate(drafts)
    )
    return ParsedDocument(metadata=metadata.with_body(first_h1, tags), chunks=chunks,
                          line_count=len(lines),
                          links=links.links(source.line, [c.line_start for c in chunks]))
