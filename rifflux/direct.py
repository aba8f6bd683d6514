"""``DirectIndex``: an SQLite index read in the calling thread, for a one-shot command
that only reads (``rifflux search --mode lexical`` and the reading commands): the query
actor's reads and ranking, the same functions (``store.sqlite.direct``'s reads,
``rifflux.query``'s ranking, the catalog filters are resolved against), with no
actors, no event loop, no model and no writes. Its coroutines never wait for anything:
``run_now`` runs them.

What it cannot do exactly as ``Rifflux`` does is left to ``Rifflux``: a search by
meaning, a PostgreSQL index, an index the store's opening would change first
(``open_direct`` says None), and whatever a command does not hand it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.filters import check_depth, make_filters
from .core.hypothesis import checked_hypothesis
from .errors import InvalidArgumentError
from .query.asked import SearchShape, checked_mode, checked_span, described
from .query.loaded import Loaded
from .query.ranking import Ranking
from .query.reads import IndexReads
from .store.sqlite.direct import open_direct, run_now
from .store.sqlite.lexical import lexical_plan

if TYPE_CHECKING:
    from .config import Settings
    from .core.catalog import Catalog
    from .core.filters import Filters
    from .store.sqlite.direct import DirectStore
    from .types import (
        ChunkDetail,
        Counts,
        EmbeddingServerStatus,
        FileLines,
        FileRecord,
        IndexedFile,
        Neighbor,
        NoteLinks,
        SearchExplain,
        SearchResult,
        TagCount,
    )

__all__ = ["DirectIndex", "open_index", "run_now"]


@contextmanager
def open_index(settings: Settings) -> Iterator[DirectIndex | None]:
    """The index of ``settings`` open in this thread, closed on the way out; None: it is
    not an SQLite file that can be read directly now (``store.sqlite.direct``), and
    ``Rifflux`` opens it."""
    where = settings.db_path
    if not isinstance(where, Path):  # (a PostgreSQL database)
        yield None
        return
    with open_direct(settings, where.expanduser().resolve()) as store:
        yield None if store is None else DirectIndex(store, rrf_k=settings.rrf_k)


class DirectIndex:
    """What a one-shot read asks of an index, answered as ``Rifflux`` answers it: a
    lexical search (and what its answer says: ``answers.Searched``) and the reads. No
    model is loaded: ``embedding_model`` and ``pending_embeddings()`` are None, as they
    are in a one-shot ``Rifflux`` that searches by words."""

    def __init__(self, store: DirectStore, *, rrf_k: int) -> None:
        self._store = store
        self._catalog_ready = threading.Event()
        self._loaded = Loaded(catalog_ready=self._catalog_ready)
        self._ranking = Ranking(rows=store.reads, copies=store.copies, lexical=store.lexical,
                                loaded=self._loaded, rrf_k=rrf_k)
        self._index_reads: IndexReads | None = None

    @property
    def where(self) -> str:
        """The index file."""
        return self._store.where

    # ------------------------------------------------------------ search

    async def search_filtered(
        self, query: str, filters: Filters, top_k: int = 10, mode: str = "lexical", *,
        max_per_file: int | None = None, content: str = "full", explain: bool = False,
        snippet_chars: int = 240, duplicates: str = "collapse", hypothesis: str | None = None,
        rerank: bool | None = None,
    ) -> list[SearchResult]:
        """``Rifflux.search_filtered``, by words only (``mode`` lexical). The files that
        pass ``filters`` come from the catalog, read whole first (as the query actor's
        filtered searches wait for it): its hits then have their ``backlink_count``."""
        checked = checked_mode(query, top_k, mode)
        checked_hypothesis(hypothesis, checked)  # (a lexical search takes none: says so)
        shape = SearchShape.checked(max_per_file=max_per_file, content=content,
                                    explain=explain, snippet_chars=snippet_chars,
                                    duplicates=duplicates, rerank=self.reranks(rerank))
        if checked != "lexical":
            raise InvalidArgumentError(f"a direct read searches by words only (lexical), not "
                                       f"{checked}: open the index with Rifflux to search by "
                                       "meaning")
        allowed = (await self._catalog()).allowed(filters) if filters.active else None
        return await self._ranking.search(query, top_k, checked, allowed, shape)

    def describe_search(self, query: str, filters: Filters | None = None, *,
                        mode: str = "hybrid", hypothesis: str | None = None,
                        rerank: bool | None = None, **given: Any) -> SearchExplain:
        """``Rifflux.describe_search``."""
        applied = make_filters(**given) if filters is None else filters
        return described(query, applied, lexical_plan(query), mode=mode,
                         hypothesis=hypothesis)

    def reranks(self, rerank: bool | None = None) -> bool:
        """``Rifflux.reranks``: a direct read has no reranker (a command that reranks
        opens the index with ``Rifflux``)."""
        if rerank:
            raise InvalidArgumentError("a direct read has no reranker: open the index with "
                                       "Rifflux (a reranker configured) to rerank")
        return False

    def rerank_failure(self) -> str | None:
        """``Rifflux.rerank_failure``: none, without a reranker."""
        return None

    def search_condition(self) -> str | None:
        """``Rifflux.search_condition``."""
        return self._store.lexical.condition()

    def semantic_condition(self) -> str | None:
        """None: no semantic branch runs here (words only)."""
        return None

    def embedding_server(self) -> EmbeddingServerStatus | None:
        """None: no model, nor an embedding server, is asked here (words only)."""
        return None

    def searchable(self, query: str) -> bool:
        """``Rifflux.searchable``."""
        return lexical_plan(query) is not None

    async def counts(self) -> Counts:
        """``Rifflux.counts``: vectors counted for the model the index was embedded with."""
        counts, _ = await self._store.reads.counts(None)
        return counts

    @property
    def embedding_model(self) -> str | None:
        """None: no model is loaded here."""
        return None

    @property
    def recovered(self) -> dict[str, object] | None:
        """None: a damaged index is opened by ``Rifflux``, which moves it aside."""
        return None

    def pending_embeddings(self) -> int | None:
        """None, as while a model loads: a lexical answer does not say it."""
        return None

    def languages_pending(self) -> int | None:
        """The chunks waiting for their language, as the catalog says (None: not read, as
        a search without filters needs it not)."""
        return self._loaded.catalog.languages_pending() if self._catalog_ready.is_set() \
            else None

    # ------------------------------------------------------------ reads

    async def get_file(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
        start_line: int | None = None, end_line: int | None = None,
        page: int | None = None, end_page: int | None = None,
    ) -> FileRecord | FileLines | None:
        """``Rifflux.get_file``: a stored file whole, or lines (pages) of it from disk."""
        span = checked_span(start_line=start_line, end_line=end_line, page=page,
                            end_page=end_page)
        await self._catalog()
        where = None if root is None else os.fspath(root)
        if span is None:
            return await self._reads().file(os.fspath(path), where)
        first, last, by_page = span
        return await self._reads().lines(os.fspath(path), where, first, last, by_page)

    async def get_chunk(self, chunk_id: str) -> ChunkDetail | None:
        """``Rifflux.get_chunk``."""
        return await self._store.records.chunk(str(chunk_id))

    async def links(self, path: str | os.PathLike[str], *,
                    root: str | os.PathLike[str] | None = None) -> NoteLinks:
        """``Rifflux.links``."""
        await self._catalog()
        where = None if root is None else os.fspath(root)
        return await self._reads().note_links(os.fspath(path), where)

    async def neighbors(self, path: str | os.PathLike[str], *, depth: int = 1,
                        root: str | os.PathLike[str] | None = None) -> list[Neighbor]:
        """``Rifflux.neighbors``."""
        depth = check_depth(depth)
        await self._catalog()
        where = None if root is None else os.fspath(root)
        return await self._reads().neighbors(os.fspath(path), where, depth)

    async def files(self, root: str | os.PathLike[str] | None = None) -> list[IndexedFile]:
        """``Rifflux.files`` (the catalog is read for ``root`` alone: which folder it
        names)."""
        if root is not None:
            await self._catalog()
        return await self._reads().files(None if root is None else os.fspath(root))

    async def list_tags(self, paths: Sequence[str] | str | None = None) -> list[TagCount]:
        """``Rifflux.list_tags``."""
        await self._catalog()
        return self._reads().tags(make_filters(paths=paths).paths)

    # ------------------------------------------------------------ the catalog

    async def _catalog(self) -> Catalog:
        """The catalog of files, read whole once (``QueryActor``'s, on this connection)."""
        if not self._catalog_ready.is_set():
            roots, files, edges = await self._store.reads.catalog(in_thread=False)
            self._loaded.catalog.replace(roots, files, edges)
            self._catalog_ready.set()
        return self._loaded.catalog

    def _reads(self) -> IndexReads:
        """The reads that need the catalog (made when a command first reads; the caller
        loads the catalog first where they use it)."""
        if self._index_reads is None:
            store = self._store
            self._index_reads = IndexReads(reads=store.reads, records=store.records,
                                           links=store.links, catalog=self._loaded.catalog,
                                           in_thread=False)
        return self._index_reads
