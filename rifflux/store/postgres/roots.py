"""The indexed folders (roots) on the PostgreSQL writer's connection, and one cache of
them: the rules of ``store.sqlite.roots`` (roots never overlap; a new root's check
and insert are one transaction; an indexed folder inside a root being indexed is
absorbed into it, its files keeping their chunks and vectors)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..written import FILE_ENTRY_COLUMNS, Edges, Written, file_entry
from .connection import Connection, mapped_errors, transaction
from .links import forget_links, rekey_links
from .missing import Change, Missing, like_prefix
from .session import Session, retried

#: ``mtime_ns`` of a file that must be read again (after an upgrade).
STALE_MTIME = -1


class _Inside(Exception):
    """A new root has meanwhile come inside another root: its transaction is undone."""


class Roots:
    def __init__(self, session: Session, missing: Missing) -> None:
        self.session = session
        self.where = session.where
        self._missing = missing
        self._paths: dict[int, str] = {}

    @property
    def conn(self) -> Connection:
        return self.session.conn

    @property
    def paths(self) -> Mapping[int, str]:
        return self._paths

    def entry(self, root_id: int) -> tuple[tuple[int, str], ...]:
        path = self._paths.get(root_id)
        return () if path is None else ((root_id, path),)

    @retried()
    async def load(self) -> None:
        with mapped_errors(self.where):
            rows = await self.conn.fetch("SELECT id, path FROM roots")
        self._paths = {int(r[0]): str(r[1]) for r in rows}

    @retried()
    async def root_id(self, root: Path) -> int | None:
        found = self.find_root(root)
        if found is not None:
            return found
        with mapped_errors(self.where):
            try:
                async with transaction(self.conn):
                    rows = await self.conn.fetch("SELECT id, path FROM roots")
                    self._paths = {int(r[0]): str(r[1]) for r in rows}
                    found = self.find_root(root)
                    if found is not None:
                        return found
                    if self.root_containing(root) is not None:
                        raise _Inside
                    new = int(await self.conn.fetchval(
                        "INSERT INTO roots(path) VALUES ($1) RETURNING id", str(root)))
            except _Inside:
                return None
        self._paths[new] = str(root)
        return new

    def find_root(self, root: Path) -> int | None:
        wanted = str(root)
        return next((rid for rid, path in self._paths.items() if path == wanted), None)

    def root_containing(self, folder: Path) -> tuple[int, Path] | None:
        for rid, path in self._paths.items():
            root = Path(path)
            if root in folder.parents:
                return rid, root
        return None

    def roots_inside(self, root: Path) -> list[tuple[int, Path]]:
        prefix = str(root).rstrip("/") + "/"
        return [(rid, Path(path)) for rid, path in self._paths.items()
                if path.startswith(prefix)]

    @retried()
    async def stale_roots(self) -> list[Path]:
        with mapped_errors(self.where):
            rows = await self.conn.fetch(
                "SELECT path FROM roots r WHERE EXISTS (SELECT 1 FROM files f "
                "WHERE f.root_id = r.id AND f.mtime_ns = $1) ORDER BY id", STALE_MTIME)
        return [Path(str(r[0])) for r in rows]

    @retried()
    async def absorb(self, parent_id: int, child_id: int, prefix: str) -> Written:
        with mapped_errors(self.where):
            async with transaction(self.conn):
                # files the parent already has at the same path stay behind: dropped
                await self.conn.execute(
                    "UPDATE files f SET root_id = $1, rel_path = $2 || f.rel_path "
                    "WHERE f.root_id = $3 AND NOT EXISTS (SELECT 1 FROM files p WHERE "
                    "p.root_id = $1 AND p.rel_path = $2 || f.rel_path)",
                    parent_id, prefix, child_id)
                change, gone, dropped = await self._drop_root(child_id)
                edges = await rekey_links(self.conn, parent_id)
                rows = await self.conn.fetch(
                    f"SELECT {FILE_ENTRY_COLUMNS} FROM files "
                    "WHERE root_id = $1 AND rel_path LIKE $2", parent_id, like_prefix(prefix))
        self._paths.pop(child_id, None)
        return replace(self._missing.committed(change), files=tuple(map(file_entry, rows)),
                       files_removed=gone, roots=self.entry(parent_id),
                       roots_removed=(child_id,), links=dropped + edges)

    @retried()
    async def forget_root(self, root_id: int) -> Written:
        with mapped_errors(self.where):
            async with transaction(self.conn):
                change, gone, edges = await self._drop_root(root_id)
        self._paths.pop(root_id, None)
        return replace(self._missing.committed(change), files_removed=gone, links=edges,
                       roots_removed=(root_id,))

    async def _drop_root(self, root_id: int) -> tuple[Change, tuple[int, ...], Edges]:
        """Inside a transaction: delete the files still under a root, and the root."""
        rows = await self.conn.fetch(
            "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE root_id = $1) "
            "RETURNING id, content_hash", root_id)
        removed = [(int(r[0]), str(r[1])) for r in rows]
        gone = tuple(int(r[0]) for r in await self.conn.fetch(
            "DELETE FROM files WHERE root_id = $1 RETURNING id", root_id))
        change = await self._missing.inspect(removed, [])
        edges = await forget_links(self.conn, root_id, gone)
        await self.conn.execute("DELETE FROM roots WHERE id = $1", root_id)
        return change, gone, edges
