"""Every message exchanged between actors: frozen, slotted, keyword-only; events are
named in the past tense. One union type per inbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..core.filters import NO_FILTERS, FileEntry, Filters
from ..errors import RiffluxError
from ..note_types import RecentNote
from ..query.asked import PLAIN, SearchShape
from ..types import (
    ChunkDetail,
    Counts,
    FileLines,
    FileRecord,
    IndexedFile,
    Mode,
    Neighbor,
    NoteLinks,
    RootCount,
    SearchResult,
    TagCount,
)

if TYPE_CHECKING:  # (numpy and the model load only where a vector is needed)
    from ..core.embedders import Embedder
    from ..core.vectors import F32
    from ..store.common import Others

ChangeKind = Literal["added", "modified", "deleted"]
_T = TypeVar("_T")


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
    #: A model used in place of the one asked for (``auto``'s fallback): it never
    #: re-embeds an index another model's vectors are in.
    fallback: bool = False


@dataclass(slots=True)
class Receipt:
    """The indexer's answer to a batch of vectors (a reply channel, like a stream)."""

    done: anyio.Event = field(default_factory=anyio.Event)
    stored: bool = False
    #: Not stored because the lease the batch was embedded under is no longer held.
    lost: bool = False

    def settle(self, stored: bool, *, lost: bool = False) -> None:
        self.stored, self.lost = stored, lost
        self.done.set()


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorsEmbedded:
    model: str
    hashes: tuple[str, ...]
    vectors: F32
    receipt: Receipt
    #: The embedding lease's token when the batch was embedded (``LeaseStore.token``):
    #: the writer stores the vectors only in a transaction that confirms it.
    lease: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ticked:
    """The follow timer ticked: look whether another process committed to the index, and
    if so read its changes from the log. ``looked`` is set once that is done (the timer
    sends the next tick only then)."""

    looked: anyio.Event = field(default_factory=anyio.Event)


IndexerMessage = JobsQueued | ModelLoaded | VectorsEmbedded | Ticked


# ---------------------------------------------------------------- embedder inbox


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelAdopted:
    """Vectors of other models are gone: texts may now be embedded with ``embedder``
    (None: nothing is ever embedded)."""

    embedder: Embedder | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedWanted:
    """Some chunks lack vectors (a nudge: dropped when one is already waiting)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackoffEnded:
    """The embedding server did not answer, and the wait before asking it again is over
    (the embedder's own timer)."""


EmbedderMessage = ModelAdopted | EmbedWanted | BackoffEnded


# ---------------------------------------------------------------- history actor


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryWanted:
    """The branches of a repository may have moved, or the indexed folders changed:
    the history actor reads what is new (``why`` is logged)."""

    why: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryModelReady:
    """The embedding model has loaded: commits without a vector can be embedded."""


HistoryMessage = HistoryWanted | HistoryModelReady


# ---------------------------------------------------------------- query inbox


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexChanged:
    """A commit: chunks gone and chunks (with vectors) added, files written or deleted."""

    removed: tuple[int, ...] = ()
    added_ids: tuple[int, ...] = ()
    added_files: tuple[int, ...] = ()  # the file of each added chunk
    added_vectors: F32 | None = None
    files: tuple[FileEntry, ...] = ()
    files_removed: tuple[int, ...] = ()
    roots: tuple[tuple[int, str], ...] = ()  # (id, path) of the roots of ``files``
    roots_removed: tuple[int, ...] = ()
    files_replaced: tuple[int, ...] = ()  # drop these files' rows first (another process)
    #: Files whose outgoing links changed, with every file each links to now.
    links: tuple[tuple[int, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorsReset:
    """The active model is known: (re)load the vector matrix; ``embedder`` makes the
    query vectors (None: semantic search answers nothing)."""

    embedder: Embedder | None
    #: Also read the catalog of files again (another process changed more than the
    #: change log still tells).
    catalog: bool = False


#: The one answer to a request, sent back once: the value asked for, or the
#: ``RiffluxError`` that stopped it (the caller raises it).
Reply: TypeAlias = MemoryObjectSendStream[_T | RiffluxError]


def give(reply: Reply[_T], answer: _T | RiffluxError) -> None:
    """Send a request its one answer (the buffer has room); a caller that went away
    (cancelled: its reply closed) gets none."""
    try:
        reply.send_nowait(answer)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequested:
    query: str
    top_k: int
    mode: Mode
    #: What the answer would look like: the semantic branch embeds it (core.hypothesis).
    hypothesis: str | None = None
    filters: Filters = NO_FILTERS
    shape: SearchShape = PLAIN
    reply: Reply[list[SearchResult]]


# One request per read, each with the answer it gets. ``root`` narrows a file's path
# to one indexed folder (its path, or its name when only one has that name).


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkRequested:
    chunk_id: str
    reply: Reply[ChunkDetail | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRequested:
    path: str
    root: str | None = None
    reply: Reply[FileRecord | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class LinesRequested:
    """Lines ``start`` to ``end`` (1-based, inclusive; None: from the first, to the last)
    of a file as it is on disk now; with ``by_page``, its pages (or slides) instead."""

    path: str
    root: str | None = None
    start: int | None = None
    end: int | None = None
    by_page: bool = False
    reply: Reply[FileLines | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class LinksRequested:
    path: str
    root: str | None = None
    reply: Reply[NoteLinks]


@dataclass(frozen=True, slots=True, kw_only=True)
class NeighborsRequested:
    path: str
    root: str | None = None
    depth: int = 1
    reply: Reply[list[Neighbor]]


@dataclass(frozen=True, slots=True, kw_only=True)
class TagsRequested:
    """Every tag with the number of files carrying it; ``paths`` (globs) narrows them."""

    paths: tuple[str, ...] = ()
    reply: Reply[list[TagCount]]


@dataclass(frozen=True, slots=True, kw_only=True)
class FilesRequested:
    """The indexed files (of ``root`` alone, when given), by folder, then path."""

    root: str | None = None
    reply: Reply[list[IndexedFile]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecentRequested:
    """The ``limit`` files changed most recently that pass ``filters``, newest first."""

    limit: int
    filters: Filters = NO_FILTERS
    reply: Reply[list[RecentNote]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CountsRequested:
    """The index's counts, and the model whose vectors they count."""

    reply: Reply[tuple[Counts, str | None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RootsRequested:
    reply: Reply[list[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RootCountsRequested:
    reply: Reply[list[RootCount]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessesRequested:
    """The other processes with the index open (``origin`` is this one), and the change
    sequence number."""

    origin: str
    reply: Reply[Others]


ReadRequest = (ChunkRequested | FileRequested | LinesRequested | LinksRequested
               | NeighborsRequested | TagsRequested | FilesRequested | CountsRequested
               | RootsRequested | RootCountsRequested | ProcessesRequested | RecentRequested)
Request = SearchRequested | ReadRequest
QueryMessage = Request | IndexChanged | VectorsReset


class IndexerSnapshot(TypedDict):
    """The indexer's counters, as the service's status reads them."""

    files_written: int
    vectors_written: int
    busy_retries: int
    last_job_seconds: float
    adopt_error: str | None
    #: Texts without a vector of the active model (None until it is adopted).
    pending: int | None
