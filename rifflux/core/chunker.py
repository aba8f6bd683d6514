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
import re
from dataclasses import dataclass, field
from typing import Any

import mistune
import yaml

_PARSER = mistune.create_markdown(
    renderer=None,
    plugins=["table", "strikethrough", "footnotes", "task_lists", "def_list"],
)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


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
class FileMetadata:
    title: str | None = None
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedDocument:
    metadata: FileMetadata
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkLimits:
    max_chars: int = 1000
    min_chars: int = 200
    code_max_chars: int = 3000


@dataclass(slots=True)
class _Draft:
    path: tuple[str, ...]
    parts: list[str] = field(default_factory=list)
    size: int = 0

    def __post_init__(self) -> None:
        self.size = sum(len(p) for p in self.parts) + 2 * max(0, len(self.parts) - 1)

    def add(self, parts: list[str]) -> None:
        for part in parts:
            self.size += len(part) + (2 if self.parts else 0)
            self.parts.append(part)

    @property
    def text(self) -> str:
        return "\n\n".join(self.parts)


def parse_markdown(text: str, limits: ChunkLimits | None = None) -> ParsedDocument:
    """Parse one markdown document into metadata and bounded chunks."""
    limits = limits or ChunkLimits()
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    metadata, body = split_front_matter(text)
    blocks: list[tuple[tuple[str, ...], str, bool]] = []  # (path, text, is_code)
    headings: set[int] = set()  # indexes of heading blocks
    stack: list[tuple[int, str]] = []
    tokens = _block_tokens(body)
    for tok in tokens:
        kind = tok.get("type")
        if kind == "heading":
            level = int(tok.get("attrs", {}).get("level", 1))
            title = _inline(str(tok.get("text", ""))).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            path = tuple(t for _, t in stack)
            headings.add(len(blocks))
            blocks.append((path, f"{'#' * level} {title}".rstrip(), False))
            continue
        rendered = _block(tok).strip("\n")
        if rendered.strip():
            blocks.append((tuple(t for _, t in stack), rendered, kind == "block_code"))
    drafts = _pack(_attach_headings(blocks, headings, limits), limits)
    drafts = _merge_small(drafts, limits)
    chunks = tuple(
        make_chunk(i, " > ".join(p for p in d.path if p), d.text) for i, d in enumerate(drafts)
    )
    return ParsedDocument(metadata=metadata, chunks=chunks)


#: libyaml's safe loader when PyYAML was built with it (ten times faster than the pure
#: Python one, which took 14% of parsing time on a corpus where most files have
#: front matter); the same safe subset of YAML either way.
_YAML_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def split_front_matter(text: str) -> tuple[FileMetadata, str]:
    """YAML front matter -> metadata; invalid YAML stays in the body (nothing is lost)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return FileMetadata(), text
    try:
        data = yaml.load(match.group(1) or "", Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return FileMetadata(), text
    if data is not None and not isinstance(data, dict):
        return FileMetadata(), text
    data = data or {}
    title = data.get("title") or data.get("name")
    return (
        FileMetadata(
            title=str(title) if title is not None else None,
            tags=_str_tuple(data.get("tags")),
            aliases=_str_tuple(data.get("aliases")),
        ),
        text[match.end() :],
    )


def _str_tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)


# ---------------------------------------------------------------- rendering


def _block_tokens(body: str) -> list[dict[str, Any]]:
    """mistune's block-level AST.

    Inline markup is rendered by :func:`_inline` with a few regular expressions
    instead of mistune's inline parser, which costs more than half of the
    parse time and whose output (emphasis, links) we flatten to text anyway.
    """
    state = _PARSER.block.state_cls()
    state.process(body)
    _PARSER.block.parse(state)
    return list(state.tokens)


_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_NEEDS_INLINE = re.compile(r"[\[<*_\\]")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _group1(m: re.Match[str]) -> str:
    return m.group(1)


def _group2(m: re.Match[str]) -> str:
    return m.group(2)


def _inline(text: str) -> str:
    """Inline markdown -> readable text: link and image text kept, code spans kept."""
    if not _NEEDS_INLINE.search(text):
        return text.strip("\n")
    pieces = re.split(r"(`+[^`]*`+)", text)  # leave code spans untouched
    for i in range(0, len(pieces), 2):
        t = pieces[i]
        if "[" in t:
            t = _LINK.sub(_group1, _IMAGE.sub(_group1, t))
        if "<" in t:
            t = _TAG.sub("", _AUTOLINK.sub(_group1, t))
        if "**" in t or "__" in t:
            t = _STRONG.sub(_group2, t)
        if "\\" in t:
            t = _ESCAPE.sub(_group1, t)
        pieces[i] = t
    return "".join(pieces).strip("\n")


def _block(tok: dict[str, Any], depth: int = 0) -> str:
    kind = tok.get("type")
    if kind in ("paragraph", "block_text", "table_cell"):
        return _inline(str(tok.get("text", "")))
    if kind == "block_code":
        info = str(tok.get("attrs", {}).get("info", "") or "").strip()
        code = str(tok.get("raw", "")).rstrip("\n")
        return f"```{info}\n{code}\n```"
    if kind == "list":
        return _list(tok, depth)
    if kind == "table":
        return _table(tok)
    if kind == "block_quote":
        inner = "\n\n".join(_block(c, depth) for c in tok.get("children", []))
        return "\n".join(f"> {line}".rstrip() for line in inner.strip("\n").split("\n"))
    if kind in ("blank_line", "thematic_break"):
        return ""
    if kind == "heading":  # inside a quote or list
        return _inline(str(tok.get("text", "")))
    if kind in ("block_html", "inline_html"):
        return str(tok.get("raw", "")).strip()
    if "children" in tok:
        parts = [_block(c, depth) for c in tok["children"]]
        return "\n".join(p for p in parts if p)
    return _inline(str(tok.get("text", ""))) if "text" in tok else str(tok.get("raw", ""))


def _list(tok: dict[str, Any], depth: int) -> str:
    attrs = tok.get("attrs", {})
    ordered = bool(attrs.get("ordered"))
    start = int(attrs.get("start", 1) or 1)
    indent = "  " * depth
    lines: list[str] = []
    for n, item in enumerate(tok.get("children", [])):
        marker = f"{start + n}." if ordered else "-"
        if item.get("type") == "task_list_item":
            marker += " [x]" if item.get("attrs", {}).get("checked") else " [ ]"
        parts: list[str] = []
        for child in item.get("children", []):
            if child.get("type") == "list":
                parts.append(_list(child, depth + 1))
            else:
                text = _block(child, depth + 1)
                if text:
                    parts.append(text)
        first, *rest = parts or [""]
        lines.append(f"{indent}{marker} {first}".rstrip())
        lines.extend(p if p.startswith(indent + "  ") else _indent(p, indent + "  ") for p in rest)
    return "\n".join(lines)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else line for line in text.split("\n"))


def _table(tok: dict[str, Any]) -> str:
    rows: list[str] = []
    for section in tok.get("children", []):
        cells_rows = (
            [section] if section.get("type") == "table_head" else section.get("children", [])
        )
        for row in cells_rows:
            cells = [_inline(str(c.get("text", ""))).strip() for c in row.get("children", [])]
            rows.append(" | ".join(cells))
    return "\n".join(rows)


# ---------------------------------------------------------------- sizing


def _split_oversized(text: str, is_code: bool, limits: ChunkLimits) -> list[str]:
    if is_code:
        if len(text) <= limits.code_max_chars:
            return [text]
        return _split_code(text, limits.code_max_chars)
    if len(text) <= limits.max_chars:
        return [text]
    return _split_text(text, limits.max_chars)


def _split_code(fenced: str, cap: int) -> list[str]:
    lines = fenced.split("\n")
    opener, body = lines[0], lines[1:-1]
    budget = cap - len(opener) - 5
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in body:
        for part in _hard_wrap(line, budget):
            if current and size + len(part) + 1 > budget:
                pieces.append("\n".join([opener, *current, "```"]))
                current, size = [], 0
            current.append(part)
            size += len(part) + 1
    if current or not pieces:
        pieces.append("\n".join([opener, *current, "```"]))
    return pieces


def _hard_wrap(text: str, width: int) -> list[str]:
    if len(text) <= width:
        return [text]
    return [text[i : i + width] for i in range(0, len(text), width)]


def _atoms(text: str, cap: int) -> list[tuple[str, str]]:
    """(piece, separator before it): lines, and where a line is too long, its sentences,
    words, and at worst fixed-width slices."""
    out: list[tuple[str, str]] = []
    line_sep = "\n"
    for line in text.split("\n"):
        if not line.strip():
            line_sep = "\n\n"  # a blank line: keep the paragraph break
            continue
        if len(line) <= cap:
            out.append((line, line_sep))
        else:
            first = True
            for sentence in _SENTENCE_END.split(line):
                pieces = [sentence] if len(sentence) <= cap else sentence.split()
                for piece in pieces:
                    for part in _hard_wrap(piece, cap):
                        out.append((part, line_sep if first else " "))
                        first = False
        line_sep = "\n"
    return out


def _split_text(text: str, cap: int) -> list[str]:
    """Pack lines (or, inside an overlong line, sentences and words) into pieces of at
    most ``cap`` characters, so nothing is cut mid-word unless a word is itself huge."""
    out: list[str] = []
    current = ""
    for atom, sep in _atoms(text, cap):
        if current and len(current) + len(sep) + len(atom) > cap:
            out.append(current)
            current = atom
        else:
            current = f"{current}{sep}{atom}" if current else atom
    if current:
        out.append(current)
    return out


def _attach_headings(
    blocks: list[tuple[tuple[str, ...], str, bool]], headings: set[int], limits: ChunkLimits
) -> list[tuple[tuple[str, ...], str, bool]]:
    """A heading travels with the block after it, so no chunk is a bare heading line
    when its section has a body (an oversized block is then split after the heading)."""
    out: list[tuple[tuple[str, ...], str, bool]] = []
    i = 0
    while i < len(blocks):
        path, text, is_code = blocks[i]
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        if i in headings and nxt is not None and i + 1 not in headings and nxt[0] == path:
            joined = f"{text}\n\n{nxt[1]}"
            if not nxt[2]:
                out.append((path, joined, False))
                i += 2
                continue
            if len(joined) <= limits.code_max_chars:
                out.append((path, joined, True))  # kept whole, like the code block itself
                i += 2
                continue
        out.append((path, text, is_code))
        i += 1
    return out


def _pack(blocks: list[tuple[tuple[str, ...], str, bool]], limits: ChunkLimits) -> list[_Draft]:
    drafts: list[_Draft] = []
    for path, text, is_code in blocks:
        for piece in _split_oversized(text, is_code, limits):
            last = drafts[-1] if drafts else None
            if (
                last is not None
                and last.path == path
                and last.size + 2 + len(piece) <= limits.max_chars
            ):
                last.add([piece])
            else:
                drafts.append(_Draft(path, [piece]))
    return drafts


def _merge_small(drafts: list[_Draft], limits: ChunkLimits) -> list[_Draft]:
    """Merge every chunk under ``min_chars`` into a neighbour it fits with."""
    out: list[_Draft] = []
    carry: _Draft | None = None
    for draft in drafts:
        if carry is not None:
            if carry.size + 2 + draft.size <= limits.max_chars:
                path = draft.path if draft.path[: len(carry.path)] == carry.path else carry.path
                draft = _Draft(path, carry.parts + draft.parts)
            else:
                out.append(carry)
            carry = None
        if draft.size < limits.min_chars:
            carry = draft
        else:
            out.append(draft)
    if carry is not None:
        if out and out[-1].size + 2 + carry.size <= limits.max_chars:
            out[-1].add(carry.parts)
        else:
            out.append(carry)
    return out
