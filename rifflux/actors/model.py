"""The embedding model, loaded once in a worker thread while everything else starts."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
from anyio.abc import TaskStatus

from ..core.embedders import Embedder, load_embedder

logger = logging.getLogger(__name__)


class ModelState:
    """Set once: ``ready`` fires with either ``embedder`` or ``error``."""

    def __init__(self, backend: str, model_dir: Path | None, embedder: Embedder | None = None):
        self.requested = backend
        self._model_dir = model_dir
        self.embedder: Embedder | None = embedder
        self.error: str | None = None
        self.fallback_reason: str | None = None
        self.ready = anyio.Event()
        #: Set by the indexer once stored vectors of other models are dropped and the
        #: matrix reload is on its way: only then may new vectors be made.
        self.adopted = anyio.Event()
        if embedder is not None:
            self.ready.set()

    @property
    def label(self) -> str | None:
        return self.embedder.label if self.embedder else None

    async def load(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        if self.ready.is_set():
            return
        try:
            loaded = await anyio.to_thread.run_sync(load_embedder, self.requested, self._model_dir)
        except Exception as exc:  # backend="onnx" and the model cannot load
            self.error = (
                f"embedding backend 'onnx' could not load ({type(exc).__name__}: {exc}); "
                "semantic search is off. Use embedding_backend='auto' to fall back to hashing"
            )
            logger.error("%s", self.error)
        else:
            self.embedder = loaded.embedder
            self.fallback_reason = loaded.fallback_reason
            if loaded.fallback_reason:
                logger.warning("%s", loaded.fallback_reason)
        finally:
            self.ready.set()


class Gate:
    """Open unless a bulk index is running: the embedder waits at it between batches,
    so a cold index is lexically searchable as early as the cores allow."""

    def __init__(self) -> None:
        self._open = anyio.Event()
        self._open.set()

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def close(self) -> None:
        if self._open.is_set():
            self._open = anyio.Event()

    def open(self) -> None:
        self._open.set()

    async def wait(self) -> None:
        await self._open.wait()


class PendingTracker:
    """Whether any chunk may lack a vector, without asking the database.

    The indexer bumps ``generation`` after every commit that adds chunks (and when a
    model is adopted); the embedder, when a read of the pending texts comes back
    empty, records the generation it read before that query. The index is known
    to be fully embedded while the two agree, and a no-op reindex skips the
    pending-vector query.
    """

    def __init__(self) -> None:
        self.generation = 0
        self._empty_at = -1

    def changed(self) -> None:
        self.generation += 1

    def observed_empty(self, generation: int) -> None:
        self._empty_at = max(self._empty_at, generation)

    @property
    def clean(self) -> bool:
        return self._empty_at == self.generation
