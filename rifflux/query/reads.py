"""The reads of an index against its catalog of files: a file by its path (whole, or
lines as on disk now), a note's links and its neighbours, the notes changed most
recently, the tags, the files.

Files are found through the catalog's roots, by their indexed path only; lines are read
from the file as it is on disk now (in a worker thread where an event loop runs: the
query actor's; here, in a one-shot read). Neighbours come from the catalog's link
graph, links from the index. The caller loads the catalog before asking: the query
actor waits for its own; a one-shot read (``rifflux.direct``) reads it whole first.
"""

from __future__ import annotations

import heapq
from collections import Counter
from typing import TYPE_CHECKING

from ..core.filter_match import CompiledFilters
from ..core.filters import make_filters
from ..store.common import iso_utc

if TYPE_CHECKING:
    from ..core.catalog import Catalog
    from ..core.extract.reading import Span
    from ..core.filters import FileEntry, Filters
    from ..note_types import RecentNote
    from ..store.common import Located
    from ..store.protocols import LinkStore, ReadStore, RecordStore
    from ..types import FileLines, FileRecord, IndexedFile, Neighbor, NoteLinks, TagCount

__all__ = ["IndexReads"]


class IndexReads:
    """The reads that need the catalog (``catalog``, loaded by the caller), over a store's
    ``reads``, ``records`` and ``links``. ``in_thread``: lines are read from disk in a
    worker thread (anyio's), not in the calling one."""

    def __init__(self, *, reads: ReadStore, records: RecordStore, links: LinkStore,
                 catalog: Catalog, in_thread: bool = True) -> None:
        self._reader = reads
        self._records = records
        self._links = links
        self._catalog = catalog
        self._in_thread = in_thread

    async def file(self, path: str, root: str | None) -> FileRecord | None:
        """A stored file with its chunks (None: the index holds no file there)."""
        located = await self._locate(path, root)
        return None if located is None else await self._records.file(located)

    async def lines(self, path: str, root: str | None, start: int | None, end: int | None,
                    by_page: bool) -> FileLines | None:
        """Lines (or pages) of a stored file as they are on disk now."""
        located = await self._locate(path, root)
        return None if located is None else await self._lines(located, start, end, by_page)

    async def files(self, root: str | None) -> list[IndexedFile]:
        """The files the index holds (of one root, named by path or by name)."""
        root_id = None if root is None else self._catalog.resolve_root(root)
        return await self._reader.files(root_id)

    async def _locate(self, path: str, root: str | None) -> Located | None:
        root_id = self._catalog.resolve_root(root) if root is not None else None
        return await self._records.locate(path, self._catalog.roots, root_id)

    async def _lines(self, located: Located, start: int | None, end: int | None,
                     by_page: bool) -> FileLines:
        from ..core.extract.reading import read_span  # (a search never reads from disk)

        def read() -> Span:
            return read_span(located.disk_path, start, end, by_page=by_page)

        if self._in_thread:
            import anyio

            span = await anyio.to_thread.run_sync(read)
        else:
            span = read()
        sha = span.sha256
        out: FileLines = {"path": located.rel_path, "root": located.root,
                          "start_line": span.first, "end_line": span.last,
                          "total_lines": span.total, "text": span.text, "sha256": sha}
        if span.unit != "line":
            out["unit"] = span.unit
        if span.pages is not None:
            out["start_page"], out["end_page"], out["total_pages"] = span.pages
        if sha != located.sha256:  # the hits' line numbers are of the text indexed
            out["changed_since_indexed"] = True
        if located.other_roots:
            out["other_roots"] = list(located.other_roots)
        return out

    def _note(self, path: str, root: str | None) -> FileEntry:
        root_id = self._catalog.resolve_root(root) if root is not None else None
        return self._catalog.locate(path, root_id)

    async def note_links(self, path: str, root: str | None) -> NoteLinks:
        """A note's links, both ways."""
        note = self._note(path, root)
        return await self._links.of(note.id, note.rel_path, self._catalog.roots[note.root_id])

    async def neighbors(self, path: str, root: str | None, depth: int) -> list[Neighbor]:
        """The notes at most ``depth`` links away, either way: nearest first, then by
        path."""
        note = self._note(path, root)
        near = self._catalog.links.within(note.id, depth)  # (checked)
        notes = await self._links.notes(near)
        folder = self._catalog.roots[note.root_id]  # (links resolve within their folder)
        found: list[Neighbor] = [{"path": notes[i][0], "title": notes[i][1], "distance": d,
                                  "root": folder}
                                 for i, d in near.items() if i in notes]  # deleted since
        found.sort(key=lambda n: (n["distance"], n["path"]))
        return found

    async def recent(self, limit: int, filters: Filters) -> list[RecentNote]:
        """The notes changed most recently (their mtime as indexed), newest first."""
        allowed = self._catalog.allowed(filters)
        entries = (e for e in self._catalog.entries() if allowed is None or e.id in allowed.ids)
        newest = heapq.nlargest(limit, entries, key=lambda e: (e.mtime_ns, e.rel_path))
        titles = await self._links.notes([e.id for e in newest])
        return [{"path": e.rel_path, "root": self._catalog.roots[e.root_id],
                 "title": titles[e.id][1], "modified": iso_utc(e.mtime_ns),
                 "tags": sorted(e.tags)} for e in newest if e.id in titles]

    def tags(self, paths: tuple[str, ...]) -> list[TagCount]:
        """Every tag with the number of files that carry it (a nested tag counts for each
        of its levels, as filters see it), most used first."""
        compiled = CompiledFilters.compile(make_filters(paths=paths), None) if paths else None
        counts: Counter[str] = Counter()
        for entry in self._catalog.entries():
            if compiled is None or compiled.matches(entry):
                counts.update(entry.tags)
        return [{"tag": tag, "files": n}
                for tag, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
