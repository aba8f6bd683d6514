"""The SQLite store's lexical leg: the query made an FTS5 expression (``core.fts_query``:
``build_match``, and ``build_every`` for the chunks holding every word of a query that
mixes scripts), ranked by FTS5's bm25 on the reader's connection, from the lexicon on
large indexes (``lexicon``: the same scores); equal scores by path, chunk index, root."""

from __future__ import annotations

from ...core.catalog import Allowed
from ...core.fts_query import build_every, build_match
from ...types import ChunkRecord
from ..protocols import Ranked
from .reader import Reader


class Lexical:
    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    async def lexical(self, query: str, limit: int, allowed: Allowed | None,
                      ) -> tuple[Ranked, dict[int, ChunkRecord]]:
        match = build_match(query)
        if match is None:
            return [], {}  # no word to look for
        return await self._reader.lexical(match, limit, allowed, build_every(query))
