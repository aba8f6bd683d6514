"""The languages of committed chunks, told after their files are written, as vectors
are (``core.language``: a parse worker finds them, the indexer hands them here): which
files still wait (``files.langs_pending``, the number of their chunks without a told
language), their chunks' texts, and what was found written back. Written once for both
stores on the writer's connection (``statements.Writing``); the one statement each
store writes its own way (many chunks' languages at once) is ``Telling._set``.

A chunk's ``lang`` is NULL both while it waits and once told that it has none (too few
letters, an unsure model): its file's ``langs_pending`` says which. A file rewritten
meanwhile (by another process: its hash changed, or it is gone) is left as its writer
left it, waiting with its new chunks; the next pass tells those.

Every method is one unit of work (``Writing.run``): the PostgreSQL store runs it again
whole on a new connection when the connection was lost.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from .statements import Writing
from .written import FILE_ENTRY_COLUMNS, Written, file_entry

#: Files read per batch (at most; fewer when they hold ``most`` chunks already).
_FILES = 256


@dataclass(frozen=True, slots=True)
class Untold:
    """A file whose chunks wait for their languages, as it was read."""

    file_id: int
    sha256: str  # (the file as read: a rewritten one is not told from these texts)
    #: Its chunks: (chunk_index, breadcrumb, text), in order.
    chunks: tuple[tuple[int, str, str], ...]


class Telling(ABC):
    """``TellingStore``: the rules; a store's subclass writes the chunks' languages."""

    def __init__(self, sql: Writing) -> None:
        self._sql = sql

    async def waiting(self) -> int:
        """How many chunks wait for their language (all files)."""

        async def work() -> int:
            rows = await self._sql.fetch(
                "SELECT COALESCE(sum(langs_pending), 0) FROM files WHERE langs_pending > 0")
            return int(rows[0][0])

        return await self._sql.run(work)

    async def untold(self, most: int) -> list[Untold]:
        """Files waiting for their chunks' languages, oldest first, about ``most`` chunks
        of them (at least one file, whatever it holds); [] when none waits."""

        async def work() -> list[Untold]:
            rows = await self._sql.fetch(
                "SELECT id, sha256, langs_pending FROM files WHERE langs_pending > 0 "
                "ORDER BY id LIMIT ?", _FILES)
            taken: list[tuple[int, str]] = []
            chunks = 0
            for row in rows:
                if taken and chunks + int(row[2]) > most:
                    break
                taken.append((int(row[0]), str(row[1])))
                chunks += int(row[2])
            if not taken:
                return []
            dialect = self._sql.dialect
            texts: dict[int, list[tuple[int, str, str]]] = {file_id: [] for file_id, _ in taken}
            for r in await self._sql.fetch(
                    "SELECT file_id, chunk_index, heading_path, content FROM chunks "
                    f"WHERE file_id {dialect.among} ORDER BY file_id, chunk_index",
                    dialect.listed([file_id for file_id, _ in taken])):
                texts[int(r[0])].append((int(r[1]), str(r[2]), str(r[3])))
            return [Untold(file_id, sha, tuple(texts[file_id])) for file_id, sha in taken]

        return await self._sql.run(work)

    async def tell(self, told: Sequence[tuple[Untold, Sequence[str | None]]]) -> Written:
        """Each file's chunks' languages (in its chunks' order), in one transaction; the
        catalog entries of the files told (a file rewritten since it was read is not)."""

        async def work() -> Written:
            async with self._sql.transaction():
                kept: list[tuple[Untold, Sequence[str | None]]] = []
                for untold, langs in told:
                    found = sorted({lang for lang in langs if lang})
                    if await self._sql.fetch(
                            "UPDATE files SET langs = ?, langs_pending = 0 WHERE id = ? AND "
                            "sha256 = ? AND langs_pending > 0 RETURNING id",
                            json.dumps(found), untold.file_id, untold.sha256):
                        kept.append((untold, langs))
                await self._set([(untold.file_id, chunk[0], lang) for untold, langs in kept
                                 for chunk, lang in zip(untold.chunks, langs, strict=True)])
                if not kept:
                    return Written()
                dialect = self._sql.dialect
                rows = await self._sql.fetch(
                    f"SELECT {FILE_ENTRY_COLUMNS} FROM files WHERE id {dialect.among}",
                    dialect.listed([untold.file_id for untold, _ in kept]))
            return Written(files=tuple(map(file_entry, rows)))

        return await self._sql.run(work)

    @abstractmethod
    async def _set(self, rows: Sequence[tuple[int, int, str | None]]) -> None:
        """Inside the transaction: (file id, chunk_index, language) of each chunk."""
