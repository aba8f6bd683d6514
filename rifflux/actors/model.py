"""The model loader: loads the embedding model once, in a thread of its own, when it
is first needed (or at start, as a warm-up, in a long-lived process), and tells the
indexer (which adopts it) what it got.

Nothing loads before it is needed: the embedder classes, numpy, onnxruntime and
the tokenizer are imported by the load itself, so a process that only searches
lexically never imports them. The load is wanted (``want``) by a semantic or
hybrid search, a job (its texts need vectors), or a caller that waits for the
model; with ``warm=True`` it starts at once. It runs in a daemon thread: a process
that ends while it runs, or whose model nothing used, does not wait for it at exit
(anyio's worker threads are joined then), beyond the native step in flight
(``rifflux.native``; a command does not wait even for that: ``rifflux.exits.end``).
While it runs, the interpreter switches
threads more often (``rifflux.loading``), so that the event loop's lexical searches
and reads are not held up behind the load's imports for 5 ms at each turn.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypedDict

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from ..errors import EmbeddingUnavailableError
from ..loading import in_daemon_thread
from ..types import EmbeddingServerStatus, ModelState
from .messages import IndexerMessage, ModelLoaded
from .server_embedder import ServerEmbedder
from .server_health import backoff, wait_or_answer

if TYPE_CHECKING:  # (the embedders' module imports numpy: it loads with the model)
    from ..config import Settings
    from ..core.embedders import Embedder

    #: An embedder, or a function that makes one (called in the loading thread).
    EmbedderSource: TypeAlias = Embedder | Callable[[], Embedder]
else:
    EmbedderSource = object

logger = logging.getLogger(__name__)

#: A status asks the embedding server again when no request said in this many seconds
#: that it answers.
_CHECK_AGE = 5.0


class ModelSnapshot(TypedDict):
    requested: str
    ready: bool
    state: ModelState
    reason: str | None  # why it is in that state, in words (None when ready)
    label: str | None
    backend: str | None
    fallback_reason: str | None
    error: str | None
    #: How the model runs (None where it does not apply: the hash backend, no model).
    dim: int | None
    pooling: str | None
    query_prefix: str | None
    document_prefix: str | None
    max_tokens: int | None
    #: The embedding server that makes the vectors (None: a model here).
    server: EmbeddingServerStatus | None


class ModelLoader:
    def __init__(
        self,
        *,
        backend: str,
        model_dir: Path | None,
        out: MemoryObjectSendStream[IndexerMessage],
        given: EmbedderSource | None = None,
        warm: bool = True,
        server: Settings | None = None,
    ) -> None:
        self._requested = backend
        #: The settings of an embedding server (``embed_url``) that makes the vectors.
        self._server_settings = server if given is None else None
        self._server: ServerEmbedder | None = None
        #: Set once a connection to the embedding server has failed: searches stop
        #: waiting for the model then (their semantic branch says why it is off).
        self.unreachable = anyio.Event()
        self._model_dir = model_dir
        self._out = out
        self._given = given
        self._embedder: Embedder | None = None
        self._ready = False
        self._error: str | None = None
        self._fallback_reason: str | None = None
        self._started: float | None = None  # (monotonic) when the load began
        #: Set when something needs the model (or at start, to warm it up).
        self._wanted = anyio.Event()
        #: Set once the model has loaded, or failed to: its label and backend are known.
        self.loaded = anyio.Event()
        if given is not None and not callable(given):
            self._embedder, self._ready = given, True
            self.loaded.set()
        if warm:
            self._wanted.set()

    @property
    def embedder(self) -> Embedder | None:
        """The model, once loaded (None before, or when it failed)."""
        return self._embedder if self._ready else None

    def want(self) -> None:
        """Something needs a vector: load the model now, if it is not loading already."""
        self._wanted.set()

    def snapshot(self) -> ModelSnapshot:
        emb = self._embedder
        how = _how_it_runs(emb)
        state, reason = self._state()
        return {
            "requested": self._requested,
            "ready": self._ready,
            "state": state,
            "reason": reason,
            "label": emb.label if emb else None,
            "backend": emb.backend if emb else None,
            "fallback_reason": self._fallback_reason,
            "error": self._error,
            "dim": emb.dim if emb else None,
            "pooling": how["pooling"],
            "query_prefix": how["query_prefix"],
            "document_prefix": how["document_prefix"],
            "max_tokens": how["max_tokens"],
            "server": None if self._server is None else self._server.status(),
        }

    def server(self) -> ServerEmbedder | None:
        """The embedding server's client (made at the first need), or None: a model here."""
        if self._server is None and self._server_settings is not None:
            self._server = ServerEmbedder(self._server_settings)
        return self._server

    async def check_server(self) -> None:
        """Ask the embedding server whether it answers, unless a request just said it
        does (one that said it does not is not taken for the last word: it may be back)."""
        server = self.server()
        if server is None:
            return
        health = server.health
        if (not health.reachable or health.checked is None
                or time.monotonic() - health.checked > _CHECK_AGE):
            await server.check()

    async def aclose(self) -> None:
        if self._server is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await self._server.aclose()

    def _state(self) -> tuple[ModelState, str | None]:
        if not self._ready:
            server = self._server
            if server is not None and server.health.reachable is False:
                return "loading", (
                    f"waiting for the embedding server: {server.health.error}; lexical "
                    "searches answer now, semantic ones say so; it connects by itself "
                    "when the server answers")
            what = "the embedding model" if callable(self._given) else (
                f"the embedding model ({self._requested} backend)")
            if self._started is None:
                return "not_loaded", (
                    f"{what} is not loaded yet: it loads on the first semantic or hybrid "
                    "search or embedding job; lexical searches never wait for it")
            return "loading", (
                f"{what} is loading ({time.monotonic() - self._started:.0f} s so far): "
                "lexical searches answer now; semantic and hybrid searches wait for it")
        if self._error is not None:
            return "failed", self._error
        if self._fallback_reason is not None:
            return "fallback", self._fallback_reason
        return "ready", None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with self._out:
            task_status.started()
            if not self._ready:
                await self._wanted.wait()
                self._started = time.monotonic()
                try:
                    server = self.server()
                    if server is not None:
                        self._embedder = await self._connect(server)
                    else:
                        # a shutdown never waits for a model to load, nor does the
                        # process's exit
                        self._embedder = await in_daemon_thread(self._load,
                                                                "rifflux-model-load")
                except Exception as exc:  # the boundary: no model is a state, not a crash
                    self._error = (
                        f"embedding backend {self._requested!r} could not load "
                        f"({type(exc).__name__}: {exc}); semantic search is off. "
                        "Use embedding_backend='auto' to fall back to hashing"
                    )
                    logger.error("%s", self._error)
                self._ready = True
                self.loaded.set()
                if self._started is not None:
                    logger.info("embedding model loaded in %.2f s",
                                time.monotonic() - self._started)
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._out.send(ModelLoaded(  # (or shut down)
                    embedder=self._embedder, fallback=self._fallback_reason is not None))

    async def _connect(self, server: ServerEmbedder) -> Embedder:
        """The embedding server, once it has said its model and dimension: until then
        it is asked again and again (after 0.5 s, then twice as long each time, at most
        a minute, or as soon as another request, such as status's, finds it answering);
        nothing is adopted meanwhile, so no stored vector is dropped."""
        failures = 0
        while True:
            try:
                await server.connect()
                return server
            except EmbeddingUnavailableError as exc:
                failures += 1
                self.unreachable.set()
                delay = backoff(failures, exc.retry_after)
                logger.log(logging.WARNING if failures == 1 else logging.DEBUG,
                           "%s; trying again in %.1f s", exc, delay)
                await wait_or_answer(server.health, delay)

    def _load(self) -> Embedder:
        if callable(self._given):
            return self._given()
        from ..core.embedders import load_embedder

        loaded = load_embedder(self._requested, self._model_dir)
        if loaded.fallback_reason:
            self._fallback_reason = loaded.fallback_reason
            logger.warning("%s", loaded.fallback_reason)
        return loaded.embedder


async def until_either(first: anyio.Event, second: anyio.Event | None) -> None:
    """Until ``first`` or ``second`` (None: never) is set."""
    if second is None:
        await first.wait()
        return
    async with anyio.create_task_group() as tg:
        async def ended(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(ended, first)
        tg.start_soon(ended, second)


class _HowItRuns(TypedDict):
    pooling: str | None
    query_prefix: str | None
    document_prefix: str | None
    max_tokens: int | None


def _how_it_runs(emb: Embedder | None) -> _HowItRuns:
    if emb is None:
        return {"pooling": None, "query_prefix": None, "document_prefix": None,
                "max_tokens": None}
    if isinstance(emb, ServerEmbedder):
        return {"pooling": None, "query_prefix": emb.query_prefix,
                "document_prefix": emb.document_prefix, "max_tokens": None}
    from ..core.embedders import OnnxEmbedder  # (loaded already: here is an embedder)

    if not isinstance(emb, OnnxEmbedder):  # hashing (or a test's fake) has none of these
        return {"pooling": None, "query_prefix": None, "document_prefix": None,
                "max_tokens": None}
    c = emb.config
    return {"pooling": c.pooling, "query_prefix": c.query_prefix,
            "document_prefix": c.document_prefix, "max_tokens": c.max_tokens}
