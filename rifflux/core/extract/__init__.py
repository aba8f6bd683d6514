"""What a file holds, as text in sections with a location each: one extractor per kind.

An extractor (``Extractor``) reads one file (``Source``: its name and bytes) and gives
``Extracted``: the document's text as Rifflux reads it (lines meaning something: a text
or code file's own lines, a PDF's pages one after another), the sections of that text
with a breadcrumb and, where the file's units are pages or slides, the page or slide
each is on, and the file's title and metadata. ``core.extract.sections`` packs sections
into chunks within the chunker's limits, so the index, both search branches and every
surface are the same for every kind of file. Markdown is one extractor among them: it
chunks its own text (``core.chunker``), as it always did.

An extractor that cannot read a file raises ``Refused`` with the reason (an encrypted
PDF, a deck that is a zip bomb): the file is skipped with that reason and nothing else is
lost. Any other exception is the file's alone too (``core.document``).

Which extractor reads a file is its suffix's (``extractor_for``); a file included by a
glob with a suffix no extractor claims is read as markdown, as every file always was.
More extractors come from the ``rifflux.extractors`` entry point group (each entry an
``Extractor`` object): an installed package adds a kind of file in every process, the
parse workers' included (README: "Reading other kinds of file").
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .kinds import Unit

if TYPE_CHECKING:  # (config reads the kinds here: this package loads nothing it needs not)
    from ..chunker import ParsedDocument
    from ..packing import ChunkLimits

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rifflux.extractors"


class Refused(Exception):
    """The file cannot be read by its extractor: it is skipped, for this reason (say what
    the file is and why it is not indexed: "encrypted: it needs a password")."""


@dataclass(frozen=True, slots=True)
class Source:
    """One file to read: its path (relative to its folder: for messages), its bytes, and
    when reading it must stop (``time.monotonic()``; ``out_of_time``)."""

    name: str
    data: bytes
    deadline: float = float("inf")

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """A span of ``Extracted.text`` (offsets ``start:end``) under one breadcrumb.

    ``page``: the page or slide it is on (1-based), or None. A chunk never holds text of
    two sections with different breadcrumbs or pages, and a ``heading`` section travels
    with the one after it. ``code``: split only at line boundaries, preferably at
    ``breaks`` (line numbers within the section, 0-based: where a statement starts), and
    never merged into prose."""

    start: int
    end: int
    headings: tuple[str, ...] = ()
    page: int | None = None
    heading: bool = False
    code: bool = False
    breaks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Extracted:
    """What an extractor read: the text (lines joined by ``\\n``), its sections in order,
    and what the file says about itself."""

    text: str = ""
    sections: Sequence[Section] = ()
    pages: int = 0  # how many pages (or slides) the file has, where its unit is one
    title: str | None = None
    #: What else the file says of itself (a PDF's author): stored as its front matter.
    metadata: Mapping[str, Any] = field(default_factory=dict)
    encoding: str = "binary"  # what the bytes were read as (text: utf-8, cp1252, ...)
    warning: str | None = None  # indexed, but something was cut, replaced or is missing
    #: An extractor that chunks its text itself (markdown) gives the document whole.
    document: ParsedDocument | None = None


@runtime_checkable
class Extractor(Protocol):
    """Reads one kind of file. ``kind`` names its files in results and filters (``pdf``),
    ``suffixes`` are the file names it claims (``.pdf``, lower case), ``unit`` what its
    locations count besides lines, ``globs`` the include globs that name its files
    (``--kinds pdf``)."""

    kind: str
    suffixes: tuple[str, ...]
    unit: Unit
    globs: tuple[str, ...]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted: ...


@functools.cache
def registry() -> dict[str, Extractor]:
    """Every extractor by the suffix it claims: the built-in ones, then those of the
    ``rifflux.extractors`` entry points (which may claim a suffix of a built-in one)."""
    from .code import CODE
    from .markdown import MARKDOWN
    from .office import DOCX, PPTX
    from .pdf import PDF
    from .text import TEXT

    built_in: list[Extractor] = [MARKDOWN, TEXT, PDF, PPTX, DOCX, CODE]
    by_suffix: dict[str, Extractor] = {}
    for extractor in [*built_in, *_installed()]:
        for suffix in extractor.suffixes:
            by_suffix[suffix.lower()] = extractor
    return by_suffix


def _installed() -> list[Extractor]:
    from importlib.metadata import entry_points

    found: list[Extractor] = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            extractor: object = entry.load()
        except Exception:  # one broken package must not stop indexing
            logger.exception("the extractor %s (%s) could not be loaded", entry.name,
                             entry.value)
            continue
        if isinstance(extractor, Extractor):
            found.append(extractor)  # (the protocol is checked at run time: its members)
        else:
            logger.error("the extractor %s (%s) is not an Extractor: it has no kind, "
                         "suffixes, unit, globs or extract", entry.name, entry.value)
    return found


def extractor_for(name: str) -> Extractor:
    """The extractor of a file, by its name's suffix (markdown when none claims it)."""
    from .markdown import MARKDOWN

    dot = name.rfind(".")
    if dot <= name.rfind("/"):
        return MARKDOWN
    return registry().get(name[dot:].lower(), MARKDOWN)


def installed_kinds() -> dict[str, tuple[str, ...]]:
    """Every kind of file an extractor reads (installed ones too), with the globs that
    name its files (``kinds.KIND_GLOBS`` for the built-in ones)."""
    out: dict[str, list[str]] = {}
    for extractor in registry().values():
        out.setdefault(extractor.kind, [])
        out[extractor.kind] += [g for g in extractor.globs if g not in out[extractor.kind]]
    return {kind: tuple(globs) for kind, globs in out.items()}
