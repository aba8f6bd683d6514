"""Reading links back: a note's outgoing links and backlinks, and the titles of notes.
Written once for both stores, on a store's ``Statements`` (the reader's connection,
or the pool): the same answers, in the same order, from either.

Each link is given where it is written (its file, the heading breadcrumb and
chunk it is in, its line) and where it goes: the file it resolves to and, for a
``#Heading`` or ``#^block`` anchor, the chunk of that file the anchor names (the
first chunk of the heading's section, whose breadcrumb holds the heading at some
level, or the first whose text holds the block id; for ``#page=N``, the first chunk on
that page of a PDF or slide of a deck). Backlinks are in the order of
their files' paths by code point (``Dialect.bytewise``), then line.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from ..core.links import anchor_matches, target_parts
from .common import title_of

if TYPE_CHECKING:
    from ..types import Backlink, LinkKind, LinkPlace, NoteLinks, OutgoingLink
    from .statements import Statements
    from .written import Row

#: What a link says and where it is (``_place`` reads them), then its chunk's id: ``l``
#: is the link, ``c`` its chunk (``_SOURCE_CHUNK``).
_LINK_COLUMNS = "l.kind, l.target, l.embed, l.text, l.line, l.context, l.heading, c.chunk_id"
#: The chunk a link is in.
_SOURCE_CHUNK = "LEFT JOIN chunks c ON c.file_id = l.file_id AND c.chunk_index = l.chunk_index "
#: A page of a PDF or a slide of a deck, as Obsidian links to one (``paper.pdf#page=3``,
#: ``#page=3&selection=...``): the first chunk on it.
_PAGE = re.compile(r"page=(\d{1,9})(?:&|$)")


class LinkRecords:
    """``LinkStore``."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql

    async def of(self, file_id: int, path: str, root: str) -> NoteLinks:
        """The links of the file ``file_id`` (at ``path`` in ``root``), both ways."""
        out_rows = await self._sql.fetch(
            f"SELECT {_LINK_COLUMNS}, t.rel_path, l.target_file_id FROM links l "
            "LEFT JOIN files t ON t.id = l.target_file_id " + _SOURCE_CHUNK +
            "WHERE l.file_id = ? ORDER BY l.line, l.id", file_id)
        back_rows = await self._sql.fetch(
            f"SELECT {_LINK_COLUMNS}, s.rel_path FROM links l "
            "JOIN files s ON s.id = l.file_id " + _SOURCE_CHUNK + "WHERE l.target_file_id = ? "
            f"ORDER BY s.rel_path COLLATE {self._sql.dialect.bytewise}, l.line, l.id", file_id)
        outgoing: list[OutgoingLink] = []
        for r in out_rows:
            place = _place(r)
            target_id = None if r[9] is None or r[8] is None else int(r[9])
            anchor = place["anchor"]
            chunk = (await self._anchored(target_id, anchor)
                     if target_id is not None and anchor else None)
            outgoing.append({"target": place["target"],  # first, then where it goes
                             "path": None if r[8] is None else str(r[8]),
                             **place, "target_chunk_id": chunk})
        backlinks: list[Backlink] = [{"path": str(r[8]), **_place(r)} for r in back_rows]
        return {"path": path, "root": root, "outgoing": outgoing, "backlinks": backlinks,
                "unresolved": [link for link in outgoing if link["path"] is None]}

    async def _anchored(self, file_id: int, anchor: str) -> str | None:
        """The chunk of ``file_id`` an anchor names."""
        page = _PAGE.match(anchor)
        if page is not None:
            rows = await self._sql.fetch(
                "SELECT chunk_id FROM chunks WHERE file_id = ? AND page = ? "
                "ORDER BY chunk_index LIMIT 1", file_id, int(page.group(1)))
            if rows:
                return str(rows[0][0])
        if anchor.startswith("^"):
            block = re.compile(re.escape(anchor) + r"(?![\w-])")
            rows = await self._sql.fetch(
                "SELECT chunk_id, content FROM chunks WHERE file_id = ? AND "
                f"{self._sql.dialect.position}(content, ?) > 0 ORDER BY chunk_index",
                file_id, anchor)
            return next((str(r[0]) for r in rows if block.search(str(r[1]))), None)
        rows = await self._sql.fetch(
            "SELECT chunk_id, heading_path FROM chunks WHERE file_id = ? ORDER BY chunk_index",
            file_id)
        return next((str(r[0]) for r in rows if anchor_matches(anchor, str(r[1]))), None)

    async def notes(self, file_ids: Collection[int]) -> dict[int, tuple[str, str]]:
        """(path, title) of each file."""
        dialect = self._sql.dialect
        rows = await self._sql.fetch(
            f"SELECT id, rel_path, title FROM files WHERE id {dialect.among}",
            dialect.listed(file_ids))
        return {int(r[0]): (str(r[1]), title_of(r[2], str(r[1]))) for r in rows}


def _place(r: Row) -> LinkPlace:
    """Where a link is and what it says, from the first eight columns of a row
    (``_LINK_COLUMNS``)."""
    kind: LinkKind = "markdown" if r[0] == "markdown" else "wikilink"
    return {"heading": str(r[6]), "line": int(r[4]),
            "text": str(r[3]), "target": str(r[1]), "kind": kind, "embed": bool(r[2]),
            "anchor": target_parts(kind, str(r[1]))[1],
            "chunk_id": None if r[7] is None else str(r[7]), "context": str(r[5])}
