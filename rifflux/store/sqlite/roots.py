"""The indexed folders (roots), on the writer's connection, and one cache of the
``roots`` table.

Roots never overlap: a new root's check and insert are one transaction, and an
indexed folder inside a root being indexed is absorbed into it (its files keep
their chunks and vectors). The table is small and read whole: once per job
target (``load``), inside the transaction that makes a root, and when the change
log says another process added or removed one; this process's own changes keep
the cache as they go.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import aiosqlite

from ..written import FILE_ENTRY_COLUMNS, Edges, Written, file_entry
from .link_index import forget_links, rekey_links
from .missing import Change, Missing, like_prefix
from .schema import STALE_MTIME
from .sql import mapped_errors, transaction


class _Inside(Exception):
    """A new root has meanwhile come inside another root: its transaction is undone."""


class Roots:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path, missing: Missing) -> None:
        self.conn = conn
        self.db_path = db_path
        self._missing = missing
        self._paths: dict[int, str] = {}

    @property
    def paths(self) -> Mapping[int, str]:
        """Each root's path by id, as last read (``load``) or written here."""
        return self._paths

    def entry(self, root_id: int) -> tuple[tuple[int, str], ...]:
        """``(id, path)`` of a root, for a commit's answer (empty when not known)."""
        path = self._paths.get(root_id)
        return () if path is None else ((root_id, path),)

    async def load(self) -> None:
        """Read the table again (other processes may have changed it)."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall("SELECT id, path FROM roots")
        self._paths = {int(r[0]): str(r[1]) for r in rows}

    async def root_id(self, root: Path) -> int | None:
        """The id of ``root``, made a root if it is not one yet; None when it has meanwhile
        come inside another root (another process indexed a parent folder: roots never
        overlap, so the check and the insert are one transaction, which reads the table
        afresh)."""
        found = self.find_root(root)
        if found is not None:
            return found
        with mapped_errors(self.db_path):
            try:
                async with transaction(self.conn):
                    rows = await self.conn.execute_fetchall("SELECT id, path FROM roots")
                    self._paths = {int(r[0]): str(r[1]) for r in rows}
                    found = self.find_root(root)
                    if found is not None:
                        return found
                    if self.root_containing(root) is not None:
                        raise _Inside
                    cur = await self.conn.execute(
                        "INSERT INTO roots(path) VALUES (?) RETURNING id", (str(root),))
                    row = await cur.fetchone()
                    assert row is not None
            except _Inside:
                return None
        self._paths[int(row[0])] = str(root)
        return int(row[0])

    def find_root(self, root: Path) -> int | None:
        """The id of an indexed root (None: not indexed; nothing is created)."""
        wanted = str(root)
        return next((rid for rid, path in self._paths.items() if path == wanted), None)

    def root_containing(self, folder: Path) -> tuple[int, Path] | None:
        """The indexed root (id, path) that ``folder`` is strictly inside, if any (roots
        never overlap, so there is at most one)."""
        for rid, path in self._paths.items():
            root = Path(path)
            if root in folder.parents:
                return rid, root
        return None

    def roots_inside(self, root: Path) -> list[tuple[int, Path]]:
        """Indexed roots strictly inside ``root``."""
        prefix = str(root).rstrip("/") + "/"
        return [(rid, Path(path)) for rid, path in self._paths.items()
                if path.startswith(prefix)]

    async def stale_roots(self) -> list[Path]:
        """Roots holding files that must be read again (an upgrade of the index marks
        them), in the order they were first indexed."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT path FROM roots r WHERE EXISTS (SELECT 1 FROM files f "
                "WHERE f.root_id = r.id AND f.mtime_ns = ?) ORDER BY id", (STALE_MTIME,))
        return [Path(str(r[0])) for r in rows]

    async def absorb(self, parent_id: int, child_id: int, prefix: str) -> Written:
        """Move a root's files under a root that contains it (``prefix`` is the child's
        path in the parent, with a trailing ``/``): stored once, vectors and chunks kept.
        One transaction: no process ever sees the files in both roots, or the child root
        without its files."""
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                await self.conn.execute(
                    "UPDATE OR IGNORE files SET root_id = ?, rel_path = ? || rel_path "
                    "WHERE root_id = ?", (parent_id, prefix, child_id))
                # files the parent already had at the same path stay behind: dropped
                change, gone, dropped = await self._drop_root(child_id)
                edges = await rekey_links(self.conn, parent_id)
                rows = await self.conn.execute_fetchall(
                    f"SELECT {FILE_ENTRY_COLUMNS} FROM files "
                    "WHERE root_id = ? AND rel_path LIKE ? ESCAPE '\\'",
                    (parent_id, like_prefix(prefix)))
        self._paths.pop(child_id, None)
        return replace(self._missing.committed(change), files=tuple(map(file_entry, rows)),
                       files_removed=gone, roots=self.entry(parent_id),
                       roots_removed=(child_id,),
                       links=dropped + edges)  # in the order they were written

    async def forget_root(self, root_id: int) -> Written:
        """Remove a root and everything under it, in one transaction."""
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                change, gone, edges = await self._drop_root(root_id)
        self._paths.pop(root_id, None)
        return replace(self._missing.committed(change), files_removed=gone, links=edges,
                       roots_removed=(root_id,))

    async def _drop_root(self, root_id: int) -> tuple[Change, tuple[int, ...], Edges]:
        """Inside a transaction: delete the files still under a root, and the root; the
        change, the ids of the files gone, and the links resolved again."""
        cur = await self.conn.execute(
            "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE root_id = ?) "
            "RETURNING id, content_hash", (root_id,))
        removed = [(int(r[0]), str(r[1])) for r in await cur.fetchall()]
        cur = await self.conn.execute("DELETE FROM files WHERE root_id = ? RETURNING id",
                                      (root_id,))
        gone = tuple(int(r[0]) for r in await cur.fetchall())
        change = await self._missing.inspect(removed, [])
        edges = await forget_links(self.conn, root_id, gone)
        await self.conn.execute("DELETE FROM roots WHERE id = ?", (root_id,))
        return change, gone, edges
