"""The PostgreSQL store's reads, for the query actor and the embedder, on a pool of
connections (searches and reads run side by side, each on a connection of its own):
chunk rows, the catalog, processes, texts without vectors. Same answers as
``store.sqlite``'s. (The counts and lists are ``store.listings``'; a file or a chunk
by its key and a note's links are read by ``store.records`` and
``store.link_records``, on the same pool.)
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from ...core.chunker import embed_text
from ...core.filters import FileEntry
from ...location import DatabaseUrl
from ...types import ChunkRecord
from ..common import ROW_SQL, Others, PendingText, row_dict
from ..listings import Listings
from ..written import FILE_ENTRY_COLUMNS, file_entry
from .changes import sequence
from .connection import OnPool, Pool, mapped_errors
from .presence import SEEN_WITHIN


class Reads(Listings):
    """``ReadStore`` (its counts and lists: ``Listings``) and ``PendingStore`` in one."""

    def __init__(self, pool: Pool, where: DatabaseUrl) -> None:
        super().__init__(OnPool(pool, where))
        self.pool = pool
        self.where = where

    async def rows(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]:
        if not rowids:
            return {}
        with mapped_errors(self.where):
            rows = await self.pool.fetch(ROW_SQL + "WHERE c.id = ANY($1)", list(rowids))
        return {int(r[0]): row_dict(r) for r in rows}

    async def pending(self, model: str, limit: int) -> list[PendingText]:
        """Distinct chunk texts with no vector from ``model``, newest first."""
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT content_hash, heading_path, content FROM (SELECT DISTINCT ON "
                "(c.content_hash) c.content_hash, c.heading_path, c.content, c.id FROM chunks c "
                "WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = "
                "c.content_hash AND e.model = $1) ORDER BY c.content_hash, c.id DESC) t "
                "ORDER BY id DESC LIMIT $2", model, limit)
        return [PendingText(str(r[0]), embed_text(str(r[1]), str(r[2]))) for r in rows]

    async def catalog(self) -> tuple[dict[int, str], list[FileEntry], list[tuple[int, int]]]:
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, conn.transaction(readonly=True,
                                                                     isolation="repeatable_read"):
                roots = await conn.fetch("SELECT id, path FROM roots")
                files = await conn.fetch(f"SELECT {FILE_ENTRY_COLUMNS} FROM files")
                edges = await conn.fetch(
                    "SELECT DISTINCT file_id, target_file_id FROM links "
                    "WHERE target_file_id IS NOT NULL AND target_file_id != file_id")
        return ({int(r[0]): str(r[1]) for r in roots}, [file_entry(f) for f in files],
                [(int(e[0]), int(e[1])) for e in edges])

    async def processes(self, origin: str) -> Others:
        """The others, the change sequence number, and whether this is a replica (with
        its replay lag)."""
        with mapped_errors(self.where):
            rows = await self.pool.fetch(
                "SELECT pid, roles, last_seen FROM processes WHERE origin != $1 AND "
                "last_seen >= $2 ORDER BY last_seen DESC", origin, time.time() - SEEN_WITHIN)
            async with self.pool.acquire() as conn:
                seq = await sequence(conn)
                standby = await conn.fetchrow(
                    "SELECT pg_is_in_recovery(), extract(epoch FROM now() - "
                    "pg_last_xact_replay_timestamp())")
        assert standby is not None
        return Others([{"pid": int(r[0]), "roles": list(json.loads(r[1])),
                        "last_seen": float(r[2])} for r in rows], seq, bool(standby[0]),
                      None if standby[1] is None else max(0.0, float(standby[1])))
