"""What status and the ``files`` listing read of an index, written once for both stores
on a store's ``Statements``: the index's counts, each root's, the files with their
chunk counts, the roots. The rest of a store's reads (``ReadStore``: rows, the
catalog, the other processes) is its own; its reader is a ``Listings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .common import iso_utc, title_of

if TYPE_CHECKING:
    from ..types import Counts, IndexedFile, RootCount
    from .statements import Statements


class Listings:
    """The counts and lists of ``ReadStore``."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql

    async def counts(self, model: str | None) -> tuple[Counts, str | None]:
        """The index's counts; vectors are counted for ``model``, or when it is None (not
        loaded yet) for the model the index was last embedded with. Returns the counts
        and the model they were counted for."""
        if model is None:
            rows = await self._sql.fetch("SELECT value FROM meta WHERE key = 'embedding_model'")
            model = str(rows[0][0]) if rows else None
        row = (await self._sql.fetch(
            "SELECT (SELECT COUNT(*) FROM files), (SELECT COUNT(*) FROM chunks), "
            "(SELECT COUNT(*) FROM embeddings WHERE model = ?), "
            "(SELECT COUNT(DISTINCT content_hash) FROM chunks c WHERE NOT EXISTS "
            " (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash "
            "  AND e.model = ?)), (SELECT COUNT(*) FROM roots), "
            "(SELECT COUNT(*) FROM links), "
            "(SELECT COUNT(*) FROM links WHERE target_file_id IS NULL)",
            model or "", model or ""))[0]
        counts: Counts = {
            "files": int(row[0]),
            "chunks": int(row[1]),
            "embeddings": int(row[2]),
            "pending_embeddings": int(row[3]),
            "roots": int(row[4]),
            "links": int(row[5]),
            "unresolved_links": int(row[6]),
        }
        return counts, model

    async def root_counts(self) -> list[RootCount]:
        """Every root with its file and chunk counts, in the order they were indexed, and
        by kind of file (how many of its files hold no text: a scanned PDF's)."""
        rows = await self._sql.fetch(
            "SELECT r.path, f.kind, COUNT(f.id), COALESCE(SUM(f.n), 0), "
            "COALESCE(SUM(CASE WHEN f.n = 0 THEN 1 ELSE 0 END), 0) FROM roots r "
            "LEFT JOIN (SELECT f.root_id, f.id, f.kind, (SELECT COUNT(*) FROM chunks c "
            " WHERE c.file_id = f.id) AS n FROM files f) f ON f.root_id = r.id "
            "GROUP BY r.id, r.path, f.kind ORDER BY r.id, f.kind")
        out: dict[str, RootCount] = {}
        for r in rows:
            root = out.setdefault(str(r[0]), {"path": str(r[0]), "files": 0, "chunks": 0,
                                              "kinds": {}})
            root["files"] += int(r[2])
            root["chunks"] += int(r[3])
            if r[1] is not None:  # (a root without files has no kind)
                root["kinds"][str(r[1])] = {"files": int(r[2]), "chunks": int(r[3]),
                                            "without_text": int(r[4])}
        return list(out.values())

    async def files(self, root_id: int | None = None) -> list[IndexedFile]:
        """The files the index holds (of one root, when given) with their chunk counts, by
        root in the order they were indexed, then path (by code point, on either store)."""
        where, params = ("WHERE f.root_id = ? ", (root_id,)) if root_id is not None else ("", ())
        rows = await self._sql.fetch(
            "SELECT f.rel_path, r.path, f.title, f.mtime_ns, "
            "(SELECT COUNT(*) FROM chunks c WHERE c.file_id = f.id), f.kind "
            f"FROM files f JOIN roots r ON r.id = f.root_id {where}"
            f"ORDER BY r.id, f.rel_path COLLATE {self._sql.dialect.bytewise}", *params)
        return [{"path": str(r[0]), "root": str(r[1]), "title": title_of(r[2], str(r[0])),
                 "modified": iso_utc(int(r[3])), "chunks": int(r[4]), "kind": str(r[5])}
                for r in rows]

    async def roots(self) -> list[str]:
        """Every root's path, in the order they were indexed."""
        return [str(r[0]) for r in await self._sql.fetch("SELECT path FROM roots ORDER BY id")]
