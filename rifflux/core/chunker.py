"""Markdown text -> heading-aware chunks, from mistune's AST.

Rules (each has a test):
- a heading opens a section; its breadcrumb ``A > B > C`` is the chunk's
  ``heading_path`` and its line (``## B``) opens the section's first chunk, so
  heading words are searchable and embedded;
- blocks are packed into chunks of at most ``max_chars``; a fenced code block is
  kept whole up to ``code_max_chars`` and split at line boundaries beyond it;
  any other oversized block is split at paragraph, line, sentence or word
  boundaries;
- no content is lost: a chunk shorter than ``min_chars`` is merged into its
  neighbour when the two fit, and otherwise kept as it is;
- YAML front matter becomes file metadata (title, tags, aliases), not body text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .frontmatter import FileMetadata, split_front_matter
from .packing import Block, ChunkLimits, attach_headings, merge_small, pack
from .render import block, block_tokens, inline

__all__ = [
    "Chunk",
    "ChunkLimits",
    "FileMetadata",
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


def make_chunk(index: int, heading_path: str, content: str) -> Chunk:
    digest = hashlib.sha256(embed_text(heading_path, content).encode("utf-8")).hexdigest()
    return Chunk(chunk_index=index, heading_path=heading_path, content=content,
                 content_hash=digest)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocument:
    metadata: FileMetadata
    chunks: tuple[Chunk, ...]


def parse_markdown(text: str, limits: ChunkLimits | None = None) -> ParsedDocument:
    """Parse one markdown document into metadata and bounded chunks."""
    limits = limits or ChunkLimits()
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    metadata, body = split_front_matter(text)
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    for tok in block_tokens(body):
        kind = tok.get("type")
        if kind == "heading":
            level = int(tok.get("attrs", {}).get("level", 1))
            title = inline(str(tok.get("text", ""))).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path = tuple(t for _, t in stack)
            blocks.append(Block(path, f"{'#' * level} {title}".rstrip(), is_heading=True))
            continue
        rendered = block(tok).strip("\n")
        if rendered.strip():
            blocks.append(
                Block(tuple(t for _, t in stack), rendered, is_code=kind == "block_code")
            )
    drafts = merge_small(pack(attach_headings(blocks, limits), limits), limits)
    chunks = tuple(
        make_chunk(i, " > ".join(p for p in d.path if p), d.text) for i, d in enumerate(drafts)
    )
    return ParsedDocument(metadata=metadata, chunks=chunks)
