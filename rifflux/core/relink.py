"""Links kept pointing where they pointed when a note moves: pure functions.

``move_note`` reads the notes of the writable folder; for every link in them
(``core.links`` finds them: ``[[Name]]``, ``[[Name#Heading]]``, ``[[Name|alias]]``,
``![[Name]]``, ``[text](../dir/Name.md#x)``; never in code or comments), it resolves the
link as the index does (``core.links.resolve``) among the notes before the move, from
where the linking note was, and among the notes after it, from where it is then. A
link whose answer changes is rewritten so that it finds the note it found before (the
moved note at its new path): only the path part of the link changes, its ``#anchor``,
``|shown text``, ``!`` and title stay as written, and so does everything around it.

So links to the moved note follow it, the moved note's own relative links still reach
their notes (and the other files it links to: ``[r](files/report.docx)``, when the
folder's files include them) from its new folder, and a link that another note of the
same name would now capture (Obsidian's nearest-note rule) keeps its note. A new
spelling keeps the style of the old one: a bare name stays a bare name when it finds the
note, else the path from the folder's top; a relative path stays relative; ``.md`` stays
or stays off.
Links found by front-matter alias, and links that found no note, are left alone.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from ..kinds import MARKDOWN_SUFFIXES
from .frontmatter import split_front_matter
from .links import (
    _MARKDOWN,  # the markdown link pattern the finder uses, to find a link's parts
    LinkFinder,
    LinkKind,
    NoteKey,
    link_keys,
    markdown_parts,
    note_keys,
    resolve,
)
from .note_text import Edit
from .render import block_tokens

_WIKI_PATH_END = re.compile(r"\\\||[|#]")
#: Characters a wikilink cannot hold in its path.
_NOT_IN_WIKILINKS = frozenset("#|[]^")


@dataclass(frozen=True, slots=True)
class LinkAt:
    """A link in a note's text, and the span of its path part (``Name``, ``../a/B.md``)."""

    start: int
    end: int
    kind: LinkKind
    target: str  # as written (a wikilink without its |shown part)
    path_start: int
    path_end: int


def links_at(text: str) -> list[LinkAt]:
    """Every link of a note (text with ``\\n`` breaks) whose parts can be told apart."""
    _, body = split_front_matter(text)
    at = len(text) - len(body)
    finder = LinkFinder(body)
    for tok, start, end in block_tokens(body):
        finder.scan(tok, start, end, ())
    found: list[LinkAt] = []
    for offset, length, kind, target in finder.spans():
        raw = body[offset : offset + length]
        span = _path_span(raw, kind)
        if span is not None:
            found.append(LinkAt(at + offset, at + offset + length, kind, target,
                                at + offset + span[0], at + offset + span[1]))
    return found


def _path_span(raw: str, kind: LinkKind) -> tuple[int, int] | None:
    """Where the path part is in a link as written; None when the link is not whole
    there (a link the finder located by its first line only)."""
    if kind == "wikilink":
        if not (raw.startswith(("[[", "![[")) and raw.endswith("]]")):
            return None
        inner_start = raw.index("[[") + 2
        inner = raw[inner_start:-2]
        stop = _WIKI_PATH_END.search(inner)
        start, end = inner_start, inner_start + (stop.start() if stop else len(inner))
    else:
        m = _MARKDOWN.match(raw)
        if m is None or m.end() != len(raw):
            return None
        start, end = m.span(3)
        if raw[start] == "<":
            start, end = start + 1, end - 1
        dest = raw[start:end]
        cut = min((i for i in (dest.find("#"), dest.find("?")) if i >= 0), default=len(dest))
        end = start + cut
    while start < end and raw[start].isspace():
        start += 1
    while end > start and raw[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


class Notes:
    """The notes of one folder (paths relative to it), as links look them up."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._by_name: dict[str, list[NoteKey]] = {}
        self._paths: list[str] = []
        for rel in paths:
            path_key, name = note_keys(rel)
            self._by_name.setdefault(name, []).append(NoteKey(len(self._paths), rel, path_key))
            self._paths.append(rel)

    def resolve(self, source: str, kind: LinkKind, target: str) -> str | None:
        """The note a link written in ``source`` finds by path or name (None: none)."""
        keys = link_keys(source, kind, target)
        found = resolve(keys, self._by_name.get(keys.name, ()), (), source)
        return None if found is None else self._paths[found]


@dataclass(frozen=True, slots=True)
class Relinked:
    """One link rewritten: where it is (its line in the note), before and after."""

    line: int
    before: str
    after: str


def relink(text: str, *, was: str, now: str, before: Notes, after: Notes,
           moved: tuple[str, str]) -> tuple[list[Edit], list[Relinked]]:
    """The edits that keep the links of a note (at ``was`` before the move, ``now``
    after it) finding the notes they found, when ``moved[0]`` became ``moved[1]``."""
    edits: list[Edit] = []
    done: list[Relinked] = []
    for link in links_at(text):
        found = before.resolve(was, link.kind, link.target)
        if found is None:
            continue  # unresolved, or found by an alias: the move changes nothing
        wanted = moved[1] if found == moved[0] else found
        if link.kind == "markdown" and _literal(was, link.target) == found:
            # a relative path that was right stays right (other readers than Obsidian
            # follow it literally, not by name)
            if _literal(now, link.target) == wanted:
                continue
        elif after.resolve(now, link.kind, link.target) == wanted:
            continue
        written = text[link.path_start : link.path_end]
        angle = text[link.path_start - 1] == "<"  # [t](<dir/a b.md>): spaces as they are
        spelled = _spell(link.kind, written, now, wanted, after, angle=angle)
        if spelled is None:
            continue
        edits.append(Edit(link.path_start, link.path_end, spelled))
        raw = text[link.start : link.end]
        cut = link.path_start - link.start
        done.append(Relinked(text.count("\n", 0, link.start) + 1, raw,
                             raw[:cut] + spelled + raw[cut + len(written):]))
    return edits, done


def _literal(source: str, target: str) -> str | None:
    """The note a markdown link's path names as a path (relative to ``source``, or from
    the folder's top with a leading ``/``); None when it leaves the folder."""
    path, _ = markdown_parts(target)
    joined = posixpath.normpath(path.lstrip("/") if path.startswith("/")
                                else posixpath.join(posixpath.dirname(source), path))
    return None if joined == ".." or joined.startswith("../") else joined


def _strip(path: str) -> str:
    lower = path.lower()
    for suffix in MARKDOWN_SUFFIXES:
        if lower.endswith(suffix):
            return path[: -len(suffix)]
    return path


def _relative(target: str, source: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(source) or ".")


def _spell(kind: LinkKind, written: str, source: str, target: str, notes: Notes, *,
           angle: bool = False) -> str | None:
    """A path part for a link in ``source`` that finds ``target``, in the style of
    ``written`` (a markdown destination: URL-encoded if it was, spaces as ``%20`` unless
    it is in ``<>``); None when no spelling does."""
    if kind == "markdown":
        options = ["/" + target] if written.startswith("/") else \
            [_relative(target, source), "/" + target]
        for option in options:
            spelled = quote(option, safe="/") if "%" in written else \
                option if angle else option.replace(" ", "%20")
            if notes.resolve(source, kind, spelled) == target:
                return spelled
        return None
    suffix = target[len(_strip(target)):] if _strip(written) != written else ""
    bare, name = _strip(target), _strip(target).rsplit("/", 1)[-1]
    relative = _relative(bare, source)
    if written.startswith("./") and not relative.startswith("../"):
        relative = "./" + relative
    if "/" not in written:
        options = [name, bare, "/" + bare]
    elif written.startswith(("./", "../")):
        options = [relative, bare, "/" + bare]
    elif written.startswith("/"):
        options = ["/" + bare, bare]
    else:
        options = [bare, "/" + bare, relative]
    for option in options:
        spelled = option + suffix
        if _NOT_IN_WIKILINKS.isdisjoint(spelled) and \
                notes.resolve(source, kind, spelled) == target:
            return spelled
    return None
