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

from ...kinds import installed
from .base import Extracted, Extractor, Refused, Section, Source

__all__ = ["Extracted", "Extractor", "Refused", "Section", "Source", "extractor_for",
           "registry"]


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
    for extractor in [*built_in, *installed()]:
        for suffix in extractor.suffixes:
            by_suffix[suffix.lower()] = extractor
    return by_suffix


def extractor_for(name: str) -> Extractor:
    """The extractor of a file, by its name's suffix (markdown when none claims it)."""
    from .markdown import MARKDOWN

    dot = name.rfind(".")
    if dot <= name.rfind("/"):
        return MARKDOWN
    return registry().get(name[dot:].lower(), MARKDOWN)
