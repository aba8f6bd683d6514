"""The query actor's reads: each read request answered on its reply, by the store's
reads (chunks, counts, roots, processes) or by ``query.reads.IndexReads`` (files whole
or as lines from disk, the list of files, tags, a note's links and its neighbours, the
recent notes), which needs the catalog: those wait until it has loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from ..query.reads import IndexReads
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
    import anyio

    from ..core.catalog import Catalog
    from ..core.embedders import Embedder
    from ..store.protocols import LinkStore, ReadStore, RecordStore


class Reads:
    def __init__(self, *, reads: ReadStore, records: RecordStore, links: LinkStore,
                 catalog: Catalog, catalog_ready: anyio.Event) -> None:
        self._reader = reads
        self._records = records
        self._catalog_ready = catalog_ready
        self._index = IndexReads(reads=reads, records=records, links=links, catalog=catalog)

    async def answer(self, msg: ReadRequest, embedder: Embedder | None) -> None:
        """Answer one read on its reply (what raises is the caller's error to answer)."""
        index = self._index
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
                give(msg.reply, index.tags(msg.paths))
            case FilesRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await index.files(msg.root))
            case LinksRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await index.note_links(msg.path, msg.root))
            case NeighborsRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await index.neighbors(msg.path, msg.root, msg.depth))
            case FileRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await index.file(msg.path, msg.root))
            case LinesRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await index.lines(msg.path, msg.root, msg.start, msg.end,
                                                  msg.by_page))
            case RecentRequested():
                await self._catalog_ready.wait()
                give(msg.reply, await index.recent(msg.limit, msg.filters))
            case _:
                assert_never(msg)
