"""``Rifflux``: the async context manager other programs (and the MCP server) hold.

It starts the supervisor, turns method calls into messages to the actors, and
awaits their replies. Two instances on two databases do not share anything.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio

from .actors.jobs import Job, Target
from .actors.messages import Mode, ReadRequested, SearchRequested
from .actors.supervisor import Supervisor
from .actors.watcher import WatchFactory
from .config import Settings
from .core.embedders import Embedder
from .core.scan import Globs
from .errors import ClosedError, InvalidArgumentError, RiffluxError

MODES: tuple[Mode, ...] = ("lexical", "semantic", "hybrid")


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
        embedder: Embedder | None = None,
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
        self._embedder = embedder
        self._watch_factory = _watch_factory
        self._sup: Supervisor | None = None

    # ------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Rifflux:
        if self._sup is not None:
            raise RiffluxError("this Rifflux instance is already open")
        sup = Supervisor(self.settings, embedder=self._embedder,
                         watch_factory=self._watch_factory)
        await sup.start()
        self._sup = sup
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sup, self._sup = self._sup, None
        if sup is not None:
            await sup.stop()

    def _open(self) -> Supervisor:
        if self._sup is None:
            raise ClosedError("Rifflux is not open: use it as `async with Rifflux(...) as rf:`")
        return self._sup

    # ------------------------------------------------------------ search and reads

    async def search(
        self, query: str, top_k: int = 10, mode: str = "hybrid"
    ) -> list[dict[str, Any]]:
        """Ranked chunks for ``query``; see SPEC.md for the fields and score breakdowns."""
        if mode not in MODES:
            raise InvalidArgumentError(
                f"unknown mode {mode!r}: use one of {', '.join(MODES)}"
            )
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InvalidArgumentError(f"top_k must be an integer of at least 1, not {top_k!r}")
        if not isinstance(query, str):
            raise InvalidArgumentError("query must be a string")
        sup = self._open()
        send, receive = anyio.create_memory_object_stream[list[dict[str, Any]] | BaseException](1)
        assert sup.query_send is not None
        async with receive:
            request = SearchRequested(query=query, top_k=top_k, mode=mode, reply=send)
            await sup.query_send.send(request)
            result = await receive.receive()
        if isinstance(result, BaseException):
            raise result
        return result

    async def _read(self, what: str, key: str = "") -> Any:
        sup = self._open()
        send, receive = anyio.create_memory_object_stream[Any](1)
        assert sup.query_send is not None
        async with receive:
            await sup.query_send.send(
                ReadRequested(what=what, key=key, reply=send)  # type: ignore[arg-type]
            )
            result = await receive.receive()
        if isinstance(result, BaseException):
            raise result
        return result

    async def get_chunk(self, chunk_id: str) -> dict[str, Any] | None:
        """A stored chunk by id, or None when no chunk has that id."""
        result: dict[str, Any] | None = await self._read("chunk", str(chunk_id))
        return result

    async def get_file(self, path: str | os.PathLike[str]) -> dict[str, Any] | None:
        """A stored file's chunks in order (path relative to its root, or absolute)."""
        result: dict[str, Any] | None = await self._read("file", os.fspath(path))
        return result

    # ------------------------------------------------------------ indexing

    async def reindex(
        self,
        path: str | os.PathLike[str] | None = None,
        paths: Sequence[str | os.PathLike[str]] | None = None,
        force: bool = False,
        background: bool = False,
    ) -> dict[str, Any]:
        """Bring the index up to date for ``paths`` (if non-empty), else ``path``, else
        the current working directory. Returns when those files are indexed and
        embedded, or at once with the job when ``background`` is true."""
        sup = self._open()
        if self.settings.read_only:
            raise RiffluxError(
                f"{self.settings.db_path} is open read-only (searching another index); "
                "open it without read_only to reindex"
            )
        if paths:
            locations = [os.fspath(p) for p in paths]
        elif path is not None and os.fspath(path) != "":
            locations = [os.fspath(path)]
        else:
            locations = [os.getcwd()]
        roots = [Path(r) for r in await self.roots()]
        job = Job([self._target(loc, roots) for loc in locations], force=bool(force))
        sup.jobs.submit(job)
        if background:
            return {"job": job.snapshot(), **self._model_labels()}
        await job.done.wait()
        return self._job_result(job)

    async def roots(self) -> list[str]:
        """The folders this index holds files from (absolute paths)."""
        result: list[str] = await self._read("roots")
        return result

    @property
    def embedding_model(self) -> str | None:
        """The active embedding model's label; None until the model has loaded."""
        return self._open().model.label

    @property
    def embedding_backend(self) -> str | None:
        """``onnx`` or ``hash``, the backend actually in use; None until loaded."""
        emb = self._open().model.embedder
        return emb.backend if emb else None

    async def wait_until_model_ready(self) -> None:
        """Wait for the embedding model to load (or fail to: see ``status()``)."""
        await self._open().model.ready.wait()

    async def job(self, job_id: str) -> dict[str, Any]:
        """A background job's state (and its result once completed)."""
        job = self._open().jobs.get(job_id)
        out = job.snapshot()
        if job.done.is_set() and job.status == "completed":
            out["result"] = self._job_result(job)
        return out

    async def wait_for_job(self, job_id: str) -> dict[str, Any]:
        job = self._open().jobs.get(job_id)
        await job.done.wait()
        return await self.job(job_id)

    def _target(self, location: str, roots: list[Path]) -> Target:
        loc = Path(location).expanduser()
        try:
            loc = loc.resolve(strict=True)
        except (OSError, RuntimeError):
            return Target(loc.absolute(), requested=location,
                          missing="path not found; check the path (nothing was removed)")
        globs = Globs(self.settings.include, self.settings.exclude)
        container = next((r for r in roots if r != loc and r in loc.parents), None)
        if loc.is_file():
            root = container or loc.parent
            rel = loc.relative_to(root).as_posix()
            if not globs.wanted(rel):
                return Target(root, requested=location,
                              missing="not indexed: the file does not match the include globs "
                                      f"({', '.join(self.settings.include)})")
            return Target(root, paths={rel}, requested=location)
        if container is not None:
            return Target(container, prefix=loc.relative_to(container).as_posix() + "/",
                          requested=location)
        return Target(loc, requested=location)

    def _model_labels(self) -> dict[str, Any]:
        model = self._open().model
        emb = model.embedder
        return {
            "embedding_model": emb.label if emb else None,
            "embedding_backend": emb.backend if emb else None,
        }

    def _job_result(self, job: Job) -> dict[str, Any]:
        if job.status != "completed" and job.error:
            raise RiffluxError(f"reindex {job.id} {job.status}: {job.error}")
        result = dict(job.result or {})
        result.update(self._model_labels())
        result["job_id"] = job.id
        result["embedded_chunks"] = job.embedded
        return result

    # ------------------------------------------------------------ status

    async def status(self) -> dict[str, Any]:
        """The ``index_status`` object of SPEC.md."""
        sup = self._open()
        model = sup.model
        label = model.label
        counts = await self._read("counts", label or "")
        watcher = (
            sup.watcher.stats.snapshot()
            if sup.watcher
            else {"running": False, "paths": [], "events_seen": 0, "batches": 0,
                  "restarts": 0, "last_error": None}
        )
        if sup.debouncer is not None:
            watcher["pending_paths"] = sup.debouncer.pending_paths
        emb_stats = sup.embedder.stats if sup.embedder else None
        return {
            **counts,
            "db_path": str(self.settings.db_path.expanduser().resolve()),
            "embedding_backend": model.embedder.backend if model.embedder else None,
            "embedding_backend_requested": model.requested,
            "embedding_model": label,
            "embedding_model_ready": model.ready.is_set(),
            "embedding_fallback_reason": model.fallback_reason,
            "embedding_error": model.error,
            "vectors_in_memory": sup.query.vectors_in_memory if sup.query else 0,
            "include_globs": list(self.settings.include),
            "exclude_globs": list(self.settings.exclude),
            "rrf_k": self.settings.rrf_k,
            "jobs": sup.jobs.snapshot(),
            "queued_jobs": len(sup.jobs),
            "watcher": watcher,
            "queues": sup.stream_stats(),
            "embedder": {
                "texts_embedded": emb_stats.texts_embedded if emb_stats else 0,
                "busy": emb_stats.busy if emb_stats else False,
                "failures": emb_stats.failures if emb_stats else 0,
            },
        }
