"""Generated corpora for the lexicon's tests: an index written by the real writer, and
the reference every ranking is checked against (FTS5's bm25 over all matches)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rifflux.core.catalog import Allowed
from rifflux.core.chunker import FileMetadata, make_chunk
from rifflux.store.sqlite.lexicon_build import LexiconLimits, refresh
from rifflux.store.sqlite.reader import Reader
from rifflux.store.sqlite.schema import connect
from rifflux.store.sqlite.writer import FileToWrite, Writer

#: A vocabulary whose first words are far more common than the rest (Zipf-like), with
#: words porter folds together, diacritics, a word FTS5 cuts in two and CJK words.
VOCAB = (
    "the code test tests testing model data search index query build run file note "
    "vector chunk rank score café cafe naïve naive resume résumé foo_bar x9 alpha beta "
    "gamma delta epsilon zeta theta kappa lambda sigma omega 東京 京都 日本語 語"
).split()
#: Every build in these tests lists terms in 2 chunks or more (and keeps itself built).
EVERY_TERM = LexiconLimits(min_chunks=0, term_share=0.0, min_rows=2, stale_share=1e9,
                           min_stale=10**9)
#: Builds again whatever changed.
ALWAYS = LexiconLimits(min_chunks=0, term_share=0.0, min_rows=2, stale_share=0.0,
                       min_stale=-1)

Chunks = Sequence[tuple[str, str]]  # (heading path, content)


def afile(rel: str, chunks: Chunks, version: int = 0) -> FileToWrite:
    made = [make_chunk(i, heading, text) for i, (heading, text) in enumerate(chunks)]
    return FileToWrite(rel, version, 10, f"sha-{rel}-{version}", FileMetadata(), made)


@dataclass
class Index:
    """An index on a real SQLite file: its writer, a reader, and the root's id."""

    db: Path
    writer: Writer
    reader: Reader
    root: int

    async def write(self, files: Mapping[str, Chunks], version: int = 0) -> None:
        await self.writer.write_files(
            self.root, [afile(rel, chunks, version) for rel, chunks in files.items()])

    async def delete(self, rels: Sequence[str]) -> None:
        await self.writer.delete_files(self.root, list(rels))

    async def build(self, limits: LexiconLimits = EVERY_TERM) -> bool:
        return await refresh(self.db, limits)

    def newest(self) -> str | None:
        """The file holding the highest chunk id (None: no chunks)."""
        with sqlite3.connect(self.db) as conn:
            row = conn.execute("SELECT f.rel_path FROM chunks c JOIN files f "
                               "ON f.id = c.file_id ORDER BY c.id DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def file_ids(self) -> dict[str, int]:
        with sqlite3.connect(self.db) as conn:
            return {str(r[0]): int(r[1]) for r in conn.execute("SELECT rel_path, id FROM files")}

    async def close(self) -> None:
        await self.reader.conn.close()
        await self.writer.conn.close()


async def open_index(folder: Path) -> Index:
    db = folder / "index.db"
    writer = Writer(await connect(db, busy_timeout_ms=5000), db)
    await writer.missing.adopt("test-model")
    root = await writer.roots.root_id(folder / "notes")
    assert root is not None
    reader = Reader(await connect(db, busy_timeout_ms=5000, readonly=True), db)
    return Index(db, writer, reader, root)


def reference(db: Path, match: str, limit: int, allowed: Allowed | None = None,
              every: str | None = None) -> list[tuple[int, float]]:
    """FTS5's bm25 over every matching row, best first (with ``every``, the rows that
    match it first), equal scores by path, chunk index and root: the plain query."""
    tier = "t.rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?)" if every else "0"
    sql = (f"SELECT t.rowid, bm25(chunks_fts, 2.0, 1.0, 1.0) AS s, {tier} AS tier "
           "FROM chunks_fts t JOIN chunks k ON k.id = t.rowid JOIN files f ON f.id = k.file_id "
           "JOIN roots r ON r.id = f.root_id WHERE chunks_fts MATCH ? ")
    params: list[object] = [every, match] if every else [match]
    if allowed is not None:
        sql += "AND k.file_id IN (SELECT value FROM json_each(?)) "
        params.append(allowed.json)
    sql += "ORDER BY tier DESC, s, f.rel_path, k.chunk_index, r.path LIMIT ?"
    with sqlite3.connect(db) as conn:
        rows = conn.execute(sql, (*params, limit)).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def assert_same_ranking(got: Sequence[tuple[int, float]], db: Path, match: str,
                        limit: int, allowed: Allowed | None = None,
                        every: str | None = None) -> None:
    """``got`` ranks as the reference: the same chunks in the same order with the same
    scores, to the last bit (equal scores are equal, so ties break alike)."""
    assert list(got) == reference(db, match, limit, allowed, every)
