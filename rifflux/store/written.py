"""What the writer is given to write, and what it answers after each commit."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.chunker import Chunk, FileMetadata, Link
from ..core.filters import FileEntry
from ..core.vectors import F32


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
    raw = f"{root_id}\0{rel_path}\0{index}\0{content_hash}".encode()
    return hashlib.sha256(raw).hexdigest()[:20]


