"""Every message exchanged between actors: frozen, slotted, keyword-only; events
are named in the past tense. One union type per stream."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..core.vectors import F32

ChangeKind = Literal["added", "modified", "deleted"]
Mode = Literal["lexical", "semantic", "hybrid"]


# watcher -> debouncer
@dataclass(frozen=True, slots=True, kw_only=True)
class FilesChanged:
    root: Path
    changes: tuple[tuple[ChangeKind, str], ...]  # (kind, path relative to root)


# debouncer -> jobs
@dataclass(frozen=True, slots=True, kw_only=True)
class IndexBatch:
    root: Path
    upserts: frozenset[str]
    deletes: frozenset[str]


# indexer -> embedder: "there may be chunks without vectors" (a nudge, may be dropped)
@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedWanted:
    pass


# embedder -> indexer
@dataclass(frozen=True, slots=True, kw_only=True)
class VectorsReady:
    model: str
    hashes: tuple[str, ...]
    vectors: F32
    written: anyio.Event  # set by the indexer once they are committed


# indexer -> query
@dataclass(frozen=True, slots=True, kw_only=True)
class IndexChanged:
    removed: tuple[int, ...] = ()
    added_ids: tuple[int, ...] = ()
    added_vectors: F32 | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorsReset:
    """The active model changed: drop every vector held in memory and reload."""

    model: str


# api -> query
@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequested:
    query: str
    top_k: int
    mode: Mode
    reply: MemoryObjectSendStream[list[dict[str, Any]] | BaseException]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadRequested:
    what: Literal["chunk", "file", "counts", "roots"]
    key: str = ""
    reply: MemoryObjectSendStream[Any]


QueryMessage = SearchRequested | ReadRequested | IndexChanged | VectorsReset


@dataclass(frozen=True, slots=True, kw_only=True)
class RescanRequested:
    """Events for ``root`` may have been missed: compare all of it with the index."""

    root: Path


WatchMessage = FilesChanged | RescanRequested
DebouncedMessage = IndexBatch | RescanRequested
