"""The model loader: loads the embedding model once, in a worker thread, while
everything else starts, and tells the indexer (which adopts it) what it got."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from ..core.embedders import Embedder, OnnxEmbedder, load_embedder
from ..types import ModelState
from .messages import IndexerMessage, ModelLoaded

logger = logging.getLogger(__name__)

#: An embedder, or a function that makes one (called in a worker thread).
EmbedderSource = Embedder | Callable[[], Embedder]


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


class ModelLoader:
    def __init__(
        self,
        *,
        backend: str,
        model_dir: Path | None,
        out: MemoryObjectSendStream[IndexerMessage],
        given: EmbedderSource | None = None,
    ) -> None:
        self._requested = backend
        self._model_dir = model_dir
        self._out = out
        self._given = given
        self._embedder: Embedder | None = None
        self._ready = False
        self._error: str | None = None
        self._fallback_reason: str | None = None
        self._started = time.monotonic()
        #: Set once the model has loaded, or failed to: its label and backend are known.
        self.loaded = anyio.Event()
        if given is not None and not callable(given):
            self._embedder, self._ready = given, True
            self.loaded.set()

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
        }

    def _state(self) -> tuple[ModelState, str | None]:
        if not self._ready:
            what = "the embedding model" if callable(self._given) else (
                f"the embedding model ({self._requested} backend)")
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
            self._started = time.monotonic()
            if not self._ready:
                try:
                    # abandoned when cancelled: a shutdown never waits for a model to load
                    self._embedder = await anyio.to_thread.run_sync(
                        self._load, abandon_on_cancel=True)
                except Exception as exc:  # the boundary: no model is a state, not a crash
                    self._error = (
                        f"embedding backend {self._requested!r} could not load "
                        f"({type(exc).__name__}: {exc}); semantic search is off. "
                        "Use embedding_backend='auto' to fall back to hashing"
                    )
                    logger.error("%s", self._error)
                self._ready = True
                self.loaded.set()
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._out.send(ModelLoaded(embedder=self._embedder))  # (or shut down)

    def _load(self) -> Embedder:
        if callable(self._given):
            return self._given()
        loaded = load_embedder(self._requested, self._model_dir)
        if loaded.fallback_reason:
            self._fallback_reason = loaded.fallback_reason
            logger.warning("%s", loaded.fallback_reason)
        return loaded.embedder


class _HowItRuns(TypedDict):
    pooling: str | None
    query_prefix: str | None
    document_prefix: str | None
    max_tokens: int | None


def _how_it_runs(emb: Embedder | None) -> _HowItRuns:
    if not isinstance(emb, OnnxEmbedder):  # hashing (or a test's fake) has none of these
        return {"pooling": None, "query_prefix": None, "document_prefix": None,
                "max_tokens": None}
    c = emb.config
    return {"pooling": c.pooling, "query_prefix": c.query_prefix,
            "document_prefix": c.document_prefix, "max_tokens": c.max_tokens}
