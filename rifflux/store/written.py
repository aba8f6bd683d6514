"""What the writer is given to write, and what it answers after each commit; a row as a
store's driver gives it (``Row``, which ``common`` reads results from too)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..core.filters import FileEntry, tag_levels

if TYPE_CHECKING:  # (numpy is imported where vectors are made or read, not before)
    import aiosqlite

    from ..core.chunker import Chunk, FileMetadata, Link
    from ..core.vectors import F32


class Row(Protocol):
    """A row as a store's driver gives it: its columns by position."""

    def __getitem__(self, index: int, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class FileToWrite:
    rel_path: str
    mtime_ns: int
    size: int
    sha256: str
    metadata: FileMetadata
    chunks: Sequence[Chunk]
    line_count: int = 0
    encoding: str = "utf-8"
    links: Sequence[Link] = ()
    cjk: bool = True  # False: no chunk holds CJK text (nothing to cut for FTS5)
    kind: str = "markdown"  # which extractor read it (core.extract)
    #: Each chunk's indexed text (``core.lexemes.indexed_text``), when worked out ahead:
    #: a bulk copy into PostgreSQL does, in a worker thread while the batch before is
    #: written (None: the PostgreSQL writer works it out; SQLite's FTS5 needs none).
    lexemes: Sequence[str] | None = None
    #: Whether its chunks carry their languages (an index copied by ``migrate``); else
    #: they are told after the commit (``store.telling``), and the file waits for them.
    langs_told: bool = False

    @property
    def langs(self) -> str:
        """The languages of its chunks, as the ``files.langs`` column holds them."""
        return json.dumps(sorted({c.lang for c in self.chunks if c.lang}))

    @property
    def langs_pending(self) -> int:
        """How many of its chunks wait for their language (``files.langs_pending``)."""
        return 0 if self.langs_told else len(self.chunks)

    def entry(self, file_id: int, root_id: int) -> FileEntry:
        """The file as the catalog sees it, once written."""
        return FileEntry(file_id, root_id, self.rel_path, self.mtime_ns,
                         tag_levels(self.metadata.tags), self.metadata.frontmatter, self.kind,
                         frozenset(c.lang for c in self.chunks if c.lang), self.langs_pending)


#: Files whose outgoing links changed, each with every file it links to now (file ids).
Edges = tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True)
class Written:
    """What a commit changed, for the query actor's matrix and catalog."""

    removed: tuple[int, ...] = ()  # chunk rowids that are gone
    added_ids: tuple[int, ...] = ()  # chunk rowids whose vector exists (rows of added_vectors)
    added_files: tuple[int, ...] = ()  # the file of each of added_ids
    added_vectors: F32 | None = None
    lacking: int = 0  # texts now stored without a vector
    files: tuple[FileEntry, ...] = ()  # files written
    files_removed: tuple[int, ...] = ()  # file ids deleted
    roots: tuple[tuple[int, str], ...] = ()  # (id, path) of the root of ``files``
    roots_removed: tuple[int, ...] = ()
    #: Files whose matrix rows are all dropped before ``added_ids`` are set (another
    #: process rewrote or deleted them: their old chunk rowids are not known here).
    files_replaced: tuple[int, ...] = ()
    links: Edges = ()  # in order: a later entry for a file replaces an earlier one


def chunk_id_for(root_id: int, rel_path: str, index: int, content_hash: str) -> str:
    import hashlib  # (the writer's: a reader never makes an id)

    raw = f"{root_id}\0{rel_path}\0{index}\0{content_hash}".encode()
    return hashlib.sha256(raw).hexdigest()[:20]




#: The ``files`` columns a catalog entry is read from, in ``file_entry``'s order.
FILE_ENTRY_COLUMNS = ("id, root_id, rel_path, mtime_ns, tags, frontmatter, kind, langs, "
                      "langs_pending")


def file_entry(row: Row) -> FileEntry:
    """A catalog entry from a row of ``FILE_ENTRY_COLUMNS``: its tags and languages as
    sets shared by the entries with the same ones, its front matter decoded when a
    filter first reads it (at a million chunks, 73,000 files' front matter was half the
    catalog's 1 s of CPU, at the start of every process, beside the matrix's load)."""
    return FileEntry(int(row[0]), int(row[1]), str(row[2]), int(row[3]),
                     _tags(row[4]), _front_matter(row[5]), str(row[6]), _langs(row[7]),
                     int(row[8]))


@lru_cache(maxsize=4096)
def _tags(text: str) -> frozenset[str]:
    return tag_levels(json.loads(text))


@lru_cache(maxsize=256)
def _langs(text: str) -> frozenset[str]:
    return frozenset(json.loads(text))


_EMPTY: Mapping[str, Any] = {}


def _front_matter(text: str) -> Mapping[str, Any]:
    return _EMPTY if text == "{}" else FrontMatter(text)


class FrontMatter(Mapping[str, Any]):
    """A file's front matter as the ``files`` row holds it (JSON), decoded once, when it
    is first read."""

    __slots__ = ("_text", "_value")

    def __init__(self, text: str) -> None:
        self._text = text
        self._value: dict[str, Any] | None = None

    def _decoded(self) -> dict[str, Any]:
        if self._value is None:
            value = json.loads(self._text)
            self._value = value if isinstance(value, dict) else {}
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())


#: Host parameters per ``IN (...)`` list.
BATCH = 500
_T = TypeVar("_T")


def batches(items: Sequence[_T]) -> Iterator[Sequence[_T]]:
    """``items`` in slices of ``BATCH``, one ``IN (...)`` list each."""
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


def marks(n: int) -> str:
    """``?,?,?``: the placeholders of an ``IN (...)`` list of ``n`` items."""
    return ",".join("?" * n)


async def file_entries(conn: aiosqlite.Connection, ids: Iterable[int]) -> list[FileEntry]:
    """The catalog entries of these files (those that still exist)."""
    out: list[FileEntry] = []
    for part in batches(sorted(set(ids))):
        rows = await conn.execute_fetchall(
            f"SELECT {FILE_ENTRY_COLUMNS} FROM files WHERE id IN ({marks(len(part))})", part)
        out.extend(map(file_entry, rows))
    return out
