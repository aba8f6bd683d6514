"""``Rifflux``: the async context manager other programs (and the MCP server) hold.

It starts the supervisor and talks to the actors through one handle
(``actors.service.Service``): searches and reads are messages to the query
actor, reindexing submits jobs, and ``status()`` is composed from each
component's snapshot. Two instances on two databases share nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, overload

import anyio

from .actors.events import DEFAULT_BUFFER, Event, EventsLost, IndexUpdated, JobChanged, Subscription
from .actors.jobs import Job, Target
from .actors.messages import SearchShape
from .actors.model import EmbedderSource
from .actors.service import Service
from .actors.supervisor import Supervisor
from .actors.targets import reindex_target, too_wide
from .actors.watcher import WatchFactory
from .config import Settings
from .core.filters import check_depth, make_filters
from .core.fts_query import build_match
from .errors import ClosedError, InvalidArgumentError, RiffluxError
from .store.recovery import Recovery
from .types import (
    MODES,
    BackgroundReindex,
    ChunkDetail,
    FileLines,
    FileRecord,
    ForgetResult,
    JobInfo,
    Neighbor,
    NoteLinks,
    ReindexResult,
    SearchExplain,
    SearchResult,
    Status,
    TagCount,
)

__all__ = ["MODES", "Event", "EventsLost", "IndexUpdated", "JobChanged", "Rifflux",
           "Subscription"]


def _recovered(recovery: Recovery) -> dict[str, object]:
    return {"moved_to": str(recovery.moved_to), "reason": recovery.reason, "at": recovery.at,
            "roots": [str(r) for r in recovery.roots]}


#: How long a background reindex waits to name the model it embeds with.
_MODEL_LABEL_WAIT = 10.0


class Rifflux:
    """Hybrid search over folders of markdown, backed by one SQLite file.

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
        _watch_factory: WatchFactory | None = None,
    ) -> None:
        base = settings or Settings()
        self.settings = base.with_overrides(
            db_path=db_path,
            embedding_backend=embedding_backend if settings is None else None,
            rrf_k=rrf_k if settings is None else None,
            include=tuple(include) if include is not None else None,
            exclude=tuple(exclude) if exclude is not None else None,
            watch_paths=tuple(Path(p) for p in watch_paths) or None,
            model_dir=model_dir,
        )
        self._supervisor = Supervisor(self.settings, embedder=embedder,
                                      watch_factory=_watch_factory)
        self._service: Service | None = None

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Rifflux:
        if self._service is not None:
            raise RiffluxError("this Rifflux instance is already open")
        self._service = await self._supervisor.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._service is None:
            return
        self._service = None
        await self._supervisor.__aexit__(exc_type, exc, tb)

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
        max_per_file: int | None = None,
        content: str = "full",
        explain: bool = False,
        snippet_chars: int = 240,
    ) -> list[SearchResult]:
        """Ranked chunks for ``query``; see docs/CONTRACT.md for the fields and scores.

        The filters narrow the search to files before either branch ranks anything
        (``rifflux.core.filters`` says exactly how each one matches); ``near`` (a note's
        path) keeps that note and the notes at most ``depth`` (1) links away. ``max_per_file``
        passes over further chunks of a file that already has that many hits;
        ``content="snippet"`` leaves ``content`` out (each hit has its ``snippet``);
        ``explain`` adds each hit's ranks and raw scores in the branches that found it;
        ``snippet_chars`` is how long snippets are at most (40 to 1,000)."""
        if mode not in MODES:
            raise InvalidArgumentError(
                f"unknown mode {mode!r}: use one of {', '.join(MODES)}"
            )
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InvalidArgumentError(f"top_k must be an integer of at least 1, not {top_k!r}")
        if not isinstance(query, str):
            raise InvalidArgumentError("query must be a string")
        filters = make_filters(paths=paths, root=None if root is None else os.fspath(root),
                               tags=tags, frontmatter=frontmatter,
                               modified_after=modified_after, modified_before=modified_before,
                               near=None if near is None else os.fspath(near), depth=depth)
        shape = SearchShape.checked(max_per_file=max_per_file, content=content,
                                    explain=explain, snippet_chars=snippet_chars)
        return await self._open().search(query, top_k, mode, filters, shape)

    def describe_search(self, query: str, **filters: Any) -> SearchExplain:
        """What a search for ``query`` looks for: the FTS5 expression of its lexical branch
        and the filters as applied (the top-level ``explain`` of MCP and JSON answers)."""
        applied = make_filters(**filters)
        return {"fts_query": build_match(query), "filters": applied.describe()}

    def pending_embeddings(self) -> int | None:
        """Texts still without a vector, from memory (None while the model loads)."""
        return self._open().pending()

    async def get_chunk(self, chunk_id: str) -> ChunkDetail | None:
        """A stored chunk by id (with its neighbours' ids), or None when no chunk has it."""
        return await self._open().chunk(str(chunk_id))

    @overload
    async def get_file(self, path: str | os.PathLike[str], *,
                       root: str | os.PathLike[str] | None = None,
                       start_line: None = None, end_line: None = None) -> FileRecord | None: ...

    @overload
    async def get_file(self, path: str | os.PathLike[str], *,
                       root: str | os.PathLike[str] | None = None,
                       start_line: int | None = None,
                       end_line: int | None = None) -> FileRecord | FileLines | None: ...

    async def get_file(
        self, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None,
        start_line: int | None = None, end_line: int | None = None,
    ) -> FileRecord | FileLines | None:
        """A stored file (path relative to its root, or absolute inside it), or None when
        the index holds no such file.

        Without a line range: its metadata and chunks in order. With ``start_line`` or
        ``end_line`` (1-based, inclusive): those lines as they are on disk now (an end
        past the file's end is clamped; ``end_line`` in the answer says where it stopped).
        """
        service = self._open()
        where = None if root is None else os.fspath(root)
        for name, value in (("start_line", start_line), ("end_line", end_line)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidArgumentError(f"{name} must be a line number, not {value!r}")
        if start_line is None and end_line is None:
            return await service.file(os.fspath(path), where)
        return await service.lines(os.fspath(path), where, start_line, end_line)

    async def links(self, path: str | os.PathLike[str], *,
                    root: str | os.PathLike[str] | None = None) -> NoteLinks:
        """A note's links (``[[wikilinks]]``, embeds, markdown links to notes): those it
        makes (``outgoing``; ``unresolved`` those that find no file) and those other notes
        make to it (``backlinks``), each with where it is written. ``path`` as search
        results give it; an unknown path is an error that says what to give."""
        where = None if root is None else os.fspath(root)
        return await self._open().links(os.fspath(path), where)

    async def neighbors(self, path: str | os.PathLike[str], *, depth: int = 1,
                        root: str | os.PathLike[str] | None = None) -> list[Neighbor]:
        """The notes at most ``depth`` links away from this one, whichever way the links
        go (the note itself left out), nearest first: ``path``, ``title``, ``distance``."""
        where = None if root is None else os.fspath(root)
        return await self._open().neighbors(os.fspath(path), where, check_depth(depth))

    async def list_tags(self, paths: Sequence[str] | str | None = None) -> list[TagCount]:
        """Every tag (front matter and inline), with the number of files that carry it;
        with ``paths`` (globs), only files that match them are counted."""
        return await self._open().tags(make_filters(paths=paths).paths)

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
        self,
        path: str | os.PathLike[str] | None = None,
        paths: Sequence[str | os.PathLike[str]] | None = None,
        force: bool = False,
        background: bool = False,
        *,
        count_left_out: bool = False,
        yes: bool = False,
    ) -> ReindexResult | BackgroundReindex:
        """Bring the index up to date for ``paths`` (if non-empty), else ``path``, else
        the current working directory. Returns when those files are indexed and
        embedded, or at once with the job when ``background`` is true. With
        ``count_left_out``, the result's ``left_out`` counts the files the include and
        exclude globs left out, by why (excluded folders are walked to count them).

        A folder not indexed yet that is ``/``, the home folder itself, or holds more
        than ``Settings.max_root_files`` candidate files is refused (listed in
        ``errors``) unless ``yes`` (or ``force``) is true: it is nearly always a wrong
        working directory or a typo."""
        service = self._open()
        if self.settings.read_only:
            raise RiffluxError(
                f"{self.settings.db_path} is open read-only (searched, never written: "
                "another index, or `rifflux serve --read-only`); open it without read_only "
                "to reindex")
        if paths:
            locations = [os.fspath(p) for p in paths]
            if blank := [i for i, loc in enumerate(locations) if not loc.strip()]:
                raise InvalidArgumentError(
                    f"paths[{blank[0]}] is empty: give a folder or file there, or leave "
                    "paths out (then path, else the working directory, is indexed)")
        elif path is not None and os.fspath(path) != "":
            locations = [os.fspath(path)]
        else:
            locations = [os.getcwd()]
        roots = [Path(r) for r in await service.roots()]
        allow_large = bool(yes or force)
        job = service.submit(Job([reindex_target(loc, roots, self.settings, allow_large)
                                  for loc in locations],
                                 force=bool(force), count_left_out=count_left_out,
                                 allow_large=allow_large))
        if background:  # (the model's label and backend, once known: a moment at start)
            with anyio.move_on_after(_MODEL_LABEL_WAIT):
                await self.wait_for_model()
            labels = self._model_labels()
            return {"job": job.snapshot(), "embedding_model": labels[0],
                    "embedding_backend": labels[1]}
        await job.done.wait()
        return self._job_result(job)

    async def forget(self, path: str | os.PathLike[str], *, yes: bool = False) -> ForgetResult:
        """Remove from the index an indexed folder with everything under it, a folder or
        file inside one, or every indexed folder inside ``path``. The files on disk are
        not touched; the path need not exist any more. A watched folder comes back with
        its next change: stop watching it first. ``/`` and the home folder (every indexed
        folder at once, unless one of them is that folder) need ``yes``."""
        service = self._open()
        if self.settings.read_only:
            raise RiffluxError(f"{self.settings.db_path} is open read-only (searched, never "
                               "written); open it without read_only to forget folders")
        location = os.fspath(path)
        if not location.strip():
            raise InvalidArgumentError("forget needs the path of an indexed folder or file "
                                       "(status lists the indexed folders)")
        loc = await anyio.to_thread.run_sync(
            lambda: Path(location).expanduser().absolute().resolve())
        roots = [Path(r) for r in await service.roots()]
        if (not location.startswith(("/", "~")) and loc not in roots
                and not any(r in loc.parents or loc in r.parents for r in roots)):
            loc = await self._root_relative(location, roots)  # as results give paths
        container = next((r for r in roots if r in loc.parents), None)
        inside = [str(r) for r in roots if loc in r.parents]
        if not yes and container is None and inside and (whole := too_wide(loc)):
            raise InvalidArgumentError(
                f"refused: {loc} is {whole}, and forgetting it removes every indexed folder "
                f"inside it ({len(inside)}: {', '.join(inside[:3])}"
                f"{', …' if len(inside) > 3 else ''}); forget the folder you mean, or pass "
                "yes=true (rifflux forget --yes) to remove them all")
        target = (Target(container, prefix=loc.relative_to(container).as_posix(),
                         requested=location, forget=True) if container is not None
                  else Target(loc, requested=location, forget=True))
        job = service.submit(Job([target]))
        await job.done.wait()
        if job.status != "completed":
            raise RiffluxError(f"forget {location} {job.status}: {job.error}")
        result = job.progress.result(job.targets)
        errors = result["errors"]
        if errors:
            raise InvalidArgumentError(f"{location}: {errors[0]['error']}")
        remaining = {str(r) for r in await service.roots()}
        return {"path": str(loc), "removed_files": result["removed_files"],
                "removed_roots": [str(r) for r in roots if str(r) not in remaining],
                "removed_paths": result.get("changed", {}).get("removed", []),
                "job_id": job.id}

    async def _root_relative(self, location: str, roots: list[Path]) -> Path:
        """A relative path that is nothing indexed under the working directory, read as
        results give paths: relative to the indexed folder that holds it."""
        def inside(root: Path) -> Path | None:  # strictly: '.' or '..' name no file in it
            found = (root / location).resolve()
            return found if root in found.parents and found.exists() else None

        on_disk = [p for p in await anyio.to_thread.run_sync(lambda: list(map(inside, roots)))
                   if p is not None]
        if not on_disk:
            with contextlib.suppress(InvalidArgumentError):  # (a path leaving the folder)
                if (found := await self.get_file(location)) is not None:
                    on_disk = [Path(found["root"]) / found["path"]]
        if len(on_disk) == 1:
            return on_disk[0]
        where = (f"it is in several indexed folders ({', '.join(map(str, on_disk))})"
                 if on_disk else "no indexed folder holds it")
        raise InvalidArgumentError(
            f"{location!r} is not in the index: relative paths are read against the working "
            f"directory {os.getcwd()!r}, then as results give them, and {where}; give an "
            "absolute path (status lists the indexed folders)")

    async def wait_for_model(self) -> None:
        """Wait until the embedding model has loaded (or failed to): its label, backend
        and the per-model counts are known then (bound it with ``anyio.move_on_after``)."""
        await self._open().model_loaded.wait()

    @property
    def embedding_model(self) -> str | None:
        """The active embedding model's label; None until the model has loaded."""
        return self._model_labels()[0]

    @property
    def embedding_backend(self) -> str | None:
        """``onnx`` or ``hash``, the backend actually in use; None until loaded."""
        return self._model_labels()[1]

    async def job(self, job_id: str) -> JobInfo:
        """A background job's state (and its result once completed)."""
        job = self._open().job(job_id)
        out = job.snapshot()
        if job.done.is_set() and job.status == "completed":
            out["result"] = self._job_result(job)
        return out

    async def wait_for_job(self, job_id: str) -> JobInfo:
        await self._open().job(job_id).done.wait()
        return await self.job(job_id)

    def _model_labels(self) -> tuple[str | None, str | None]:
        model = self._open().model()
        return model["label"], model["backend"]

    def _job_result(self, job: Job) -> ReindexResult:
        if job.status != "completed" and job.error:
            raise RiffluxError(f"reindex {job.id} {job.status}: {job.error}")
        result: ReindexResult = {**(job.result or job.progress.result(job.targets))}
        result["embedding_model"], result["embedding_backend"] = self._model_labels()
        result["job_id"] = job.id
        result["embedded_chunks"] = job.embedded
        return result

    # ------------------------------------------------------------ events

    def events(self, buffer: int = DEFAULT_BUFFER) -> AbstractAsyncContextManager[Subscription]:
        """Follow the index as it changes: ``async with rf.events() as events: async for
        event in events`` gives a ``JobChanged`` (a job's snapshot) whenever a job is
        queued, starts, makes progress or ends, and an ``IndexUpdated`` after every
        commit, this process's or another's. Publishing never waits for a subscriber:
        one that falls ``buffer`` events behind loses the oldest and is told with an
        ``EventsLost``. The loop ends when this instance closes."""
        return self._open().events.subscribe(buffer)

    # ------------------------------------------------------------ status

    async def status(self) -> Status:
        """The ``index_status`` object of SPEC.md."""
        service = self._open()
        counts, counted_for = await service.counts()
        process, others, sequence = await service.processes()
        snap = service.snapshot()
        model = snap["model"]
        status: Status = {
            "files": counts["files"], "chunks": counts["chunks"],
            "embeddings": counts["embeddings"],
            "pending_embeddings": counts["pending_embeddings"], "roots": counts["roots"],
            "links": counts["links"], "unresolved_links": counts["unresolved_links"],
            "db_path": str(self.settings.db_path.expanduser().resolve()),
            "embedding_backend": model["backend"],
            "embedding_backend_requested": model["requested"],
            "embedding_model": model["label"],
            "embedding_model_ready": model["ready"],
            "embedding_counts_model": counted_for,
            "embedding_fallback_reason": model["fallback_reason"],
            "embedding_error": model["error"] or snap["indexer"]["adopt_error"],
            "embedding_dim": model["dim"],
            "embedding_pooling": model["pooling"],
            "embedding_query_prefix": model["query_prefix"],
            "embedding_document_prefix": model["document_prefix"],
            "embedding_max_tokens": model["max_tokens"],
            "vectors_in_memory": snap["query"]["vectors_in_memory"],
            "include_globs": list(self.settings.include),
            "exclude_globs": list(self.settings.exclude),
            "rrf_k": self.settings.rrf_k,
            "indexed_roots": await service.root_counts(),
            "jobs": snap["jobs"],
            "queued_jobs": snap["queued_jobs"],
            "watcher": snap["watcher"],
            "queues": snap["queues"],
            "embedder": snap["embedder"],
            "process": process,
            "processes": others,
            "sequence": sequence,
        }
        if service.recovery is not None:
            status["recovered"] = _recovered(service.recovery)
        return status
