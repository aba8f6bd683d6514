"""What the actors need from an index's store, as typed protocols, and ``OpenStore``: one
open index, its parts handed to the actors that own them.

Two stores implement them: ``store.sqlite`` (one file, the embedded default) and
``store.postgres`` (a PostgreSQL database through asyncpg). The actors and the
supervisor know only these protocols; ``store.opening.open_store`` picks the store
from the index's location.

Who holds what:

- the indexer, the only writer: ``WriterStore`` (files, vectors, and beside them
  ``RootsStore``, ``MissingStore`` and ``TellingStore``: the chunks' languages, told
  after their files are committed) and ``FollowStore`` (other processes'
  commits, read from the change log by sequence number);
- the query actor: ``ReadStore`` (rows, the catalog, counts), ``RecordStore`` and
  ``LinkStore`` (what reads return), ``CopyStore`` (the chunks holding one text), and
  the two legs of a search:
  ``LexicalLeg`` always, and either ``SemanticLeg`` (the store ranks vectors itself,
  inside the database) or ``MatrixStore`` (the store streams the vectors over, the
  query actor keeps them in a compact in-memory matrix and the store reads back the
  exact vectors of its candidates): ``Capabilities`` says which;
- the embedder: ``PendingStore`` (texts without vectors) and ``LeaseStore`` (of all
  the processes on one index, the holder of the lease embeds);
- the heartbeat: ``PresenceStore`` (this process's row among the others, and the
  change log's pruning).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence, Set
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

from ..core.catalog import Allowed
from ..core.filters import FileEntry
from ..core.plan import Scope, StoredState
from ..types import (
    ChunkDetail,
    ChunkRecord,
    Counts,
    FileRecord,
    IndexedFile,
    LexicalExplain,
    LexicalRanking,
    NoteLinks,
    ProcessInfo,
    RootCount,
    StoreKind,
)
from .common import Foreign, Located, Others, PendingText, Recovery, Rows
from .copies import Place
from .telling import Untold
from .written import FileToWrite, Written

if TYPE_CHECKING:  # (numpy: imported by the semantic path, not by a lexical one)
    import numpy as np
    import numpy.typing as npt

    from ..core.vectors import F32, I64

    #: Takes a block of a matrix's load: the chunks' row ids, their vectors, their files.
    VectorBlocks: TypeAlias = Callable[[I64, F32, I64], None]
    #: Gives rows appended by their vectors alone the chunks each serves (vector rows
    #: ascending, chunks, files); returns which vectors had a row
    #: (``VectorIndex.assign``).
    Assign: TypeAlias = Callable[[I64, I64, I64], npt.NDArray[np.bool_]]


class CodeBlocks(Protocol):
    """Takes a block of a matrix's load, already compact: the chunks' row ids, int8
    codes, scales (``core/codes.py``), files, and each vector's own row in the store
    (``MatrixStore.vectors_at`` reads it back; several chunks may share one)."""

    def __call__(self, ids: I64, codes: npt.NDArray[np.int8], scales: F32, groups: I64, /,
                  sources: I64 | None = None) -> None: ...


if not TYPE_CHECKING:
    VectorBlocks = Assign = Callable

#: (chunk row id, score) best first.
Ranked = list[tuple[int, float]]


# ---------------------------------------------------------------- the writer's


class MissingStore(Protocol):
    """The exact set of texts some chunk has without a vector of the active model, kept
    by the writer's own writes and by what the change log says of others'."""

    @property
    def texts(self) -> Set[str] | None: ...
    @property
    def model(self) -> str | None: ...
    def take_left(self) -> set[str]: ...
    async def adopt(self, model: str | None,
                    adopted: Callable[[], Awaitable[None]] | None = None, *,
                    switch: bool = True) -> int:
        """``model`` the active one (other models' vectors dropped), ``adopted`` awaited
        (once each call that gets that far, whatever the model), then the texts lacking
        a vector read; returns how many vectors were dropped. Read-only, or without
        ``switch``, the vectors of the model the index holds are never dropped: another
        model is refused (``OtherModelError``: ``store.common.other_model``)."""
        ...
    async def refresh(self) -> None: ...
    async def changed_elsewhere(self, *, files: Sequence[int], texts_gone: Sequence[str],
                                embedded: Sequence[str]) -> None: ...
    async def in_scopes(self, scopes: Sequence[Scope]) -> set[str]: ...


class RootsStore(Protocol):
    """The indexed folders, which never overlap, and one cache of them."""

    @property
    def paths(self) -> Mapping[int, str]: ...
    def entry(self, root_id: int) -> tuple[tuple[int, str], ...]: ...
    async def load(self) -> None: ...
    async def root_id(self, root: Path) -> int | None: ...
    def find_root(self, root: Path) -> int | None: ...
    def root_containing(self, folder: Path) -> tuple[int, Path] | None: ...
    def roots_inside(self, root: Path) -> list[tuple[int, Path]]: ...
    async def stale_roots(self) -> list[Path]: ...
    async def absorb(self, parent_id: int, child_id: int, prefix: str) -> Written: ...
    async def forget_root(self, root_id: int) -> Written: ...


class TellingStore(Protocol):
    """The languages of committed chunks, told after their files are written
    (``store.telling``)."""

    async def waiting(self) -> int: ...
    async def untold(self, most: int) -> list[Untold]: ...
    async def tell(self, told: Sequence[tuple[Untold, Sequence[str | None]]]) -> Written: ...


class WriterStore(Protocol):
    """Files and vectors, each change one transaction (a file is written whole or not
    at all); the answer says what the commit changed."""

    @property
    def roots(self) -> RootsStore: ...
    @property
    def missing(self) -> MissingStore: ...
    @property
    def telling(self) -> TellingStore: ...
    def snapshot(self) -> AbstractAsyncContextManager[None]:
        """Reads on the writer's connection that all see one state of the database."""
        ...
    async def known_files(self, root_id: int) -> dict[str, StoredState]: ...
    async def touch(self, touches: Sequence[tuple[int, int, int]]) -> Written: ...
    async def write_files(self, root_id: int, files: Sequence[FileToWrite]) -> Written: ...
    async def delete_files(self, root_id: int, rel_paths: Sequence[str]) -> Written: ...
    async def write_vectors(self, model: str, hashes: Sequence[str], vectors: F32, *,
                            lease: str | None = None) -> Written:
        """``lease``: the embedding lease's token the vectors were embedded under
        (``LeaseStore.token``): stored only in a transaction that confirms it is still
        the lease's, else nothing is and ``LeaseLostError`` says so."""
        ...
    async def prune_orphan_vectors(self) -> int: ...
    async def merge_fts(self) -> bool:
        """Compact the full-text index when the store needs it (True: it did)."""
        ...
    async def upkeep(self) -> None:
        """In the background, on a connection of its own, what only makes searches
        faster (they are exact without it): the SQLite store builds its lexicon again
        when stale and fills the compact rows of vectors stored without them."""
        ...
    async def mend(self) -> None:
        """What the database lost without a job noticing (the PostgreSQL store's BM25
        index, emptied by a server restart, a crash or a restore), made again on a
        connection of its own; the indexer asks at start and on a schedule. Searches
        stay exact meanwhile (``LexicalLeg.condition`` says they are slower)."""
        ...


class FollowStore(Protocol):
    """Other processes' commits, from the change log: rows after the last sequence
    number seen, not this process's own. Nothing counts as read until ``done``."""

    @property
    def available(self) -> bool: ...
    async def install(self, *, writes: bool) -> None: ...
    async def sequence(self) -> int: ...
    def look_again(self) -> None: ...
    async def others_wrote(self) -> bool: ...
    async def read(self, model: str | None, roots: RootsStore) -> Foreign | None: ...
    def done(self, upto: int) -> None: ...


# ---------------------------------------------------------------- the query actor's


class LexicalLeg(Protocol):
    def condition(self) -> str | None:
        """What an answer should say of how its lexical branch ranks now (the PostgreSQL
        store: without its BM25 index, which a restart emptied or a replica never holds);
        None: nothing to say."""
        ...

    async def lexical(self, query: str, limit: int, allowed: Allowed | None, *,
                      rows: int | None = None) -> tuple[Ranked, Rows]:
        """The best ``limit`` chunks for the words of ``query`` by BM25 (as the contract
        reads a query: OR-ed words, phrases, prefixes, stopwords, CJK words), only
        chunks of ``allowed`` files when given (before the limit), equal scores in
        ``common.stable_order``; with the rows of (at least) the first ``rows`` of those
        chunks (None: of all; a hybrid search reads the rows of the hits it keeps
        once, after fusion), and their text keys (``Rows.texts``: read with the rows,
        so that collapsing copies asks nothing more for them). Nothing searchable in
        the query: nothing found."""
        ...


class SemanticLeg(Protocol):
    async def semantic(self, vector: F32, limit: int, allowed: Allowed | None, *,
                       feedback: int, weight: float) -> Ranked:
        """The ``limit`` chunks whose vectors are nearest ``vector`` (cosine, best
        first), only chunks of ``allowed`` files when given (before the limit), with
        pseudo-relevance feedback as ``core.vectors.rank`` does it, equal cosines in
        ``common.stable_order``."""
        ...


class MatrixStore(Protocol):
    """A store whose vectors the query actor keeps in memory (the semantic leg is its
    compact matrix, ``core.vectors.VectorIndex``): every vector streamed in blocks into
    the matrix, the exact float32 vectors of a search's candidates, and the stable
    order of tied chunks."""

    async def vector_capacity(self) -> int:
        """At least as many as the chunks with a vector (to size a matrix before a load)."""
        ...
    async def stream_vectors(self, model: str, dim: int, into: VectorBlocks,
                             into_codes: CodeBlocks | None = None,
                             assign: Assign | None = None) -> int:
        """Every chunk with a vector of ``model``, handed to ``into`` a block at a time
        from one snapshot (given ``into_codes``, all of them to it, compact); returns
        how many. Given ``assign`` too, the compact rows may be handed on by their
        vectors alone (ids -1) while the chunks they serve are found beside them, then
        given those by ``assign`` (the rows read, and the chunks found, each in a
        snapshot of its own: what changed between is in the changes the query actor
        replays after a load)."""
        ...
    async def exact_vectors(self, model: str, dim: int, rowids: I64) -> tuple[I64, F32]:
        """The float32 vectors of ``model`` of these chunks (those that have one)."""
        ...
    def vectors_at(self, dim: int, sources: I64) -> tuple[I64, F32]:
        """The float32 vectors stored at these rows of the store's vectors (the
        ``sources`` of a load: those still there, of any model), ascending. Blocking:
        called in the worker thread that scanned the matrix, from any thread."""
        ...
    async def in_stable_order(self, ranked: Ranked, limit: int) -> Ranked: ...


class ReadStore(Protocol):
    async def rows(self, rowids: Sequence[int]) -> dict[int, ChunkRecord]: ...
    async def catalog(self) -> tuple[dict[int, str], list[FileEntry],
                                     list[tuple[int, int]]]: ...
    async def counts(self, model: str | None) -> tuple[Counts, str | None]: ...
    async def root_counts(self) -> list[RootCount]: ...
    async def files(self, root_id: int | None = None) -> list[IndexedFile]: ...
    async def processes(self, origin: str) -> Others: ...
    async def roots(self) -> list[str]: ...


class CopyStore(Protocol):
    """Which chunks hold the same text (``store.copies``, one for both stores)."""

    async def texts(self, rowids: Sequence[int]) -> dict[int, tuple[str, int]]: ...
    async def places(self, keys: Collection[str]) -> dict[str, list[Place]]: ...


class LanguageStore(Protocol):
    """The languages of chunks (``store.languages``, one for both stores)."""

    async def of(self, rowids: Sequence[int]) -> dict[int, str]: ...
    async def left_out(self, allowed: Allowed) -> list[int]: ...


class RecordStore(Protocol):
    async def locate(self, path: str, roots: dict[int, str],
                     root_id: int | None = None) -> Located | None: ...
    async def file(self, located: Located) -> FileRecord | None: ...
    async def chunk(self, chunk_id: str) -> ChunkDetail | None: ...


class LinkStore(Protocol):
    async def of(self, file_id: int, path: str, root: str) -> NoteLinks: ...
    async def notes(self, file_ids: Collection[int]) -> dict[int, tuple[str, str]]: ...


# ------------------------------------------------------ the embedder's and the heartbeat's


class PendingStore(Protocol):
    async def pending(self, model: str, limit: int) -> list[PendingText]: ...


class LeaseStore(Protocol):
    """Of all the processes on one index, the holder embeds; the lease is let go when
    its holder dies, however it dies."""

    @property
    def held(self) -> bool: ...
    @property
    def where(self) -> str:
        """What the lease is, for logs (a lock file, an advisory lock)."""
        ...
    async def try_take(self) -> bool:
        """Take the lease if no other process holds it (never waits)."""
        ...
    async def confirm(self) -> bool:
        """Whether the lease is still held, as its keeper says now (``held`` is what this
        process last knew: a lease lost with its connection may be another's already).
        The embedder asks before each batch."""
        ...
    @property
    def token(self) -> str | None:
        """What this take of the lease is known by, given with a batch's vectors to the
        writer, which stores them only in a transaction confirming it (None: a lease
        that cannot be lost unseen, as a lock file held open)."""
        ...
    async def give_back(self) -> None: ...


class PresenceStore(Protocol):
    async def beat(self, roles: list[str]) -> None: ...
    async def leave(self) -> None: ...
    async def others(self) -> list[ProcessInfo]: ...
    async def prune_changes(self) -> None:
        """Drop the change log's oldest rows (a follower further behind reloads)."""
        ...


# ---------------------------------------------------------------- one open index


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What a store is and does itself, and so what the actors need not."""

    #: Which store it is.
    kind: StoreKind
    #: The query actor keeps every vector in a matrix (``MatrixStore``); False: the
    #: store ranks vectors itself (``SemanticLeg``), and a process's memory does not
    #: grow with the index.
    vectors_in_memory: bool
    #: How the lexical leg ranks: ``fts5`` (SQLite's bm25), ``bm25`` (pg_textsearch in
    #: PostgreSQL) or ``ts_rank_cd`` (PostgreSQL's own ranking, without pg_textsearch).
    lexical_ranking: LexicalRanking
    #: The query the lexical leg runs for a query (``explain``), without running it; None:
    #: the query has no word the store would search.
    lexical_plan: Callable[[str], LexicalExplain | None]
    #: What a search's answer should know of the ranking (None: nothing to say).
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenStore:
    """An open index: each part for the actor that holds it. The parts are closed when
    the context that opened the store is left."""

    #: Where the index is, as messages name it (a path, or a URL without its password).
    where: str
    capabilities: Capabilities
    writer: WriterStore
    follow: FollowStore
    reads: ReadStore
    records: RecordStore
    links: LinkStore
    #: The text keys of a search's candidates and the places of a text held more than once.
    copies: CopyStore
    #: The languages of a search's candidates, and the chunks a ``lang`` filter leaves out.
    languages: LanguageStore
    lexical: LexicalLeg
    #: The store's semantic leg (``capabilities.vectors_in_memory`` is False) ...
    semantic: SemanticLeg | None
    #: ... or the vectors the query actor keeps in its int8 matrix: on its own
    #: connection, the float32 vectors of a search's candidates and the stable order
    #: of tied chunks; and a short-lived reader that streams every vector into a load.
    matrix: MatrixStore | None
    open_matrix: MatrixOpener | None
    pending: PendingStore
    presence: PresenceStore | None
    lease: LeaseStore | None
    #: A damaged index that was moved aside and is being indexed again.
    recovery: Recovery | None = None
    #: A short-lived connection of its own for a long read (the catalog), so that
    #: searches never wait behind it (None: ``reads`` serves it, as a pool does).
    open_reads: ReadsOpener | None = None
    #: Work to start once the index is open and serving (the routine integrity check
    #: of a large SQLite file), run in a worker thread and abandoned at shutdown.
    later: Callable[[], None] | None = None


class MatrixOpener(Protocol):
    def __call__(self) -> AbstractAsyncContextManager[MatrixStore]: ...


class ReadsOpener(Protocol):
    def __call__(self) -> AbstractAsyncContextManager[ReadStore]: ...
