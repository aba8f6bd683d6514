"""The compact rows of vectors an older version stored without them: filled once by a
writer that opens the index, in blocks, each row exactly what the matrix would make of
its vector; a new index has nothing to fill and is never scanned for it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rifflux import Rifflux
from rifflux.core.codes import normalise, quantise, unpack
from rifflux.store.sqlite import codes_fill
from rifflux.store.sqlite.codes_fill import MARK, CodesFiller
from rifflux.store.sqlite.schema import connect

from ..helpers import CountingEmbedder, eventually, write_all

pytestmark = pytest.mark.anyio


def counts(db: Path) -> tuple[int, int, str | None]:
    """(vectors, compact rows, the mark)."""
    with sqlite3.connect(db) as con:
        vectors = con.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        rows = con.execute("SELECT COUNT(*) FROM embedding_codes").fetchone()[0]
        mark = con.execute("SELECT value FROM meta WHERE key = ?", (MARK,)).fetchone()
    return int(vectors), int(rows), None if mark is None else str(mark[0])


async def test_an_older_indexs_vectors_get_their_compact_rows_once_a_writer_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "i.db"
    root = write_all(tmp_path / "notes", {
        f"n{i}.md": f"# Note {i}\n\nOtters number {i} float in river {i * 7}.\n\n"
                    f"## More\n\nBread loaf {i} rises in oven {i * 3}.\n"
        for i in range(12)})
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    vectors, rows, mark = counts(db)
    assert vectors >= 12 and rows == vectors and mark == "complete"
    with sqlite3.connect(db) as con:  # as a version before the compact rows left it
        con.execute("DELETE FROM embedding_codes")
        con.execute("DELETE FROM meta WHERE key = ?", (MARK,))
    monkeypatch.setattr(codes_fill, "BLOCK", 5)  # (several blocks)
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await eventually(lambda: counts(db) == (vectors, vectors, "complete"))
        assert await rf.search("otters in the river", mode="semantic")
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT e.dim, e.vector, q.codes FROM embeddings e "
                             "JOIN embedding_codes q ON q.id = e.id").fetchall()
    assert len(stored) == vectors
    for dim, vector, row in stored:
        want_codes, want_scales = quantise(normalise(
            np.frombuffer(vector, dtype=np.float32).reshape(1, dim)))
        got_codes, got_scales = unpack(row, dim)
        assert np.array_equal(got_codes, want_codes) and np.array_equal(got_scales,
                                                                        want_scales)


def add_vector(db: Path, vector: list[float], *, with_row: bool) -> None:
    """A vector as this version writes it (with its compact row) or an older one did."""
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO embeddings(content_hash, model, dim, vector) "
                    "VALUES (?, 'm', ?, ?)", (str(vector), len(vector),
                                              np.asarray(vector, dtype=np.float32).tobytes()))
        if with_row:
            con.executemany(codes_fill._ADD, codes_fill._rows(con.execute(
                "SELECT id, model, dim, vector FROM embeddings "
                "WHERE id = last_insert_rowid()").fetchall()))


async def test_a_new_index_is_marked_complete_and_never_scanned_for_rows_to_fill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "i.db"
    await (await connect(db, busy_timeout_ms=1000)).close()
    assert counts(db) == (0, 0, "complete")
    add_vector(db, [1.0, 2.0, 3.0, 4.0], with_row=True)
    add_vector(db, [4.0, 3.0, 2.0, 1.0], with_row=True)
    with monkeypatch.context() as m:  # (a scan for vectors lacking a row would fail)
        m.setattr(codes_fill, "_LACKING", "SELECT no_such_column FROM embeddings")
        assert await CodesFiller(db).fill() == 0
    assert counts(db) == (2, 2, "complete")
    with sqlite3.connect(db) as con:
        con.execute("DELETE FROM embedding_codes")
        con.execute("DELETE FROM meta WHERE key = ?", (MARK,))
    assert await CodesFiller(db, read_only=True).fill() == 0  # (read-only: nothing)
    assert await CodesFiller(db).fill() == 2
    assert counts(db) == (2, 2, "complete")


async def test_vectors_an_older_version_wrote_after_the_mark_get_their_rows(
    tmp_path: Path
) -> None:
    db = tmp_path / "i.db"
    await (await connect(db, busy_timeout_ms=1000)).close()
    for i in range(3):
        add_vector(db, [1.0, float(i), 0.0, 2.0], with_row=True)
    for i in range(2):  # (a version before the compact rows, after the mark was set)
        add_vector(db, [0.0, 1.0, float(i), 3.0], with_row=False)
    with sqlite3.connect(db) as con:  # (not read: the fill starts after the newest row)
        con.execute("DELETE FROM embedding_codes WHERE id = 1")
    assert counts(db) == (5, 2, "complete")
    assert await CodesFiller(db).fill() == 2
    assert counts(db) == (5, 4, "complete")
    with sqlite3.connect(db) as con:
        assert [r[0] for r in con.execute("SELECT id FROM embedding_codes ORDER BY id")] \
            == [2, 3, 4, 5]
    assert await CodesFiller(db).fill() == 0  # (the newest has its row again)


async def test_a_vector_replaced_after_it_was_read_gets_no_row_made_from_the_old_one(
    tmp_path: Path
) -> None:
    db = tmp_path / "i.db"
    await (await connect(db, busy_timeout_ms=1000)).close()
    old, new = np.ones(4, dtype=np.float32), np.arange(4, dtype=np.float32)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO embeddings(id, content_hash, model, dim, vector) "
                    "VALUES (5, 'h', 'm', 4, ?)", (old.tobytes(),))
        read = con.execute("SELECT id, model, dim, vector FROM embeddings").fetchall()
        con.execute("UPDATE embeddings SET vector = ? WHERE id = 5", (new.tobytes(),))
        con.executemany(codes_fill._ADD, codes_fill._rows(read))
        assert con.execute("SELECT COUNT(*) FROM embedding_codes").fetchone()[0] == 0
        con.executemany(codes_fill._ADD, codes_fill._rows(  # (as it is now: kept)
            con.execute("SELECT id, model, dim, vector FROM embeddings").fetchall()))
        assert con.execute("SELECT COUNT(*) FROM embedding_codes").fetchone()[0] == 1
