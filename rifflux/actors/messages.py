"""Every message exchanged between actors: frozen, slotted, keyword-only; events are
named in the past tense. One union type per inbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..core.embedders import Embedder
from ..core.vectors import F32
from ..types import Mode

ChangeKind = Literal["added", "modified", "deleted"]


# ---------------------------------------------------------------- watch pipeline


# watcher -> debouncer
@dataclass(frozen=True, slots=True, kw_only=True)
class FilesChanged:
    root: Path
    changes: tuple[tuple[ChangeKind, str], ...]  # (kind, path relative to root)


@dataclass(frozen=True, slots=True, kw_only=True)
class RescanRequested:
    """Events for ``root`` may have been missed: compare all of it with the index."""

    root: Path


# debouncer -> job feeder
@dataclass(frozen=True, slots=True, kw_only=True)
class IndexBatch:
    root: Path
    upserts: frozenset[str]
    deletes: frozenset[str]


WatchMessage = FilesChanged | RescanRequested
DebouncedMessage = IndexBatch | RescanRequested


# ---------------------------------------------------------------- indexer inbox


@dataclass(frozen=True, slots=True, kw_only=True)
class JobsQueued:
    """The job queue has work (a nudge: dropped when the inbox already holds a message,
    since the indexer looks at the queue after every message)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLoaded:
    """The model loader is done: ``embedder`` is None when no model could be loaded."""

    embedder: Embedder | None
    attempt: int = 0  # earlier attempts to adopt it (the database was busy)


@dataclass(slots=True)
class Receipt:
    """The indexer's answer to a batch of vectors (a reply channel, like a stream)."""

    done: anyio.Event = field(default_factory=anyio.Event)
    stored: bool = False

    def settle(self, stored: bool) -> None:
        self.stored = stored
        self.done.set()


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorsEmbedded:
    model: str
    hashes: tuple[str, ...]
    vectors: F32
    receipt: Receipt


IndexerMessage = JobsQueued | ModelLoaded | VectorsEmbedded


# ---------------------------------------------------------------- embedder inbox


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelAdopted:
    """Vectors of other models are gone: texts may now be embedded with ``embedder``
    (None: nothing is ever embedded)."""

    embedder: Embedder | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedWanted:
    """Some chunks lack vectors (a nudge: dropped when one is already waiting)."""


EmbedderMessage = ModelAdopted | EmbedWanted


# ---------------------------------------------------------------- query inbox


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexChanged:
    removed: tuple[int, ...] = ()
    added_ids: tuple[int, ...] = ()
    added_vectors: F32 | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorsReset:
    """The active model is known: (re)load the vector matrix; ``embedder`` makes the
    query vectors (None: semantic search answers nothing)."""

    embedder: Embedder | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequested:
    query: str
    top_k: int
    mode: Mode
    reply: MemoryObjectSendStream[Any]


ReadKind = Literal["chunk", "file", "counts", "roots"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadRequested:
    what: ReadKind
    key: str | None = None
    reply: MemoryObjectSendStream[Any]


QueryMessage = SearchRequested | ReadRequested | IndexChanged | VectorsReset
