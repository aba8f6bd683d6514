"""Every message exchanged between actors: frozen, slotted, keyword-only; events are
named in the past tense. One union type per inbox."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from ..core.filters import NO_FILTERS, FileEntry, Filters
from ..errors import InvalidArgumentError, RiffluxError
from ..limits import SNIPPET_CHARS
from ..note_types import RecentNote
from ..types import (
    CONTENT_MODES,
    DUPLICATES,
    MODES,
    ChunkDetail,
    ContentMode,
    Counts,
    Duplicates,
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


EmbedderMessage = ModelAdopted | EmbedWanted


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


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchShape:
    """How a search's answer is shaped: a cap of hits per file, content or only the
    snippet, why each hit ranks where it does, and each text once or every copy."""

    max_per_file: int | None = None
    content: ContentMode = "full"
    explain: bool = False
    snippet_chars: int = SNIPPET_CHARS[1]
    duplicates: Duplicates = "collapse"

    @classmethod
    def checked(cls, *, max_per_file: object, content: object, explain: object,
                snippet_chars: object, duplicates: object = "collapse") -> SearchShape:
        """From a caller's values; raises ``InvalidArgumentError`` saying what to fix."""
        if max_per_file is not None and (isinstance(max_per_file, bool)
                                         or not isinstance(max_per_file, int)
                                         or max_per_file < 1):
            raise InvalidArgumentError(
                f"max_per_file must be an integer of at least 1, or None, not {max_per_file!r}")
        if content not in CONTENT_MODES:
            raise InvalidArgumentError(
                f"unknown content {content!r}: use one of {', '.join(CONTENT_MODES)}")
        least, _, most = SNIPPET_CHARS
        if isinstance(snippet_chars, bool) or not isinstance(snippet_chars, int) \
                or not least <= snippet_chars <= most:
            raise InvalidArgumentError(f"snippet_chars must be a whole number from {least} to "
                                       f"{most}, not {snippet_chars!r}")
        if duplicates not in DUPLICATES:
            raise InvalidArgumentError(f"unknown duplicates {duplicates!r}: use one of "
                                       f"{', '.join(DUPLICATES)} (collapse: each text once, "
                                       "its other places in also_in; all: every copy)")
        return cls(max_per_file=max_per_file, content=content, explain=bool(explain),
                   snippet_chars=snippet_chars, duplicates=duplicates)


#: Answers as SPEC has them: all hits, whole contents, no explanation.
PLAIN = SearchShape()


def checked_mode(query: object, top_k: object, mode: object) -> Mode:
    """A search's mode, once the query, ``top_k`` and mode are known to be good; raises
    ``InvalidArgumentError`` saying what to fix."""
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InvalidArgumentError(f"top_k must be an integer of at least 1, not {top_k!r}")
    if not isinstance(query, str):
        raise InvalidArgumentError("query must be a string")
    return mode


#: The one answer to a request, sent back once: the value asked for, or the
#: ``RiffluxError`` that stopped it (the caller raises it).
Reply: TypeAlias = MemoryObjectSendStream[_T | RiffluxError]


def give(reply: Reply[_T], answer: _T | RiffluxError) -> None:
    """Send a request its one answer (the buffer has room); a caller that went away
    (cancelled) gets none."""
    try:
        reply.send_nowait(answer)
    except anyio.BrokenResourceError:
        pass


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequested:
    query: str
    top_k: int
    mode: Mode
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
