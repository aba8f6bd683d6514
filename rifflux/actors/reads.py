"""The query actor's reads: chunks, files (whole, or lines from disk, or the list of them),
tags, counts, roots, a note's links and its neighbours.

Files are found through the catalog's roots, by their indexed path only; lines
are read from the file as it is on disk now, in a worker thread. Neighbours come
from the catalog's link graph, links from the index.
"""

from __future__ import annotations

import heapq
from collections import Counter
from typing import TYPE_CHECKING, assert_never

import anyio

from ..core.catalog import Catalog
from ..core.filters import CompiledFilters, FileEntry, Filters, make_filters
from ..note_types import RecentNote
from ..store.common import Located, iso_utc
from ..store.protocols import LinkStore, ReadStore, RecordStore
from ..types import FileLines, Neighbor, NoteLinks, TagCount
from .messages import (
    ChunkRequested,
    CountsRequested,
    FileRequested,
    FilesRequested,
    LinesRequested,
    LinksRequested,
    NeighborsRequested,
    ProcessesRequested,
    ReadRequest,
    RecentRequested,
    RootCountsRequested,
    RootsRequested,
    TagsRequested,
    give,
)

if TYPE_CHECKING:  # (the model's module is loaded with the model)
    from ..core.embedders import Embedder


class Reads:
    def __init__(self, *, reads: ReadStore, records: RecordStore, links: LinkStore,
                 catalog: Catalog, catalog_ready: anyio.Event) -> None:
        self._reader = reads
        self._records = records
        self._links = links
        self._catalog = catalog
        self._catalog_ready = catalog_ready

    async def answer(self, msg: ReadRequest, embedder: Embedder | None) -> None:
        """Answer one read on its reply (what raises is the caller's error to answer)."""
        match msg:
            case ChunkRequested():
                give(msg.reply, await self._records.chunk(msg.chunk_id))
            case RootsRequested():
                give(msg.reply, await self._reader.roots())
            case RootCountsRequested():
                give(msg.reply, await self._reader.root_counts())
            case ProcessesRequested():
                give(msg.reply, await self._reader.processes(msg.origin))
            case CountsRequested():
                give(msg.reply, await self._reader.counts(embedder.label if embedder else None))
            case TagsRequested():
                await self._catalog_ready.wait()
                give(msg.reply, self._tags(msg.paths))
            case FilesRequested():
                await self._catalog_ready.wait()
                root_id = None if msg.root is None else self._catalog.resolve_root(msg.root)
                give(msg.reply, await self._reader.files(root_id))
            case LinksRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await self._note_links(msg.path, msg.root))
            case NeighborsRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await self._neighbors(msg.path, msg.root, msg.depth))
            case FileRequested():
                await self._catalog_ready.wait()
                located = await self._locate(msg.path, msg.root)
                give(msg.reply, None if located is None else await self._records.file(located))
            case LinesRequested():
                await self._catalog_ready.wait()
                located = await self._locate(msg.path, msg.root)
                give(msg.reply, None if located is None
                     else await self._lines(located, msg.start, msg.end, msg.by_page))
            case RecentRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await self._recent(msg.limit, msg.filters))
            case _:
                assert_never(msg)

    async def _locate(self, path: str, root: str | None) -> Located | None:
        root_id = self._catalog.resolve_root(root) if root is not None else None
        return await self._records.locate(path, self._catalog.roots, root_id)

    async def _lines(self, located: Located, start: int | None, end: int | None,
                     by_page: bool) -> FileLines:
        from ..core.extract.reading import read_span  # (a search never reads from disk)

        span = await anyio.to_thread.run_sync(
            lambda: read_span(located.disk_path, start, end, by_page=by_page))
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

    async def _note_links(self, path: str, root: str | None) -> NoteLinks:
        note = self._note(path, root)
        return await self._links.of(note.id, note.rel_path, self._catalog.roots[note.root_id])

    async def _neighbors(self, path: str, root: str | None, depth: int) -> list[Neighbor]:
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

    async def _recent(self, limit: int, filters: Filters) -> list[RecentNote]:
        """The notes changed most recently (their mtime as indexed), newest first."""
        allowed = self._catalog.allowed(filters)
        entries = (e for e in self._catalog.entries() if allowed is None or e.id in allowed.ids)
        newest = heapq.nlargest(limit, entries, key=lambda e: (e.mtime_ns, e.rel_path))
        titles = await self._links.notes([e.id for e in newest])
        return [{"path": e.rel_path, "root": self._catalog.roots[e.root_id],
                 "title": titles[e.id][1], "modified": iso_utc(e.mtime_ns),
                 "tags": sorted(e.tags)} for e in newest if e.id in titles]

    def _tags(self, paths: tuple[str, ...]) -> list[TagCount]:
        """Every tag with the number of files that carry it (a nested tag counts for each
        of its levels, as filters see it), most used first."""
        compiled = CompiledFilters.compile(make_filters(paths=paths), None) if paths else None
        counts: Counter[str] = Counter()
        for entry in self._catalog.entries():
            if compiled is None or compiled.matches(entry):
                counts.update(entry.tags)
        return [{"tag": tag, "files": n}
                for tag, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]

