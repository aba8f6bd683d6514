"""``Rifflux``: the async context manager other programs (and the MCP server) hold.

It starts the supervisor and talks to the actors through one handle
(``actors.service.Service``): searches and reads are messages to the query
actor, reindexing submits jobs, and ``status()`` is composed from each
component's snapshot (``status``). Two instances on two databases share nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, overload

import anyio

from .actors.events import DEFAULT_BUFFER, Event, EventsLost, IndexUpdated, JobChanged, Subscription
from .actors.model import EmbedderSource
from .actors.service import Service
from .actors.supervisor import Supervisor
from .config import Settings
from .core.filters import Filters, check_depth, make_filters
from .core.hypothesis import checked_hypothesis
from .core.locations import reindex_locations
from .errors import (
    ClosedError,
    HistoryOffError,
    InvalidArgumentError,
    ReadOnlyError,
    RiffluxError,
)
from .history.queries import file_history, search_history, show_commit
from .history_types import CommitDetail, FileHistory, HistoryAnswer
from .locate import forget_target, reindex_targets
from .note_types import NoteChange, RecentNote
from .notes import NoteDesk, Notes
from .query.asked import SearchShape, checked_mode, checked_span, described
from .status import index_status, job_info, job_result, recovered
from .types import (
    MODES,
    BackgroundReindex,
    ChunkDetail,
    Counts,
    EmbeddingServerStatus,
    FileLines,
    FileRecord,
    ForgetResult,
    IndexedFile,
    JobInfo,
    Neighbor,
    NoteLinks,
    ReindexResult,
    SearchExplain,
    SearchResult,
    Status,
    TagCount,
)

if TYPE_CHECKING:  # (the watcher loads only where folders are watched)
    from .actors.history import HistoryActor
    from .actors.watcher import WatchFactory

__all__ = ["MODES", "Event", "EventsLost", "IndexUpdated", "JobChanged", "Rifflux",
           "Subscription"]


#: How long a background reindex waits to name the model it embeds with.
_MODEL_LABEL_WAIT = 10.0


class Rifflux:
    """Hybrid search over markdown, in an SQLite file or a PostgreSQL database (a URL).

    ``async with Rifflux(db_path) as rf: await rf.reindex("docs"); await rf.search("...")``
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] | None = None,
        embedding_backend: str = "auto",
        rrf_k: int = 60,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        watch_paths: Sequence[str | os.PathLike[str]] = (),
        *,
        settings: Settings | None = None,
        embedder: EmbedderSource | None = None,
        model_dir: str | os.PathLike[str] | None = None,
        writable: Sequence[str | os.PathLike[str]] = (),
        watch_writable: bool = True,
        kinds: Sequence[str] | None = None,
        embed_url: str | None = None,
        embed_model: str | None = None,
        _watch_factory: WatchFactory | None = None,
    ) -> None:
        base = settings or Settings()
        settings = base.with_overrides(
            db_path=db_path,
            embedding_backend=embedding_backend if settings is None else None,
            rrf_k=rrf_k if settings is None else None,
            include=tuple(include) if include is not None else None,
            exclude=tuple(exclude) if exclude is not None else None,
            watch_paths=tuple(Path(p) for p in watch_paths) or None,
            model_dir=model_dir, writable=tuple(Path(p) for p in writable) or None,
            kinds=tuple(kinds) if kinds is not None else None,
            embed_url=embed_url, embed_model=embed_model,
        )
        self._desk = NoteDesk(settings, watch=watch_writable)  # (notes: writable=)
        self.settings = self._desk.settings
        self._notes = Notes(self._desk, self._open)
        self._supervisor = Supervisor(self.settings, embedder=embedder,
                                      watch_factory=_watch_factory)
        self._service: Service | None = None

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Rifflux:
        if self._service is not None:
            raise RiffluxError("this Rifflux instance is already open")
        await self._desk.open()  # (before the watcher: a missing folder is made)
        self._service = await self._supervisor.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._service is None:
            return
        self._service = None
        await self._supervisor.__aexit__(exc_type, exc, tb)

    def _writable(self, what: str) -> None:
        if self.settings.read_only:
            raise ReadOnlyError(
                f"{self.settings.db_path} is open read-only (searched, never written: a "
                f"`rifflux serve --read-only`, or another index searched by db_path), so it "
                f"cannot {what}: use a Rifflux, server or command that opens it for writing")

    def _open(self) -> Service:
        if self._service is None:
            raise ClosedError("Rifflux is not open: use it as `async with Rifflux(...) as rf:`")
        return self._service

    # ------------------------------------------------------------ search and reads

    async def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        *,
        paths: Sequence[str] | str | None = None,
        root: str | os.PathLike[str] | None = None,
        tags: Sequence[str] | str | None = None,
        frontmatter: Mapping[str, Any] | None = None,
        modified_after: str | date | None = None,
        modified_before: str | date | None = None,
        near: str | os.PathLike[str] | None = None,
        depth: int | None = None,
        kinds: Sequence[str] | str | None = None,
        lang: Sequence[str] | str | None = None,
        max_per_file: int | None = None,
        content: str = "full",
        explain: bool = False,
        snippet_chars: int = 240,
        duplicates: str = "collapse",
        hypothesis: str | None = None,
        rerank: bool | None = None,
    ) -> list[SearchResult]:
        """Ranked chunks for ``query``; see docs/CONTRACT.md for the fields and scores.

        The filters narrow the search to files before either branch ranks anything
        (``rifflux.core.filters`` says exactly how each one matches); ``near`` (a note's
        path) keeps that note and the notes at most ``depth`` (1) links away; ``kinds`` keeps
        files of these kinds (``pdf``, ``code``: results' ``kind``); ``lang`` keeps chunks
        written in these languages (``en``, ``de``: results' ``lang``). ``max_per_file``
        passes over further chunks of a file that already has that many hits;
        ``content="snippet"`` leaves ``content`` out (each hit has its ``snippet``);
        ``explain`` adds each hit's ranks and raw scores in the branches that found it;
        ``snippet_chars`` is how long snippets are at most (40 to 1,000). Chunks holding
        the same text (copies of a note, a shared section) are one hit, whose ``also_in``
        names the others; ``duplicates="all"`` gives every copy.

        ``hypothesis``: what the answer would look like (a sentence or a paragraph
        written as the notes would say it): the semantic branch embeds it with the query,
        the lexical branch keeps the query's words. ``rerank``: rescore the first
        ``rerank_depth`` hits with the configured reranker (None: as ``Settings.rerank``
        says); a reranker that fails or is too slow leaves them in their fused order."""
        checked_mode(query, top_k, mode)
        filters = make_filters(paths=paths, root=None if root is None else os.fspath(root),
                               tags=tags, frontmatter=frontmatter,
                               modified_after=modified_after, modified_before=modified_before,
                               near=None if near is None else os.fspath(near), depth=depth,
                               kinds=kinds, lang=lang)
        return await self.search_filtered(query, filters, top_k, mode,
                                          max_per_file=max_per_file, content=content,
                                          explain=explain, snippet_chars=snippet_chars,
                                          duplicates=duplicates, hypothesis=hypothesis,
                                          rerank=rerank)

    async def search_filtered(
        self, query: str, filters: Filters, top_k: int = 10, mode: str = "hybrid", *,
        max_per_file: int | None = None, content: str = "full", explain: bool = False,
        snippet_chars: int = 240, duplicates: str = "collapse",
        hypothesis: str | None = None, rerank: bool | None = None,
    ) -> list[SearchResult]:
        """``search`` with its filters made already (``rifflux.core.filters.make_filters``):
        a caller that also reports them (``describe_search``) parses them once for both."""
        checked = checked_mode(query, top_k, mode)
        guess = checked_hypothesis(hypothesis, checked)
        shape = SearchShape.checked(max_per_file=max_per_file, content=content,
                                    explain=explain, snippet_chars=snippet_chars,
                                    duplicates=duplicates, rerank=self.reranks(rerank))
        return await self._open().search(query, top_k, checked, filters, shape,
                                         hypothesis=guess)

    def reranks(self, rerank: bool | None = None) -> bool:
        """Whether a search given ``rerank`` (None: as ``Settings.rerank`` says) is
        reranked; True without a reranker configured is an error saying how to give one."""
        reranker = self._open().reranker
        if rerank is None:
            return reranker is not None and reranker.default
        if not isinstance(rerank, bool):
            raise InvalidArgumentError(f"rerank must be true, false or left out, not {rerank!r}")
        if rerank and reranker is None:
            raise InvalidArgumentError(
                "rerank asks for a reranker, but none is configured: give a rerank server "
                "(--rerank-url, RIFFLUX_RERANK_URL, Settings.rerank_url) or an ONNX "
                "cross-encoder's directory (--rerank-model, RIFFLUX_RERANK_MODEL, "
                "Settings.rerank_model)")
        return rerank

    def rerank_failure(self) -> str | None:
        """Why the reranker last failed (a search then keeps its fused order), or None."""
        reranker = self._open().reranker
        return None if reranker is None else reranker.last_failure

    def describe_search(self, query: str, filters: Filters | None = None, *,
                        mode: str = "hybrid", hypothesis: str | None = None,
                        rerank: bool | None = None, **given: Any) -> SearchExplain:
        """What a search for ``query`` runs (``explain`` in MCP and JSON answers): the
        query the store's lexical branch runs (``lexical``: on PostgreSQL, its
        ``tsquery``), its FTS5 expressions (``fts_every``: chunks holding every word of a
        query mixing CJK and other words first), the stopwords left out, ``filters``
        as the search applied them (else made from the ``given`` keywords), the text each
        branch searched with (``texts``: the semantic one made from ``hypothesis`` when
        given) and the reranker asked (``rerank``)."""
        applied = make_filters(**given) if filters is None else filters
        service = self._open()
        out = described(query, applied, service.capabilities.lexical_plan(query), mode=mode,
                        hypothesis=hypothesis)
        reranker = service.reranker
        if reranker is not None and self.reranks(rerank):
            out["rerank"] = {"by": reranker.by, "depth": reranker.depth}
        return out

    def search_condition(self) -> str | None:
        """What an answer should say of how the store's lexical branch ranks now (on
        PostgreSQL, without its BM25 index: emptied by a server restart until it is built
        again, never held by a read replica); None: nothing to say."""
        return self._open().condition()

    def semantic_condition(self) -> str | None:
        """Why this process's semantic branch searches nothing, whatever the query (its
        model is not the index's: the index's vectors are another model's, which it may
        not replace, or its adoption failed); None: nothing to say."""
        return self._open().adopt_error()

    def embedding_server(self) -> EmbeddingServerStatus | None:
        """The embedding server making the vectors (``embed_url``): whether it answered
        the last request, and why not; None when the vectors are made here."""
        return self._open().model()["server"]

    def searchable(self, query: str) -> bool:
        """Whether ``query`` holds a word the store's lexical branch would search."""
        return self._open().capabilities.lexical_plan(query) is not None

    async def counts(self) -> Counts:
        """How many files, chunks, embeddings (and pending ones), roots and links the index
        holds: one read, where ``status()`` composes everything."""
        counts, _ = await self._open().counts()
        return counts

    @property
    def recovered(self) -> dict[str, object] | None:
        """``status()["recovered"]``: the damaged index moved aside at open, or None."""
        recovery = self._open().recovery
        return None if recovery is None else recovered(recovery)

    def pending_embeddings(self) -> int | None:
        """Texts still without a vector, from memory (None while the model loads)."""
        return self._open().pending()

    def languages_pending(self) -> int | None:
        """Chunks whose language is not told yet (it is, just after their files are
        indexed), from memory: a ``lang`` filter leaves them out until then."""
        return self._open().languages_pending()

    async def get_chunk(self, chunk_id: str) -> ChunkDetail | None:
        """A stored chunk by id (with its neighbours' ids), or None when no chunk has it."""
        return await self._open().chunk(str(chunk_id))

    @overload
    async def get_file(self, path: str | os.PathLike[str], *,
                       root: str | os.PathLike[str] | None = None,
                       start_line: None = None, end_line: None = None,
                       page: None = None, end_page: None = None) -> FileRecord | None: ...

    @overload
    async def get_file(self, path: str | os.PathLike[str], *,
                       root: str | os.PathLike[str] | None = None,
                       start_line: None = None, end_line: None = None,
                       page: int, end_page: int | None = None) -> FileLines | None: ...

    @overload
    async def get_file(self, path: str | os.PathLike[str], *,
                       root: str | os.PathLike[str] | None = None,
                       start_line: int | None = None, end_line: int | None = None,
                       page: int | None = None, end_page: int | None = None,
                       ) -> FileRecord | FileLines | None: ...

    async def get_file(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
        start_line: int | None = None, end_line: int | None = None,
        page: int | None = None, end_page: int | None = None,
    ) -> FileRecord | FileLines | None:
        """A stored file (path relative to its root, or absolute inside it), or None when
        the index holds no such file.

        Without a range: its metadata and chunks in order. With ``start_line`` or
        ``end_line`` (1-based, inclusive): those lines as they are on disk now, clamped
        to the file (``start_line`` and ``end_line`` in the answer say what was read); a
        PDF's, a deck's or a Word file's lines are those of its text as indexed. With
        ``page`` (that page; with ``end_page``, to it, inclusive) instead: those pages of a PDF, or
        slides of a deck (``start_page``, ``end_page``, ``total_pages`` in the answer, and
        the lines they span).
        """
        service = self._open()
        where = None if root is None else os.fspath(root)
        span = checked_span(start_line=start_line, end_line=end_line, page=page,
                            end_page=end_page)
        if span is None:
            return await service.file(os.fspath(path), where)
        first, last, by_page = span
        return await service.lines(os.fspath(path), where, first, last, by_page=by_page)

    async def links(self, path: str | os.PathLike[str], *,
                    root: str | os.PathLike[str] | None = None) -> NoteLinks:
        """A note's links (``[[wikilinks]]``, embeds, markdown links to notes, and to the
        other files the index reads: ``[[paper.pdf]]``): those it makes (``outgoing``;
        ``unresolved`` those that find no file) and those other notes make to it
        (``backlinks``: of a PDF, the notes that cite it), each with where it is written.
        ``path`` (any indexed file's) as search results give it; an unknown path is an
        error that says what to give."""
        where = None if root is None else os.fspath(root)
        return await self._open().links(os.fspath(path), where)

    async def neighbors(self, path: str | os.PathLike[str], *, depth: int = 1,
                        root: str | os.PathLike[str] | None = None) -> list[Neighbor]:
        """The notes (and the files they cite) at most ``depth`` links away from this
        one, whichever way the links go (the note itself left out), nearest first:
        ``path``, ``title``, ``distance``."""
        where = None if root is None else os.fspath(root)
        return await self._open().neighbors(os.fspath(path), where, check_depth(depth))

    async def list_tags(self, paths: Sequence[str] | str | None = None) -> list[TagCount]:
        """Every tag (front matter and inline), with the number of files that carry it;
        with ``paths`` (globs), only files that match them are counted."""
        return await self._open().tags(make_filters(paths=paths).paths)

    async def files(self, root: str | os.PathLike[str] | None = None) -> list[IndexedFile]:
        """The files the index holds (of ``root`` alone: an indexed folder, by path or by
        name), each with its ``title``, ``modified`` and how many ``chunks``, by folder and
        path."""
        return await self._open().files(None if root is None else os.fspath(root))

    async def roots(self) -> list[str]:
        """The folders this index holds files from (absolute paths)."""
        return await self._open().roots()

    # ------------------------------------------------------------ indexing

    @overload
    async def reindex(
        self, path: str | os.PathLike[str] | None = None,
        paths: Sequence[str | os.PathLike[str]] | None = None, force: bool = False,
        background: Literal[False] = False, *, count_left_out: bool = False,
        yes: bool = False,
    ) -> ReindexResult: ...

    @overload
    async def reindex(
        self, path: str | os.PathLike[str] | None = None,
        paths: Sequence[str | os.PathLike[str]] | None = None, force: bool = False, *,
        background: Literal[True], count_left_out: bool = False, yes: bool = False,
    ) -> BackgroundReindex: ...

    async def reindex(
        self, path: str | os.PathLike[str] | None = None,
        paths: Sequence[str | os.PathLike[str]] | None = None, force: bool = False,
        background: bool = False, *, count_left_out: bool = False, yes: bool = False,
    ) -> ReindexResult | BackgroundReindex:
        """Bring the index up to date for ``paths`` (if non-empty), else ``path``, else the
        current working directory; returns when those files are indexed and embedded, or
        at once with the job when ``background``. ``count_left_out``: the result's
        ``left_out`` counts the files the globs left out, by why (excluded folders are
        walked to count them). ``/`` and the home folder, not indexed yet, are refused (in
        ``errors``) unless ``yes`` (or ``force``), and so is the working directory, used
        when no path is given, holding over ``Settings.max_root_files`` candidate files:
        nearly always a wrong working directory. A folder named in ``path``/``paths`` is
        indexed whatever its size."""
        service = self._open()
        self._writable("reindex")
        locations, named = reindex_locations(None if path is None else os.fspath(path),
                                             [os.fspath(p) for p in paths or ()], os.getcwd())
        roots = [Path(r) for r in await service.roots()]
        targets = await reindex_targets(locations, roots, self.settings, yes=bool(yes or force),
                                        named=named)
        job = service.submit(targets, force=bool(force), count_left_out=count_left_out)
        if background:  # (the model's label and backend, once known: a moment at start)
            with anyio.move_on_after(_MODEL_LABEL_WAIT):
                await self.wait_for_model()
            labels = self._model_labels()
            return {"job": job.info(), "embedding_model": labels[0],
                    "embedding_backend": labels[1]}
        return job_result(await job.finished(), self._model_labels())

    async def forget(self, path: str | os.PathLike[str], *, yes: bool = False) -> ForgetResult:
        """Remove from the index an indexed folder with everything under it, a folder or
        file inside one, or every indexed folder inside ``path``. The files on disk are
        not touched; the path need not exist any more. A watched folder comes back with
        its next change: stop watching it first. ``/`` and the home folder (every indexed
        folder at once, unless one of them is that folder) need ``yes``."""
        service = self._open()
        self._writable("forget folders")
        location = os.fspath(path)
        if not location.strip():
            raise InvalidArgumentError("forget needs the path of an indexed folder or file "
                                       "(status lists the indexed folders)")
        roots = [Path(r) for r in await service.roots()]
        loc, target = await forget_target(location, roots, yes=yes, indexed=self.get_file)
        job = service.submit([target])
        end = await job.finished()
        result = end.result
        if result is None:
            raise RiffluxError(f"forget {location} {end.info['status']}: {end.info['error']}")
        errors = result["errors"]
        if errors:
            raise InvalidArgumentError(f"{location}: {errors[0]['error']}")
        remaining = {str(r) for r in await service.roots()}
        return {"path": str(loc), "removed_files": result["removed_files"],
                "removed_roots": [str(r) for r in roots if str(r) not in remaining],
                "removed_paths": result.get("changed", {}).get("removed", []),
                "job_id": job.id}

    async def wait_for_model(self) -> None:
        """Load the embedding model if need be and wait until it has loaded (or failed to):
        its label, backend and per-model counts are known then (bound with move_on_after)."""
        await self._open().wait_for_model()

    @property
    def embedding_model(self) -> str | None:
        """The active embedding model's label; None until the model has loaded."""
        return self._model_labels()[0]

    @property
    def embedding_backend(self) -> str | None:
        """``onnx``, ``hash`` or ``server`` (an embedding server, ``embed_url``), the
        backend actually in use; None until loaded."""
        return self._model_labels()[1]

    async def job(self, job_id: str) -> JobInfo:
        """A background job's state (and its result once completed)."""
        job = self._open().job(job_id)
        if not job.done:
            return job.info()
        return job_info(await job.finished(), self._model_labels())

    async def wait_for_job(self, job_id: str) -> JobInfo:
        return job_info(await self._open().job(job_id).finished(), self._model_labels())

    def _model_labels(self) -> tuple[str | None, str | None]:
        model = self._open().model()
        return model["label"], model["backend"]

    # ------------------------------------------------------------ events

    def events(self, buffer: int = DEFAULT_BUFFER) -> AbstractAsyncContextManager[Subscription]:
        """Follow the index as it changes: ``async with rf.events() as events: async for
        event in events`` gives a ``JobChanged`` (a job's snapshot) whenever a job is
        queued, starts, makes progress or ends, and an ``IndexUpdated`` after every
        commit, this process's or another's. Publishing never waits for a subscriber:
        one that falls ``buffer`` events behind loses the oldest and is told with an
        ``EventsLost``. The loop ends when this instance closes."""
        return self._open().events.subscribe(buffer)

    def end_events(self) -> None:
        """End every ``events()`` loop once it has given out what it holds (and those
        begun later at once), this instance staying open: a server that is stopping
        ends its event streams so, before it waits for the requests in flight."""
        self._open().events.close()

    # ------------------------------------------------------------ notes (rifflux.notes)

    async def write_note(
        self, path: str | os.PathLike[str], content: str, *, title: str | None = None,
        tags: Sequence[str] | None = None, if_match: str | None = None,
        overwrite: bool = False, folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """Create the note ``path`` (relative to a writable folder) holding ``content``,
        with ``title`` and ``tags`` in its front matter. An existing note is replaced only
        with ``overwrite`` or when ``if_match`` is its sha256 (``NoteConflictError``
        otherwise, and nothing is written)."""
        return await self._notes.write(path, content, title=title, tags=tags,
                                       if_match=if_match, overwrite=overwrite, folder=folder)

    async def edit_note(
        self, path: str | os.PathLike[str], *, append: str | None = None,
        prepend: str | None = None, replace_section: tuple[str, str] | None = None,
        find: str | None = None, replace: str | None = None, replace_all: bool = False,
        if_match: str | None = None, folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """Edit one part of a note: ``append`` or ``prepend`` a block, replace the text of
        a section (``replace_section=(heading, text)``), or ``find`` text and ``replace``
        it (once; every time with ``replace_all``). Everything else keeps its bytes."""
        return await self._notes.edit(path, append=append, prepend=prepend,
                                      replace_section=replace_section, find=find,
                                      replace=replace, replace_all=replace_all,
                                      if_match=if_match, folder=folder)

    async def move_note(
        self, src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
        update_links: bool = True, if_match: str | None = None,
        folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """Move a note within its writable folder; with ``update_links``, the links to it
        in the folder's notes (and its own relative links) are rewritten to still find
        their notes (``links_updated`` lists them)."""
        return await self._notes.move(src, dst, update_links=update_links, if_match=if_match,
                                      folder=folder)

    async def delete_note(self, path: str | os.PathLike[str], *, if_match: str | None = None,
                          folder: str | os.PathLike[str] | None = None) -> NoteChange:
        """Move a note to ``.rifflux-trash/`` in its folder (never indexed); it leaves the
        index. ``restore_note`` brings it back."""
        return await self._notes.delete(path, if_match=if_match, folder=folder)

    async def restore_note(self, path: str | os.PathLike[str], *,
                           folder: str | os.PathLike[str] | None = None) -> NoteChange:
        """Bring the note last deleted at ``path`` back from the trash (refused when a note
        is there now)."""
        return await self._notes.restore(path, folder=folder)

    async def recent(self, limit: int = 20, since: str | date | None = None, *,
                     root: str | os.PathLike[str] | None = None) -> list[RecentNote]:
        """The notes changed most recently, by anyone (their modification time as
        indexed), newest first: path, root, title, modified, tags. ``since``: an ISO date
        or an age (``7d``); ``root``: one indexed folder."""
        return await self._notes.recent(limit, since, root=root)

    # ------------------------------------------------------------ status

    # ------------------------------------------------------------ the git history

    def _history(self) -> HistoryActor:
        history = self._open().history
        if history is None:
            raise HistoryOffError("the git history is turned off (--no-history, "
                               "RIFFLUX_HISTORY=0, Settings(history=False)): turn it on to "
                               "search commits")
        if history.search is None:
            raise HistoryOffError(f"the git history of {self.settings.db_path} could not be "
                               "opened (the log says why): open the index again, or turn "
                               "the history off (--no-history)")
        return history

    async def search_history(
        self, query: str, *, top_k: int = 10, mode: str = "hybrid",
        paths: Sequence[str] | str | None = None, author: str | None = None,
        since: str | date | None = None, before: str | date | None = None,
        repo: str | os.PathLike[str] | None = None,
    ) -> HistoryAnswer:
        """The commits of the repositories holding the indexed folders that match
        ``query`` (their message, the paths they changed and their change): ``paths``
        keeps commits that changed one of these files or folders, ``author`` those whose
        author's name or email holds it, ``since`` (inclusive) and ``before`` (exclusive)
        bound the commit date (an ISO date or an age such as ``7d``), ``repo`` one
        repository (its work tree). Each hit gives its hash, title, author, dates, the
        paths it changed, the hunk that matches best and its scores."""
        checked = checked_mode(query, top_k, mode)
        history = self._history()
        if checked != "lexical":
            self._open().want_model()
        assert history.search is not None
        answer = await search_history(history.search, query, top_k=top_k, mode=checked,
                                      paths=paths, author=author, since=since,
                                      before=before, repo=repo, problems=history.problems)
        answer["pending_embeddings"] = history.pending
        return answer

    async def show_commit(self, commit: str, *, repo: str | None = None,
                          max_chars: int | None = None) -> CommitDetail:
        """One indexed commit (its hash or at least its first 4 digits): its message, the
        paths it changed and its change as kept (``change``, cut at ``max_chars``)."""
        history = self._history()
        assert history.search is not None
        return await show_commit(history.search.rows, commit, repo=repo, max_chars=max_chars)

    async def history(self, path: str | os.PathLike[str], start_line: int | None = None,
                      end_line: int | None = None) -> FileHistory:
        """The commits that changed an indexed file (relative to its folder, or absolute),
        newest first, following its renames; with ``start_line`` (and ``end_line``), the
        commits that last changed those lines (as ``git blame``)."""
        history = self._history()
        assert history.search is not None
        return await file_history(history.search.rows, history.search.blames, path,
                                  start_line, end_line)

    async def wait_for_history(self) -> None:
        """Wait until the history has been read once more, from a read begun after this
        call: a commit just made is searchable when it returns (at once when no history
        is kept: turned off, or a PostgreSQL index)."""
        history = self._open().history
        if history is None or history.search is None:
            return
        history.want("asked")
        await history.caught_up()

    async def status(self) -> Status:
        """The ``index_status`` object of SPEC.md."""
        return await index_status(self._open(), self.settings)
