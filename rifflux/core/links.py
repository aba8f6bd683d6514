"""Links between notes, and from notes to the other files the index reads: found in
markdown, keyed, and resolved as Obsidian resolves them.

What is a link (``find_links``):
- wikilinks ``[[Note]]``, ``[[Note#Heading]]``, ``[[Note#^block]]``, ``[[Note|shown]]``
  and embeds ``![[Note]]``; to another file by its whole name, ``[[paper.pdf]]``,
  ``![[deck.pptx]]``, ``[[paper.pdf#page=3]]``;
- markdown links to local files of a kind the index reads (notes, text, PDF,
  PowerPoint, Word, source code: ``rifflux.kinds.BUILT_IN_SUFFIXES``; an installed
  extractor's files are linked to by wikilink, ``[[book.epub]]``),
  ``[text](../dir/Note.md#anchor)``, ``[report](files/report.docx)`` (URL-decoded,
  relative to the linking file, a ``?query`` dropped); external URLs (any ``scheme:``,
  ``//host``) and links inside the same note (``#anchor``, ``[[#Heading]]``) are not;
- never an attachment no extractor reads (``![[diagram.png]]``, audio, video, archives:
  it could never resolve, and a vault of images would fill every list of unresolved
  links), never inside code blocks, inline code or HTML comments.

How a link is resolved (``resolve``), within the linking file's root:
1. the path relative to the linking file, then from the root (``/dir/Note`` only from
   the root), with or without its markdown extension (a note's; another file is named
   with its own: ``[[paper.pdf]]`` is never ``paper.md``);
2. else a file of that name anywhere (``[[dir/Note]]``: a file whose path ends with
   ``dir/Note``); of several, the nearest: the one sharing the most folders with the
   linking file (from the root down), then the fewest folders deep, then the shortest
   path, then alphabetical (a vault with a folder per language links within each);
3. else a file with that front-matter alias (the same order among several).
Names compare without regard to case (and Unicode normal form). A link none of these
find is kept, unresolved; it resolves when a matching file appears.
"""

from __future__ import annotations

import bisect
import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote

from ..kinds import BUILT_IN_SUFFIXES, MARKDOWN_SUFFIXES
from .render import COMMENT

LinkKind = Literal["wikilink", "markdown"]

#: Files Obsidian shows rather than reads as notes: of these, a link to one no built-in
#: extractor reads (``BUILT_IN_SUFFIXES``) is not a link (``![[diagram.png]]``).
ATTACHMENTS = frozenset(
    "avif bmp gif heic jpeg jpg png svg tif tiff webp ico flac m4a mp3 ogg opus wav webm 3gp "
    "mkv mov mp4 ogv avi pdf canvas base excalidraw zip gz tar 7z docx xlsx pptx odt csv "
    "json yaml yml".split())
#: How much of the linking line a link keeps as its context.
CONTEXT_CHARS = 200

_WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MARKDOWN = re.compile(
    r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"  # [text], one level of [nested] brackets
    r"\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))+)"  # (destination or <destination>
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"  # optional "title")
)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_SLUG_DROP = re.compile(r"[^\w\- ]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """One link as the linking file has it."""

    kind: LinkKind  # "wikilink" ([[...]]) or "markdown" ([...](...))
    embed: bool = False  # ![[...]] or ![...](...)
    #: As written: ``Note#Heading`` (a wikilink without its ``|shown`` part) or the
    #: markdown destination ``../dir/Note%20A.md#anchor``.
    target: str
    text: str  # what a reader sees: the shown text, else the target
    line: int  # 1-based, in the linking file
    heading: str = ""  # the breadcrumb of the section it is in ("" before any heading)
    chunk_index: int = 0  # the linking file's chunk it is in
    context: str = ""  # the line it is on (at most CONTEXT_CHARS around it)


@dataclass(frozen=True, slots=True)
class LinkKeys:
    """A link's target in the forms files and aliases are looked up by (all folded)."""

    rel: str | None  # from the root, relative to the linking file (None: leaves the root)
    abs: str  # from the root
    name: str  # the file name without a markdown extension
    alias: str  # the target as a front-matter alias would spell it


@dataclass(frozen=True, slots=True)
class NoteKey:
    """A file a link may resolve to."""

    file_id: int
    rel_path: str
    path_key: str


# ---------------------------------------------------------------- finding links


class LinkFinder:
    """The links of one document's body, collected block by block in document order."""

    def __init__(self, body: str) -> None:
        self._body = body
        self._cursor = 0  # links are located in the source from here on
        self._found: list[tuple[int, int, LinkKind, bool, str, str, str]] = []

    def scan(self, tok: Mapping[str, Any], start: int, end: int,
             headings: Sequence[tuple[int, str]]) -> None:
        """The links of one of mistune's top-level block tokens, whose source is
        ``body[start:end]`` and which is in the section of ``headings`` (level, title):
        searched for in the token's text (code blocks, inline code and comments left
        out), then located in the source (a link split over lines of a quote or a list
        item, by its first line)."""
        if self._body.find("[", start, end) < 0:
            return  # most blocks: no link can be in them
        heading = " > ".join(title for _, title in headings if title)
        for text in _texts(tok):
            if "[" not in text:
                continue
            cleaned = _CODE_SPAN.sub(_blank, text) if "`" in text else text
            cleaned = COMMENT.sub(_blank, cleaned) if "<!--" in cleaned else cleaned
            for at, length, kind, embed, target, shown in _links_in(cleaned):
                raw = text[at : at + length]
                offset = self._body.find(raw, max(self._cursor, start), end)
                if offset < 0:
                    raw = raw.partition("\n")[0]
                    offset = self._body.find(raw, max(self._cursor, start), end)
                if offset >= 0:
                    self._cursor = offset + len(raw)
                else:  # not in the source as written: where the previous link ended
                    offset = min(max(self._cursor, start), max(start, end - 1))
                self._found.append((offset, len(raw), kind, embed, target, shown, heading))

    def spans(self) -> list[tuple[int, int, LinkKind, str]]:
        """(offset in the body, length, kind, target as written) of every link found."""
        return [(offset, length, kind, target)
                for offset, length, kind, _, target, _, _ in self._found]

    def links(self, line_of: Callable[[int], int],
              chunk_lines: Sequence[int]) -> tuple[Link, ...]:
        """Every link found, with its line and the chunk it is in (the last chunk that
        starts at or before its line; ``chunk_lines`` are the chunks' first lines)."""
        out: list[Link] = []
        for offset, length, kind, embed, target, shown, heading in self._found:
            line = line_of(offset)
            index = max(0, bisect.bisect_right(chunk_lines, line) - 1)
            out.append(Link(kind=kind, embed=embed, target=target, text=shown, line=line,
                            heading=heading, chunk_index=index,
                            context=context_of(self._body, offset, length)))
        return tuple(out)


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def _texts(tok: Mapping[str, Any]) -> Iterator[str]:
    if tok.get("type") in ("block_code", "block_html"):
        return
    children = tok.get("children")
    if isinstance(children, list):
        for child in children:
            yield from _texts(child)
    elif isinstance(tok.get("text"), str):
        yield str(tok["text"])


def _links_in(text: str) -> list[tuple[int, int, LinkKind, bool, str, str]]:
    """(offset, length, kind, embed, target, shown text) of each link in ``text``."""
    found: list[tuple[int, int, LinkKind, bool, str, str]] = []
    for m in _WIKI.finditer(text):
        inner = m.group(2).replace("\\|", "|")  # in a table, the | is escaped
        target, _, shown = inner.partition("|")
        target = target.strip()
        path = target.partition("#")[0].strip()
        if path and not _attachment(path):
            found.append((m.start(), len(m.group(0)), "wikilink", bool(m.group(1)), target,
                          shown.strip() or target))
    for m in _MARKDOWN.finditer(text):
        destination = m.group(3)
        if destination.startswith("<"):
            destination = destination[1:-1].strip()
        if _is_file_destination(destination):
            found.append((m.start(), len(m.group(0)), "markdown", bool(m.group(1)),
                          destination, " ".join(m.group(2).split()) or destination))
    return sorted(found)


def _is_file_destination(destination: str) -> bool:
    """Whether a markdown link's destination is a local file of a kind the index reads
    (``[report](files/report.docx)``; not ``https:``, ``//host``, a bare host written
    without its scheme (``www.example.org``), ``LICENSE``, ``a.png``)."""
    if _SCHEME.match(destination) or destination.startswith(("//", "www.")):
        return False
    path, _ = markdown_parts(destination)
    suffix = _suffix(path)
    return suffix is not None and suffix in BUILT_IN_SUFFIXES


def _attachment(path: str) -> bool:
    """Whether a wikilink names an attachment no extractor reads (``diagram.png``)."""
    suffix = _suffix(path)
    return suffix is not None and suffix[1:] in ATTACHMENTS and suffix not in BUILT_IN_SUFFIXES


def _suffix(path: str) -> str | None:
    """A path's suffix, lower case with its dot (``.pdf``); None without one."""
    name = path.rstrip().rsplit("/", 1)[-1]
    _, dot, suffix = name.rpartition(".")
    return "." + suffix.lower() if dot and suffix else None


def context_of(body: str, offset: int, length: int) -> str:
    """The line a link is on, cut to ``CONTEXT_CHARS`` around the link."""
    line_start = body.rfind("\n", 0, offset) + 1
    line_end = body.find("\n", offset)
    line = body[line_start : len(body) if line_end < 0 else line_end]
    at = offset - line_start
    if len(line) > CONTEXT_CHARS:
        half = max(0, (CONTEXT_CHARS - length) // 2)
        first = max(0, min(at - half, len(line) - CONTEXT_CHARS))
        line = line[first : first + CONTEXT_CHARS]
    return line.strip()


# ---------------------------------------------------------------- targets and keys


def markdown_parts(destination: str) -> tuple[str, str | None]:
    """A markdown link's destination -> (path, anchor), URL-decoded, ``?query`` dropped."""
    path, hash_sign, anchor = destination.partition("#")
    path = path.partition("?")[0]
    return unquote(path).strip(), (unquote(anchor).strip() or None) if hash_sign else None


def target_parts(kind: LinkKind, target: str) -> tuple[str, str | None]:
    """(path, anchor) of a link's target as written; the anchor is a heading (``A#B``
    for a nested one, as Obsidian writes it), a ``^block`` id, or None."""
    if kind == "markdown":
        return markdown_parts(target)
    path, hash_sign, anchor = target.partition("#")
    return path.strip(), (anchor.strip() or None) if hash_sign else None


def fold(text: str) -> str:
    """How names compare: without regard to case or Unicode normal form."""
    return unicodedata.normalize("NFC", text).casefold().strip()


def _strip_suffix(path: str) -> str:
    lower = path.lower()
    for suffix in MARKDOWN_SUFFIXES:
        if lower.endswith(suffix):
            return path[: -len(suffix)]
    return path


def note_keys(rel_path: str) -> tuple[str, str]:
    """A file's path key and name key."""
    key = fold(_strip_suffix(rel_path))
    return key, key.rsplit("/", 1)[-1]


def link_keys(source_rel: str, kind: LinkKind, target: str) -> LinkKeys:
    path, _ = target_parts(kind, target)
    bare = _strip_suffix(path)
    from_root = posixpath.normpath(bare.lstrip("/")) if bare.strip("/") else ""
    relative: str | None = None
    if not path.startswith("/"):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source_rel), bare))
        relative = None if joined == ".." or joined.startswith("../") else fold(joined)
    while from_root.startswith("../"):  # what a broken relative path still says
        from_root = from_root[3:]
    absolute = fold(from_root)
    return LinkKeys(relative, absolute, absolute.rsplit("/", 1)[-1], fold(path))


# ---------------------------------------------------------------- resolving


def resolve(keys: LinkKeys, named: Iterable[NoteKey], aliased: Iterable[NoteKey],
            source: str = "") -> int | None:
    """The file a link written in ``source`` (its path in the root) resolves to among
    the files of its root that have its name (``named``) or its alias (``aliased``);
    None when none fits."""
    candidates = [n for n in named if n.path_key.rsplit("/", 1)[-1] == keys.name]
    for wanted in (keys.rel, keys.abs):
        exact = [n for n in candidates if n.path_key == wanted]
        if exact:
            return _nearest(exact, source)
    ending = "/" + keys.abs
    inside = [n for n in candidates if n.path_key.endswith(ending)]
    if inside:
        return _nearest(inside, source)
    by_alias = list(aliased)
    return _nearest(by_alias, source) if by_alias else None


def _nearest(notes: Sequence[NoteKey], source: str) -> int:
    """Of several notes, the one nearest ``source``: sharing the most folders with it
    (from the root down), then the fewest folders deep, the shortest path, and first in
    alphabetical order."""
    here = _folders(source)

    def order(n: NoteKey) -> tuple[int, int, int, str]:
        shared = 0
        for a, b in zip(here, _folders(n.rel_path), strict=False):
            if a != b:
                break
            shared += 1
        return -shared, n.rel_path.count("/"), len(n.rel_path), n.rel_path

    return min(notes, key=order).file_id


def _folders(rel_path: str) -> list[str]:
    return [fold(part) for part in rel_path.split("/")[:-1]]


def slug(heading: str) -> str:
    """A heading as a markdown anchor writes it (GitHub's rule): lower case, spaces as
    ``-``, punctuation dropped."""
    return _SLUG_DROP.sub("", fold(heading)).replace(" ", "-")


def anchor_matches(anchor: str, heading_path: str) -> bool:
    """Whether a chunk is in the section of the heading an anchor names: its heading
    breadcrumb holds that heading at some level (``A#B``: heading B right under A; a
    markdown anchor is a slug). The first such chunk of a file is the first chunk of the
    section, whatever its breadcrumb: a heading with no text of its own before its first
    subheading opens that subheading's chunk (``Guide > Setup > Linux`` for ``#Setup``)."""
    wanted = [part for part in anchor.split("#") if part.strip()]
    have = heading_path.split(" > ")
    if not wanted or len(wanted) > len(have):
        return False
    return any(all(fold(w) == fold(h) or slug(w) == slug(h)
                   for w, h in zip(wanted, have[end - len(wanted) : end], strict=True))
               for end in range(len(wanted), len(have) + 1))
