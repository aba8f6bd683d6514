"""Markdown: decoded by the rule every text file is (``core.decode``), chunked by
``core.chunker`` (headings, code blocks, front matter, links), as it always was."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kinds import KIND_GLOBS, MARKDOWN_SUFFIXES, Unit
from .text import decoded

if TYPE_CHECKING:
    from ..packing import ChunkLimits
    from .base import Extracted, Source


class Markdown:
    kind: str = "markdown"
    suffixes: tuple[str, ...] = MARKDOWN_SUFFIXES
    unit: Unit = "line"
    globs: tuple[str, ...] = KIND_GLOBS["markdown"]

    def extract(self, source: Source, limits: ChunkLimits) -> Extracted:
        from ..chunker import parse_markdown
        from .base import Extracted

        text = decoded(source, lines=False)  # (the chunker counts lines itself)
        document = parse_markdown(text.text, limits)
        return Extracted(text=text.text, encoding=text.encoding, warning=text.warning,
                         document=document)


MARKDOWN = Markdown()
