"""The indexed folders (roots), on the writer's connection, and one cache of the
``roots`` table: the rules, written once for both stores. Each store gives its
writer's connection (``statements.Writing``: its transactions and units of work)
and the steps it writes its own way (``Roots``' abstract methods: moving a root's
files under its parent, keeping the links).

Roots never overlap: a new root's check and insert are one transaction, and an
indexed folder inside a root being indexed is absorbed into it (its files keep
their chunks and vectors). The table is small and read whole: once per job
target (``load``), inside the transaction that makes a root, and when the change
log says another process added or removed one; this process's own changes keep
the cache as they go.

Every method that reads or writes the database is one unit of work
(``Writing.run``): the PostgreSQL store runs it again whole on a new connection
when the connection was lost.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar

from .statements import Writing, like_prefix
from .written import FILE_ENTRY_COLUMNS, Edges, Written, file_entry

#: ``mtime_ns`` of a file that must be read again (an upgrade of the index marks them;
#: ``stale_roots`` finds their roots).
STALE_MTIME = -1

#: What a store's writer found a write changed among the texts lacking vectors.
C = TypeVar("C")
P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R", bound="Roots[Any]")


class Tracking(Protocol[C]):
    """The writer's texts lacking vectors (``MissingStore``), as the removal of a root's
    files keeps them exact: inside the transaction, then after its commit."""

    async def inspect(self, removed: list[tuple[int, str]],
                      added: list[tuple[int, str, int]]) -> C: ...
    def committed(self, change: C) -> Written: ...


class _Inside(Exception):
    """A new root has meanwhile come inside another root: its transaction is undone."""


def _unit(method: Callable[Concatenate[R, P], Awaitable[T]],
          ) -> Callable[Concatenate[R, P], Coroutine[Any, Any, T]]:
    """A method run as one unit of work on the writer's connection (``Writing.run``)."""

    async def run(self: R, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._sql.run(lambda: method(self, *args, **kwargs))

    functools.update_wrapper(run, method)
    return run


class Roots(ABC, Generic[C]):
    """``RootsStore``: the cache and the rules; a store's subclass writes the rest."""

    def __init__(self, sql: Writing, missing: Tracking[C]) -> None:
        self._sql = sql
        self._missing = missing
        self._paths: dict[int, str] = {}

    # ------------------------------------------------------------ the cache

    @property
    def paths(self) -> Mapping[int, str]:
        """Each root's path by id, as last read (``load``) or written here."""
        return self._paths

    def entry(self, root_id: int) -> tuple[tuple[int, str], ...]:
        """``(id, path)`` of a root, for a commit's answer (empty when not known)."""
        path = self._paths.get(root_id)
        return () if path is None else ((root_id, path),)

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

    # ------------------------------------------------------------ the table

    @_unit
    async def load(self) -> None:
        """Read the table again (other processes may have changed it)."""
        await self._read()

    async def _read(self) -> None:
        rows = await self._sql.fetch("SELECT id, path FROM roots")
        self._paths = {int(r[0]): str(r[1]) for r in rows}

    @_unit
    async def root_id(self, root: Path) -> int | None:
        """The id of ``root``, made a root if it is not one yet; None when it has meanwhile
        come inside another root (another process indexed a parent folder: roots never
        overlap, so the check and the insert are one transaction, which reads the table
        afresh)."""
        found = self.find_root(root)
        if found is not None:
            return found
        try:
            async with self._sql.transaction():
                await self._read()
                found = self.find_root(root)
                if found is not None:
                    return found
                if self.root_containing(root) is not None:
                    raise _Inside
                rows = await self._sql.fetch(
                    "INSERT INTO roots(path) VALUES (?) RETURNING id", str(root))
        except _Inside:
            return None
        new = int(rows[0][0])
        self._paths[new] = str(root)
        return new

    @_unit
    async def stale_roots(self) -> list[Path]:
        """Roots holding files that must be read again (an upgrade of the index marks
        them), in the order they were first indexed."""
        rows = await self._sql.fetch(
            "SELECT path FROM roots r WHERE EXISTS (SELECT 1 FROM files f "
            "WHERE f.root_id = r.id AND f.mtime_ns = ?) ORDER BY id", STALE_MTIME)
        return [Path(str(r[0])) for r in rows]

    @_unit
    async def absorb(self, parent_id: int, child_id: int, prefix: str) -> Written:
        """Move a root's files under a root that contains it (``prefix`` is the child's
        path in the parent, with a trailing ``/``): stored once, vectors and chunks kept.
        One transaction: no process ever sees the files in both roots, or the child root
        without its files."""
        async with self._sql.transaction():
            await self._move_files(parent_id, child_id, prefix)
            change, gone, dropped = await self._drop_root(child_id)
            edges = await self._rekey_links(parent_id)
            rows = await self._sql.fetch(
                f"SELECT {FILE_ENTRY_COLUMNS} FROM files "
                f"WHERE root_id = ? AND rel_path {self._sql.dialect.like}",
                parent_id, like_prefix(prefix))
        self._paths.pop(child_id, None)
        return replace(self._missing.committed(change), files=tuple(map(file_entry, rows)),
                       files_removed=gone, roots=self.entry(parent_id),
                       roots_removed=(child_id,),
                       links=dropped + edges)  # in the order they were written

    @_unit
    async def forget_root(self, root_id: int) -> Written:
        """Remove a root and everything under it, in one transaction."""
        async with self._sql.transaction():
            change, gone, edges = await self._drop_root(root_id)
        self._paths.pop(root_id, None)
        return replace(self._missing.committed(change), files_removed=gone, links=edges,
                       roots_removed=(root_id,))

    async def _drop_root(self, root_id: int) -> tuple[C, tuple[int, ...], Edges]:
        """Inside a transaction: delete the files still under a root, and the root; the
        change, the ids of the files gone, and the links resolved again."""
        removed = [(int(r[0]), str(r[1])) for r in await self._sql.fetch(
            "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE root_id = ?) "
            "RETURNING id, content_hash", root_id)]
        gone = tuple(int(r[0]) for r in await self._sql.fetch(
            "DELETE FROM files WHERE root_id = ? RETURNING id", root_id))
        change = await self._missing.inspect(removed, [])
        edges = await self._forget_links(root_id, gone)
        await self._sql.execute("DELETE FROM roots WHERE id = ?", root_id)
        return change, gone, edges

    # ------------------------------------------------------------ each store's own

    @abstractmethod
    async def _move_files(self, parent_id: int, child_id: int, prefix: str) -> None:
        """Inside ``absorb``'s transaction: the child root's files moved under the parent
        (``prefix`` before their paths), but for those whose new path the parent already
        has: they stay behind, and are dropped with the child."""

    @abstractmethod
    async def _rekey_links(self, root_id: int) -> Edges:
        """Inside a transaction, after files moved into this root: every link key in it
        made again, every link resolved again (the store's ``rekey_links``)."""

    @abstractmethod
    async def _forget_links(self, root_id: int, gone: Collection[int]) -> Edges:
        """Inside a transaction, after these files of the root were deleted: the links
        that resolved to them resolved again (the store's ``forget_links``)."""
