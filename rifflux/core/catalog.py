"""The catalog: every stored file as filters see it, and the links between files (the
link graph), kept in memory by the query actor.

A filtered search asks the catalog which files pass (``allowed``) before either
branch ranks anything; the answer is cached per set of filters until a file
changes, so an agent paging through one filtered search pays for it once.
"""

from __future__ import annotations

import os
import posixpath
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError, NotFoundError
from .filter_match import CompiledFilters
from .graph import LinkGraph

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .filters import FileEntry, Filters

_CACHED = 64


@dataclass(frozen=True, slots=True)
class Allowed:
    """The files a set of filters lets through, in the forms the branches use."""

    ids: frozenset[int]
    ordered: tuple[int, ...]  # sorted
    json: str  # for SQLite's json_each
    #: Of those files' chunks, only those in these languages (none: every chunk); each
    #: branch keeps them alone, as it keeps the files.
    langs: tuple[str, ...] = ()

    @classmethod
    def of(cls, ids: Iterable[int], langs: tuple[str, ...] = ()) -> Allowed:
        ordered = sorted(set(ids))
        return cls(frozenset(ordered), tuple(ordered),
                   "[" + ",".join(map(str, ordered)) + "]", langs)

    @property
    def langs_json(self) -> str:
        """``langs`` for SQLite's json_each."""
        return "[" + ",".join(f'"{code}"' for code in self.langs) + "]"

    @property
    def array(self) -> npt.NDArray[np.int64]:
        """The ids, sorted, as the matrix takes them (numpy: the semantic branch only)."""
        import numpy as np

        return np.asarray(self.ordered, dtype=np.int64)


class Catalog:
    def __init__(self) -> None:
        self.roots: dict[int, str] = {}
        self._files: dict[int, FileEntry] = {}
        self._by_path: dict[tuple[int, str], int] = {}  # (root id, relative path) -> id
        self._cache: OrderedDict[Filters, Allowed] = OrderedDict()
        self._places: dict[int, int] | None = None
        self._languages: frozenset[str] | None = None
        self._waiting: int | None = None
        self._kinds: frozenset[str] | None = None
        self.links = LinkGraph()

    def __len__(self) -> int:
        return len(self._files)

    def entries(self) -> Iterable[FileEntry]:
        return self._files.values()

    def replace(self, roots: dict[int, str], files: Iterable[FileEntry],
                edges: Iterable[tuple[int, int]] = ()) -> None:
        self.roots = dict(roots)
        self._files, self._by_path = {}, {}
        self._write(files)
        self.links.replace(edges)
        self._cache.clear()
        self._places = self._kinds = self._languages = self._waiting = None

    def update(self, roots: dict[int, str], written: Iterable[FileEntry],
               removed: Iterable[int], roots_removed: Iterable[int] = (),
               links: Iterable[tuple[int, Iterable[int]]] = ()) -> None:
        self.roots.update(roots)
        for root_id in roots_removed:
            self.roots.pop(root_id, None)
        self._write(written)
        removed = tuple(removed)
        for file_id in removed:
            gone = self._files.pop(file_id, None)
            if gone is not None:
                self._by_path.pop((gone.root_id, gone.rel_path), None)
        self.links.remove(removed)
        self.links.update(links)
        self._cache.clear()
        self._places = self._kinds = self._languages = self._waiting = None

    def _write(self, entries: Iterable[FileEntry]) -> None:
        for entry in entries:
            old = self._files.get(entry.id)
            if old is not None:  # moved (a root absorbed into its parent)
                self._by_path.pop((old.root_id, old.rel_path), None)
            self._files[entry.id] = entry
            self._by_path[(entry.root_id, entry.rel_path)] = entry.id

    def places(self) -> dict[int, int]:
        """Each file's place in the order equal scores are taken in: by path, then root
        (code points, as ``store.common.stable_order`` orders tied chunks), the same in
        every index of the same files, however they were built. The same object until
        the catalog changes (made on first use after a change)."""
        if self._places is None:
            ordered = sorted(self._files.values(),
                             key=lambda f: (f.rel_path, self.roots.get(f.root_id, "")))
            self._places = {entry.id: place for place, entry in enumerate(ordered)}
        return self._places

    def kinds(self) -> frozenset[str]:
        """The kinds of file the index holds (made on first use after a change)."""
        if self._kinds is None:
            self._kinds = frozenset(entry.kind for entry in self._files.values())
        return self._kinds

    def places_made(self) -> dict[int, int] | None:
        """``places`` when it is made already (None: not since the catalog changed): safe
        from a worker thread, since a made one is never changed, only replaced."""
        return self._places

    def languages(self) -> frozenset[str]:
        """The languages the stored chunks are written in (made on first use after a
        change)."""
        if self._languages is None:
            self._languages = frozenset().union(*(f.langs for f in self._files.values()))
        return self._languages

    def languages_pending(self) -> int:
        """How many stored chunks wait for their language (told after their file is
        committed, as vectors are): a ``lang`` filter cannot keep them yet, and the
        question's language is not preferred among them."""
        if self._waiting is None:
            self._waiting = sum(f.langs_pending for f in self._files.values())
        return self._waiting

    def backlink_count(self, root: str, rel_path: str) -> int:
        """How many other files link to this one (``root`` as results give it)."""
        root_id = next((rid for rid, path in self.roots.items() if path == root), None)
        file_id = self._by_path.get((root_id, rel_path)) if root_id is not None else None
        return 0 if file_id is None else self.links.backlinks(file_id)

    def locate(self, path: str, root_id: int | None = None) -> FileEntry:
        """The stored file at ``path`` (relative to a root, or absolute inside one; under
        ``root_id`` when given; the first root indexed when several hold it)."""
        for rid, rel in sorted(set(path_candidates(path, self.roots))):
            file_id = self._by_path.get((rid, rel))
            if file_id is not None and (root_id is None or rid == root_id):
                return self._files[file_id]
        raise NotFoundError(
            f"{path!r} is not an indexed note: give its `path` as search results give it "
            "(relative to its indexed folder, with `root` when several folders hold it) or "
            "an absolute path inside an indexed folder; a new file is known once its folder "
            "is reindexed")

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
        near = None
        if filters.near is not None:
            note = self.locate(filters.near, root_id)
            near = frozenset([note.id, *self.links.within(note.id, filters.depth)])
        compiled = CompiledFilters.compile(filters, root_id, near)
        result = Allowed.of((f.id for f in self._files.values() if compiled.matches(f)),
                            filters.langs)
        self._cache[filters] = result
        if len(self._cache) > _CACHED:
            self._cache.popitem(last=False)
        return result


def path_candidates(path: str, roots: dict[int, str]) -> list[tuple[int, str]]:
    """(root id, relative path) pairs ``path`` may name: a path relative to a root (any
    of them; ``..`` may not leave it), or an absolute path inside one."""
    if not isinstance(path, str) or not path.strip():
        raise InvalidArgumentError("path must be a file's path as search results give it")
    given = os.path.expanduser(path.strip())
    if os.path.isabs(given):
        out: list[tuple[int, str]] = []
        for spelling in dict.fromkeys([os.path.normpath(given), os.path.realpath(given)]):
            for rid, root in roots.items():
                if spelling.startswith(root.rstrip(os.sep) + os.sep):
                    out.append((rid, Path(spelling).relative_to(root).as_posix()))
        if not out:
            listing = ", ".join(sorted(roots.values())) or "none yet"
            raise InvalidArgumentError(
                f"{path} is outside every indexed folder ({listing}); give a path from "
                "search results, relative to its folder, or a path inside one of them")
        return out
    rel = posixpath.normpath(given.replace(os.sep, "/"))
    if rel == ".." or rel.startswith("../") or rel == ".":
        raise InvalidArgumentError(
            f"{path!r} leaves its indexed folder; give a path from search results")
    return [(rid, rel) for rid in roots]
