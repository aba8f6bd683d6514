"""What an extractor is and gives: the ``Extractor`` protocol, a ``Source`` in, an
``Extracted`` out (its text, and ``Section``s of it), or ``Refused`` (``core.extract``
says how they are used)."""


from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ...kinds import Unit

if TYPE_CHECKING:  # (loaded by what chunks: the types alone here)
    from ..chunker import ParsedDocument
    from ..packing import ChunkLimits



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
