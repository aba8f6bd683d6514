"""What every store answers in the same shape: a chunk row as a result, the order of
equal scores, a text waiting for its vector, a file found by its path, what other
processes committed, a damaged index moved aside.

The row helpers read a chunk row in the column order both stores select
(``ROW_COLUMNS``: row id, chunk id, chunk index, heading path, content, path,
root, title, tags, mtime_ns, line start, line end, file id, kind, page, language).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ..core.filters import tag_levels
from ..errors import OtherModelError
from ..kinds import MARKDOWN_SUFFIXES, UNITS

if TYPE_CHECKING:
    from ..types import ChunkRecord, ProcessInfo
    from .written import Row, Written

#: The columns of a result row, in the order ``row_dict`` reads them (``c``: chunks,
#: ``f``: files, ``r``: roots).
ROW_COLUMNS = (
    "c.id, c.chunk_id, c.chunk_index, c.heading_path, c.content, f.rel_path, r.path, "
    "f.title, f.tags, f.mtime_ns, c.line_start, c.line_end, c.file_id, f.kind, c.page, "
    "c.lang"
)
#: A statement of chunk rows (``ROW_COLUMNS``), to be ended by its ``WHERE``.
ROW_SQL = (f"SELECT {ROW_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id "
           "JOIN roots r ON r.id = f.root_id ")


#: The model whose vectors the index holds (``meta``), and whether one of them is there.
HELD_MODEL = ("SELECT m.value, EXISTS (SELECT 1 FROM embeddings e WHERE e.model = m.value) "
              "FROM meta m WHERE m.key = 'embedding_model'")


def other_model(held: Sequence[object] | None, model: str, *,
                read_only: bool) -> OtherModelError | None:
    """Why a process whose model is ``model`` may not use or replace the vectors the index
    holds (``held``: ``HELD_MODEL``'s row), or None: they are its model's, or there are
    none. Such a process (read-only, a reading command, a fallback model) leaves them as
    they are, and its semantic search is off, saying this."""
    if held is None or held[0] is None or str(held[0]) == model or not held[1]:
        return None
    made = str(held[0])
    then = ("a read-only process never re-embeds an index" if read_only else
            f"to re-embed it with {model} instead (its {made} vectors dropped), index it "
            "with that model (`rifflux index`, or the library)")
    return OtherModelError(
        f"the index's vectors were made by {made}, not by this process's model {model}: "
        "they are left as they are, and semantic search is off here. Search it with the "
        f"options it was indexed with (--backend, --model-dir or --embed-url); {then}")


#: A lexical hit's row: ``ROW_COLUMNS``, then its text key and how many chunks hold that
#: text (what ``copies.Copies.texts`` answers, read in the same statement: a lexical
#: search that collapses copies asks no more for the hits whose rows it read).
HIT_COLUMNS = (f"{ROW_COLUMNS}, c.content_hash, (SELECT COUNT(*) FROM chunks d "
               "WHERE d.content_hash = c.content_hash)")
#: A statement of hit rows (``HIT_COLUMNS``), to be ended by its ``WHERE``.
HIT_SQL = (f"SELECT {HIT_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id "
           "JOIN roots r ON r.id = f.root_id ")


class Rows(dict[int, "ChunkRecord"]):
    """Chunk rows by row id (``row_dict``), and the text key of each with how many chunks
    hold it (``texts``: rows of ``HIT_COLUMNS`` give them, other rows none)."""

    __slots__ = ("texts",)

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict[int, tuple[str, int]] = {}

    @classmethod
    def of_hits(cls, rows: Iterable[Row]) -> Rows:
        """Rows of ``HIT_COLUMNS`` (any columns after them are left alone)."""
        out = cls()
        out.add_hits(rows)
        return out

    def add_hits(self, rows: Iterable[Row]) -> None:
        for r in rows:
            rowid = int(r[0])
            self[rowid] = row_dict(r)
            self.texts[rowid] = (str(r[16]), int(r[17]))


@dataclass(frozen=True, slots=True)
class PendingText:
    content_hash: str
    text: str


def row_dict(row: Row) -> ChunkRecord:
    """A chunk row (``ROW_COLUMNS``) as a result: SPEC's fields, then where it is and what
    note it belongs to."""
    rel = str(row[5])
    record: ChunkRecord = {
        "chunk_id": str(row[1]),
        "path": rel,
        "heading_path": str(row[3]),
        "chunk_index": int(row[2]),
        "content": str(row[4]),
        "root": str(row[6]),
        "title": title_of(row[7], rel),
        "tags": [] if row[8] == "[]" else sorted(tag_levels(json.loads(row[8]))),
        "modified": iso_utc(int(row[9])),
        "line_start": int(row[10]),
        "line_end": int(row[11]),
        "kind": str(row[13]),
    }
    if row[14] is not None:  # a page, or a deck's slide (an installed kind's: a page)
        record["slide" if UNITS.get(record["kind"]) == "slide" else "page"] = int(row[14])
    if row[15] is not None:
        record["lang"] = str(row[15])
    return record


def stable_order(row: Row) -> tuple[str, int, str]:
    """How chunks of equal score are ordered (a row of ``ROW_COLUMNS``): by path, then
    chunk index, then root; the same in every index of the same files, however and in
    whatever order they were built (row ids are not)."""
    return str(row[5]), int(row[2]), str(row[6])


def title_of(stored: str | None, rel_path: str) -> str:
    """The front-matter title, else the first H1 (both stored: a PDF's or a deck's own
    title for other files), else the file's name: a note's without its ``.md``, any other
    file's whole (``paper.pdf``, ``main.py``)."""
    if stored:
        return stored
    name = PurePosixPath(rel_path)
    return name.stem if name.suffix.lower() in MARKDOWN_SUFFIXES else name.name


def iso_utc(mtime_ns: int) -> str:
    d = datetime.fromtimestamp(mtime_ns / 1e9, UTC)
    return f"{d.year}-{d.month:02}-{d.day:02}T{d.hour:02}:{d.minute:02}:{d.second:02}Z"


@dataclass(frozen=True, slots=True)
class Located:
    """An indexed file found by its path."""

    file_id: int
    root: str
    rel_path: str
    other_roots: tuple[str, ...]
    sha256: str = ""  # of the bytes indexed

    @property
    def disk_path(self) -> Path:
        return Path(self.root) / self.rel_path


@dataclass(frozen=True, slots=True)
class Others:
    """Who else has the index open, how far its change log has come, and whether this
    connection reads a streaming replica (its lag: seconds since the last transaction it
    replayed was committed on the primary; it grows while the primary is idle)."""

    processes: list[ProcessInfo]
    sequence: int
    replica: bool = False
    lag_s: float | None = None


@dataclass(frozen=True, slots=True)
class Foreign:
    """What other processes committed since the last look."""

    written: Written
    #: The texts whose vectors they stored.
    embedded: tuple[str, ...] = ()
    #: Texts without a vector that some chunk they deleted had (others may still have).
    texts_gone: tuple[str, ...] = ()
    #: The log no longer reaches back far enough: the matrix, the catalog and the
    #: missing texts must be read again whole.
    reload: bool = False
    #: The last sequence number these changes cover (``done`` once applied).
    upto: int = 0


@dataclass(frozen=True, slots=True)
class Recovery:
    """A damaged index that was moved aside; ``roots`` are what it held, to index again."""

    moved_to: Path
    reason: str
    roots: tuple[Path, ...]
    at: str  # ISO 8601 UTC
