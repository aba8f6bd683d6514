"""The languages of chunks (``core.language``), for a search: each candidate's language
(the hybrid ranking's preference for the question's language), and the chunks of some
files that a ``lang`` filter leaves out (the in-memory matrix's rows to mask). Written
once for both stores, on a store's ``Statements`` (the reader's connection, or the pool).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.catalog import Allowed
from .statements import Statements


class Languages:
    """``LanguageStore``."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql

    async def of(self, rowids: Sequence[int]) -> dict[int, str]:
        """Each of these chunks' language, for those that have one."""
        if not rowids:
            return {}
        dialect = self._sql.dialect
        rows = await self._sql.fetch(
            f"SELECT id, lang FROM chunks WHERE lang IS NOT NULL AND id {dialect.among}",
            dialect.listed(list(rowids)))
        return {int(r[0]): str(r[1]) for r in rows}

    async def left_out(self, allowed: Allowed) -> list[int]:
        """The chunks of the allowed files that are in none of ``allowed.langs`` (or in
        no language that could be told)."""
        if not allowed.langs or not allowed.ids:
            return []
        dialect = self._sql.dialect
        rows = await self._sql.fetch(
            f"SELECT id FROM chunks WHERE file_id {dialect.among} AND "
            f"(lang IS NULL OR NOT lang {dialect.among})",
            dialect.listed(allowed.ordered), dialect.listed(list(allowed.langs)))
        return [int(r[0]) for r in rows]
