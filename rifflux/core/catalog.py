"""The catalog: every stored file as filters see it, kept in memory by the query actor.

A filtered search asks the catalog which files pass (``allowed``) before either
branch ranks anything; the answer is cached per set of filters until a file
changes, so an agent paging through one filtered search pays for it once.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import InvalidArgumentError
from .filters import CompiledFilters, FileEntry, Filters

_CACHED = 64


@dataclass(frozen=True, slots=True)
class Allowed:
    """The files a set of filters lets through, in the forms the branches use."""

    ids: frozenset[int]
    array: npt.NDArray[np.int64]  # sorted
    json: str  # for SQLite's json_each

    @classmethod
    def of(cls, ids: Iterable[int]) -> Allowed:
        ordered = sorted(set(ids))
        return cls(frozenset(ordered), np.asarray(ordered, dtype=np.int64),
                   "[" + ",".join(map(str, ordered)) + "]")


class Catalog:
    def __init__(self) -> None:
        self.roots: dict[int, str] = {}
        self._files: dict[int, FileEntry] = {}
        self._cache: OrderedDict[Filters, Allowed] = OrderedDict()

    def __len__(self) -> int:
        return len(self._files)

    def entries(self) -> Iterable[FileEntry]:
        return self._files.values()

    def replace(self, roots: dict[int, str], files: Iterable[FileEntry]) -> None:
        self.roots = dict(roots)
        self._files = {f.id: f for f in files}
        self._cache.clear()

    def update(self, roots: dict[int, str], written: Iterable[FileEntry],
               removed: Iterable[int], roots_removed: Iterable[int] = ()) -> None:
        self.roots.update(roots)
        for root_id in roots_removed:
            self.roots.pop(root_id, None)
        for entry in written:
            self._files[entry.id] = entry
        for file_id in removed:
            self._files.pop(file_id, None)
        self._cache.clear()

    def resolve_root(self, root: str) -> int:
        """The id of the root a caller named: its absolute path, or the folder's name when
        only one root has that name."""
        by_path = {os.path.normpath(path): rid for rid, path in self.roots.items()}
        wanted = os.path.normpath(os.path.expanduser(root))
        if os.path.isabs(wanted):
            if wanted in by_path:
                return by_path[wanted]
            real = os.path.realpath(wanted)
            if real in by_path:
                return by_path[real]
        else:
            named = [rid for path, rid in by_path.items() if os.path.basename(path) == wanted]
            if len(named) == 1:
                return named[0]
            if len(named) > 1:
                raise InvalidArgumentError(
                    f"root {root!r} names {len(named)} indexed folders: "
                    f"{', '.join(sorted(self.roots[r] for r in named))}; give its absolute path")
        listing = ", ".join(sorted(self.roots.values())) or "none yet (reindex a folder first)"
        raise InvalidArgumentError(f"root {root!r} is not an indexed folder; the indexed "
                                   f"folders are: {listing}")

    def allowed(self, filters: Filters) -> Allowed | None:
        """The files that pass ``filters`` (None: no filter, every file)."""
        if not filters.active:
            return None
        cached = self._cache.get(filters)
        if cached is not None:
            self._cache.move_to_end(filters)
            return cached
        root_id = self.resolve_root(filters.root) if filters.root is not None else None
        compiled = CompiledFilters.compile(filters, root_id)
        result = Allowed.of(f.id for f in self._files.values() if compiled.matches(f))
        self._cache[filters] = result
        if len(self._cache) > _CACHED:
            self._cache.popitem(last=False)
        return result
