"""The SQLite store's lexical leg: the query made an FTS5 expression (``core.fts_query``:
``build_match``, and ``build_every`` for the chunks holding every word of a query that
mixes scripts), ranked by FTS5's bm25 on the reader's connection, from the lexicon on
large indexes (``lexicon``: the same scores); equal scores by path, chunk index, root."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.fts_query import build_every, build_match
from ..common import Rows

if TYPE_CHECKING:
    from ...core.catalog import Allowed
    from ...types import LexicalExplain
    from ..protocols import Ranked
    from .reader import Reader


def lexical_plan(query: str) -> LexicalExplain | None:
    """What a search for ``query`` matches: FTS5's expressions (None: no word to look for)."""
    match = build_match(query)
    if match is None:
        return None
    return {"store": "sqlite", "ranking": "fts5", "match": match,
            "every": build_every(query), "ranked_by": None}


class Lexical:
    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def condition(self) -> str | None:
        """Nothing to say: FTS5's index is the file's own."""
        return None

    async def lexical(self, query: str, limit: int, allowed: Allowed | None, *,
                      rows: int | None = None) -> tuple[Ranked, Rows]:
        plan = lexical_plan(query)
        if plan is None:
            return [], Rows()  # no word to look for
        return await self._reader.lexical(plan["match"], limit, allowed, plan["every"],
                                          rows=rows)
