"""Which chunks hold the same text, for a search that gives each text once: the text
key (``content_hash``: the sha256 of the heading breadcrumb and the text, by which
vectors are kept too) of a search's candidates, with how many chunks of the index hold
it, and every place of the texts held more than once. Written once for both stores, on
a store's ``Statements`` (the reader's connection, or the pool).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .statements import Statements


@dataclass(frozen=True, slots=True)
class Place:
    """A chunk holding a text: where it is, and its file (for the search's filters)."""

    rowid: int
    path: str
    root: str
    line_start: int
    chunk_index: int
    file_id: int

    def order(self) -> tuple[str, int, str]:
        """As equal scores are ordered (``common.stable_order``): path, chunk index, root."""
        return self.path, self.chunk_index, self.root


class Copies:
    """``CopyStore``."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql

    async def texts(self, rowids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """Each of these chunks' text key and how many chunks of the index hold that text
        (a chunk deleted since it was ranked is left out)."""
        if not rowids:
            return {}
        dialect = self._sql.dialect
        rows = await self._sql.fetch(
            "SELECT c.id, c.content_hash, (SELECT COUNT(*) FROM chunks d "
            "WHERE d.content_hash = c.content_hash) FROM chunks c "
            f"WHERE c.id {dialect.among}", dialect.listed(list(rowids)))
        return {int(r[0]): (str(r[1]), int(r[2])) for r in rows}

    async def places(self, keys: Collection[str]) -> dict[str, list[Place]]:
        """Every chunk holding each of these texts, in ``Place.order``."""
        if not keys:
            return {}
        dialect = self._sql.dialect
        rows = await self._sql.fetch(
            "SELECT c.content_hash, c.id, f.rel_path, r.path, c.line_start, c.chunk_index, "
            "c.file_id FROM chunks c JOIN files f ON f.id = c.file_id "
            f"JOIN roots r ON r.id = f.root_id WHERE c.content_hash {dialect.among}",
            dialect.listed(sorted(keys)))
        found: dict[str, list[Place]] = {}
        for r in rows:
            found.setdefault(str(r[0]), []).append(Place(
                int(r[1]), str(r[2]), str(r[3]), int(r[4]), int(r[5]), int(r[6])))
        for places in found.values():
            places.sort(key=Place.order)
        return found
