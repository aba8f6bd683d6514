"""Reading the chunks' vectors from a real SQLite file: a load streamed in blocks holds
what the same vectors upserted in memory hold, never a float32 copy of them all, and the
exact vectors of a search's candidates are read back for those rows only."""

from __future__ import annotations

import sqlite3
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rifflux.core.codes import normalise, packed, quantise, unpack
from rifflux.core.ranking import rank
from rifflux.core.vectors import VectorIndex
from rifflux.store.sqlite import vectors
from rifflux.store.sqlite.reader import Reader
from rifflux.store.sqlite.rows_now import RowReads
from rifflux.store.sqlite.schema import connect
from rifflux.store.sqlite.sql import Connection

from ..helpers import MODEL

pytestmark = pytest.mark.anyio

DIM = 384


async def vectors_db(db: Path, n: int, *, seed: int = 1,
                     codes: Callable[[int], bool] = lambda text: False,
                     ) -> dict[int, np.ndarray]:
    """``n`` chunks in files of 10; chunk ``i`` has vector ``i // 2`` of ``MODEL`` (two
    chunks share each text), and every seventh chunk has none (not embedded yet). Other
    models' vectors are there too; texts ``codes`` says yes to have their compact rows
    stored (as the writer stores them). Returns each embedded chunk's vector by row id."""
    await (await connect(db, busy_timeout_ms=1000)).close()
    rng = np.random.default_rng(seed)
    texts = rng.normal(size=(n // 2 + 1, DIM)).astype(np.float32)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO roots(id, path) VALUES (1, '/notes')")
        con.executemany("INSERT INTO files(id, root_id, rel_path, mtime_ns, size, sha256, "
                        "indexed_at) VALUES (?, 1, ?, 0, 0, '', 0)",
                        [(f, f"f{f}.md") for f in range(1, n // 10 + 2)])
        con.executemany("INSERT INTO chunks(id, chunk_id, file_id, chunk_index, heading_path, "
                        "content, content_hash) VALUES (?, ?, ?, ?, '', 'text', ?)",
                        [(i, f"c{i}", i // 10 + 1, i % 10,
                          f"h{i // 2}" if i % 7 else f"none{i}") for i in range(1, n + 1)])
        con.executemany("INSERT INTO embeddings(content_hash, model, dim, vector) "
                        "VALUES (?, ?, ?, ?)",
                        [(f"h{t}", model, DIM, (texts[t] * scale).tobytes())
                         for t in range(len(texts))
                         for model, scale in ((MODEL, 1.0), ("other-model", -1.0))])
        coded = [t for t in range(len(texts)) if codes(t)]
        con.executemany("INSERT INTO embedding_codes(id, model, codes) SELECT id, model, ? "
                        "FROM embeddings WHERE content_hash = ? AND model = ?",
                        [(row, f"h{t}", model)
                         for model, scale in ((MODEL, 1.0), ("other-model", -1.0))
                         for t, row in zip(coded, packed(texts[coded] * scale),
                                           strict=True)])
    return {i: texts[i // 2] for i in range(1, n + 1) if i % 7}


async def test_a_load_in_blocks_holds_what_the_same_vectors_upserted_at_once_hold(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 600)
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        streamed = VectorIndex(DIM, capacity=4)  # grows while it loads
        blocks: list[int] = []

        def into(ids: np.ndarray, rows: np.ndarray, files: np.ndarray) -> None:
            blocks.append(len(ids))
            streamed.append(ids, rows, files)  # (as the query actor loads)

        count = await vectors.stream(conn, db, MODEL, DIM, into, block=7)
        streamed.seal()
        at_once = VectorIndex(DIM)
        keys = sorted(stored)
        at_once.upsert(keys, np.stack([stored[k] for k in keys]), [k // 10 + 1 for k in keys])
        assert count == len(stored) == len(streamed) == len(at_once)
        assert max(blocks) <= 2 * 7 and len(blocks) > 1  # (the chunks of 7 vectors)
        assert sorted(streamed.ids().tolist()) == keys  # not the unembedded chunks
        rng = np.random.default_rng(2)
        allowed = np.asarray([3, 5, 40], dtype=np.int64)
        assert np.array_equal(streamed.mask(allowed)[np.argsort(streamed.ids())],
                              at_once.mask(allowed)[np.argsort(at_once.ids())])
        reader = Reader(conn, db)
        for _ in range(10):
            query = rng.normal(size=DIM).astype(np.float32)
            found = streamed.candidates(query, 30)
            assert np.array_equal(found, at_once.candidates(query, 30))
            ids, exact = await reader.exact_vectors(MODEL, DIM, found)
            assert sorted(ids.tolist()) == sorted(found.tolist())  # those rows only
            assert all(np.array_equal(v, stored[int(i)]) for i, v in zip(ids, exact,
                                                                          strict=True))
            everything = np.asarray(keys, dtype=np.int64)
            want = rank(query, everything, np.stack([stored[k] for k in keys]), 10)
            assert rank(query, ids, exact, 10) == want
    finally:
        await conn.close()


async def test_the_exact_read_leaves_out_chunks_without_a_vector_and_ids_not_there(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 50)
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        ids, exact = await Reader(conn, db).exact_vectors(
            MODEL, DIM, np.asarray([1, 7, 14, 9999, 3], dtype=np.int64))
        assert sorted(ids.tolist()) == [1, 3] and exact.shape == (2, DIM)
        none, empty = await Reader(conn, db).exact_vectors(MODEL, DIM,
                                                           np.zeros(0, dtype=np.int64))
        assert len(none) == 0 and empty.shape == (0, DIM)
        assert np.array_equal(exact[ids.tolist().index(3)], stored[3])
    finally:
        await conn.close()


async def test_a_load_never_holds_a_float32_copy_of_every_vector(tmp_path: Path) -> None:
    db = tmp_path / "i.db"
    n, block = 40_000, 512
    stored = await vectors_db(db, n)
    float32 = len(stored) * DIM * 4
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        reader = Reader(conn, db)
        rows = await reader.vector_capacity()
        tracemalloc.start()
        try:
            capacity = rows + max(1024, rows // 8)  # as the query actor sizes it
            index = VectorIndex(DIM, capacity=capacity)
            matrix, _ = tracemalloc.get_traced_memory()
            await vectors.stream(conn, db, MODEL, DIM, index.append, block=block)
            index.seal()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        await conn.close()
    assert len(index) == len(stored)
    # the compact matrix (with its spare rows) and a few blocks while one is converted (a
    # block's vectors are handed on as the chunks they serve, here two a vector); the
    # float32 rows, their bytes and a copy were 3x ``float32`` before
    assert peak - matrix < 16 * block * DIM * 4 < float32 / 4, (peak, matrix, float32)


async def test_a_block_that_cannot_be_taken_ends_the_load_with_its_own_error(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    await vectors_db(db, 100)
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    taken: list[int] = []

    def into(ids: np.ndarray, rows: np.ndarray, files: np.ndarray) -> None:
        taken.append(len(ids))
        if len(taken) == 2:
            raise ValueError("no room for these rows")

    try:
        with pytest.raises(ValueError, match="no room"):  # itself, not in a group
            await vectors.stream(conn, db, MODEL, DIM, into, block=10)
        assert len(taken) == 2  # (no block after the one that failed)
        assert (await conn.execute_fetchall("SELECT COUNT(*) FROM chunks"))  # still usable
    finally:
        await conn.close()


async def test_a_load_reads_each_chunks_file_from_the_hash_index_not_the_chunks_rows(
    tmp_path: Path,
) -> None:
    # a chunk's row holds its text: reading a million of them, at random, doubled a load
    db = tmp_path / "i.db"
    await vectors_db(db, 20)
    with sqlite3.connect(db) as con:  # an index made before the covering index existed
        con.execute("DROP INDEX chunks_hash_file")
        con.execute("CREATE INDEX chunks_hash ON chunks(content_hash)")
    await (await connect(db, busy_timeout_ms=1000)).close()  # a writable open brings it
    with sqlite3.connect(db) as con:
        indexes = {r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'chunks'")}
        plan = con.execute("EXPLAIN QUERY PLAN " + vectors._SERVED, (MODEL,)).fetchall()
    assert "chunks_hash_file" in indexes and "chunks_hash" not in indexes
    assert "COVERING INDEX chunks_hash_file" in str(plan)


def same_rows(one: VectorIndex, other: VectorIndex, seed: int = 3) -> bool:
    """Whether two matrices hold the same ids with the same groups and the same compact
    rows: every row's score, hence the whole order of a scan, is the same for any query."""
    rng = np.random.default_rng(seed)
    groups = np.asarray([1, 4, 9], dtype=np.int64)
    if sorted(one.ids().tolist()) != sorted(other.ids().tolist()):
        return False
    if not np.array_equal(one.mask(groups)[np.argsort(one.ids())],
                          other.mask(groups)[np.argsort(other.ids())]):
        return False
    for _ in range(5):
        query = rng.normal(size=DIM).astype(np.float32)
        if not np.array_equal(one.candidates(query, len(one)),
                              other.candidates(query, len(other))):
            return False
    return True


async def test_a_load_of_the_stored_compact_rows_holds_what_a_load_of_float32_holds(
    tmp_path: Path,
) -> None:
    # texts embedded before the compact rows were stored (here every third) have none:
    # their float32 vectors are converted as they load, the others' rows are taken as is
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 600, codes=lambda text: text % 3 != 0)
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        converted, compact = VectorIndex(DIM, capacity=4), VectorIndex(DIM, capacity=4)
        taken = {"float32": 0, "compact": 0}

        def floats(ids: np.ndarray, rows: np.ndarray, files: np.ndarray) -> None:
            taken["float32"] += len(ids)
            compact.append(ids, rows, files)

        def codes(ids: np.ndarray, codes: np.ndarray, scales: np.ndarray,
                  files: np.ndarray, sources: np.ndarray | None = None) -> None:
            taken["compact"] += len(ids)
            compact.append_codes(ids, codes, scales, files, sources)

        assert await vectors.stream(conn, db, MODEL, DIM, converted.append, block=7) == len(
            stored)
        assert await vectors.stream(conn, db, MODEL, DIM, floats, block=7,
                                    into_codes=codes) == len(stored)
    finally:
        await conn.close()
    converted.seal()
    compact.seal()
    # (those without a compact row are converted here, a vector once, and handed on
    # compact too: the float32 way is never taken when the compact one is given)
    assert taken["compact"] == len(stored) and taken["float32"] == 0
    assert len(compact) == len(converted) == len(stored)
    assert same_rows(compact, converted)
    wrong = VectorIndex(DIM)  # (the comparison can fail: one row differs)
    keys = sorted(stored)
    moved = np.stack([stored[k] for k in keys])
    moved[5] = -moved[5]
    wrong.upsert(keys, moved, [k // 10 + 1 for k in keys])
    assert not same_rows(wrong, converted)


async def test_an_index_made_before_the_compact_rows_loads_read_only_from_float32(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 100)
    with sqlite3.connect(db) as con:
        con.execute("DROP TABLE embedding_codes")
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        matrix = VectorIndex(DIM)
        count = await vectors.stream(conn, db, MODEL, DIM, matrix.append,
                                     into_codes=matrix.append_codes)
    finally:
        await conn.close()
    matrix.seal()
    assert count == len(matrix) == len(stored)


async def test_the_writer_stores_each_vectors_compact_row_and_deleting_it_deletes_both(
    tmp_path: Path,
) -> None:
    from rifflux.store.sqlite.writer import Writer

    from ..helpers import afile, root_of

    db = tmp_path / "i.db"
    conn = await connect(db, busy_timeout_ms=1000)
    try:
        writer = Writer(conn, db)
        await writer.missing.adopt(MODEL)
        root = await root_of(writer, tmp_path / "docs")
        await writer.write_files(root, [afile("a.md", "otters", "badgers"),
                                        afile("b.md", "otters")])
        texts = sorted(writer.missing.texts or ())
        given = np.random.default_rng(4).normal(size=(len(texts), DIM)).astype(np.float32)
        await writer.write_vectors(MODEL, texts, given)
        await writer.write_vectors(MODEL, texts, -given)  # (kept: stored already)
        with sqlite3.connect(db) as con:
            rows = con.execute("SELECT e.content_hash, q.model, q.codes FROM embeddings e "
                               "JOIN embedding_codes q ON q.id = e.id").fetchall()
            assert sorted(r[0] for r in rows) == texts and {r[1] for r in rows} == {MODEL}
            for text, _, row in rows:
                want_codes, want_scale = quantise(normalise(given[texts.index(text)][None]))
                got_codes, got_scale = unpack(row, DIM)
                assert np.array_equal(got_codes, want_codes)
                assert np.array_equal(got_scale, want_scale)
            con.execute("DELETE FROM embedding_codes")  # (as an older version stored them)

        def coded() -> int:
            with sqlite3.connect(db) as con:
                return int(con.execute("SELECT COUNT(*) FROM embedding_codes").fetchone()[0])

        await writer.write_vectors(MODEL, texts, given * 1.001)  # (not the stored vectors)
        assert coded() == 0
        await writer.write_vectors(MODEL, texts, given)
        assert coded() == len(texts)
        await writer.write_files(root, [afile("a.md", "otters")])  # badgers: an orphan
        assert await writer.prune_orphan_vectors() == 1
        with sqlite3.connect(db) as con:
            left = con.execute("SELECT COUNT(*) FROM embedding_codes").fetchone()[0]
            orphans = con.execute("SELECT COUNT(*) FROM embedding_codes WHERE id NOT IN "
                                  "(SELECT id FROM embeddings)").fetchone()[0]
        assert (left, orphans) == (len(texts) - 1, 0)
    finally:
        await conn.close()


async def test_a_text_thousands_of_chunks_share_is_converted_once_not_per_chunk(
    tmp_path: Path,
) -> None:
    # (a footer every note repeats: float32 rows per chunk, and their copies while they
    # were converted, took 1.5 KB a chunk several times over)
    db = tmp_path / "i.db"
    n = 4000
    await (await connect(db, busy_timeout_ms=1000)).close()
    vector = np.random.default_rng(5).normal(size=DIM).astype(np.float32)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO roots(id, path) VALUES (1, '/notes')")
        con.execute("INSERT INTO files(id, root_id, rel_path, mtime_ns, size, sha256, "
                    "indexed_at) VALUES (1, 1, 'f.md', 0, 0, '', 0)")
        con.executemany("INSERT INTO chunks(id, chunk_id, file_id, chunk_index, heading_path, "
                        "content, content_hash) VALUES (?, ?, 1, ?, '', 'footer', 'h')",
                        [(i, f"c{i}", i) for i in range(1, n + 1)])
        con.execute("INSERT INTO embeddings(content_hash, model, dim, vector) "
                    "VALUES ('h', ?, ?, ?)", (MODEL, DIM, vector.tobytes()))  # (no codes)
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        matrix = VectorIndex(DIM, capacity=n + 16)
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            count = await vectors.stream(conn, db, MODEL, DIM, matrix.append,
                                         into_codes=matrix.append_codes)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        await conn.close()
    matrix.seal()
    assert count == len(matrix) == n
    assert peak - before < 2 * n * (DIM + 16) < n * DIM * 4, (peak - before)  # int8 rows
    want = VectorIndex(DIM)
    want.upsert(list(range(1, n + 1)), np.tile(vector, (n, 1)), [1] * n)
    assert same_rows(matrix, want)


class _Counting(Reader):
    """The real reader, counting the chunks it reads through their texts."""

    through_texts: int = 0

    async def exact_vectors(self, model: str, dim: int,
                            rowids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.through_texts += len(rowids)
        return await super().exact_vectors(model, dim, rowids)


def _counting(conn: Connection, db: Path, rows: RowReads) -> _Counting:
    """The reader as the query actor's is opened: its candidates' rows read on a
    connection of their own (``rows``)."""
    return _Counting(conn, db, rows=rows)


async def exact_vectors(matrix: VectorIndex, reader: Reader, model: str, dim: int,
                        found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """As the query actor reads them: by their rows in a worker thread, the rest
    through their texts."""
    import anyio

    from rifflux.query.exact import by_rows, through_texts

    read = await anyio.to_thread.run_sync(by_rows, matrix, reader, dim, found)
    return await through_texts(reader, model, dim, read)


def _by_id(ids: np.ndarray, vectors: np.ndarray) -> dict[int, bytes]:
    return {int(i): v.tobytes() for i, v in zip(ids, vectors, strict=True)}


async def _loaded(db: Path) -> VectorIndex:
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        matrix = VectorIndex(DIM)
        await vectors.stream(conn, db, MODEL, DIM, matrix.append, block=16,
                             into_codes=matrix.append_codes)
    finally:
        await conn.close()
    matrix.seal()
    return matrix


async def test_a_searchs_candidates_are_read_by_their_vectors_rows_as_the_texts_give_them(
    tmp_path: Path,
) -> None:
    # (every other text without a compact row: converted as it loads, its row known too)
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 400, codes=lambda text: text % 2 == 0)
    matrix = await _loaded(db)
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    rows = RowReads(db, busy_timeout_ms=1000, snapshot=False)
    try:
        reader = _counting(conn, db, rows)
        rng = np.random.default_rng(6)
        for _ in range(5):
            found = matrix.candidates(rng.normal(size=DIM).astype(np.float32), 40)
            want = _by_id(*await Reader(conn, db).exact_vectors(MODEL, DIM, found))
            assert _by_id(*await exact_vectors(matrix, reader, MODEL, DIM, found)) == want
            assert len(want) == len(found)
        assert reader.through_texts == 0  # every one by its row
        matrix.upsert([2], stored[2][None, :] * 2, [1])  # (since the load: its row not known)
        got = _by_id(*await exact_vectors(matrix, reader, MODEL, DIM,
                                          np.asarray([2, 3], dtype=np.int64)))
        assert got == {2: stored[2].tobytes(), 3: stored[3].tobytes()}
        assert reader.through_texts == 1
    finally:
        rows.close()
        await conn.close()


async def test_a_vectors_row_deleted_or_taken_by_another_text_is_read_through_the_text(
    tmp_path: Path,
) -> None:
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 100, codes=lambda text: True)
    matrix = await _loaded(db)
    asked = np.asarray([2, 3, 4, 5, 10, 11, 20], dtype=np.int64)
    sources = dict(zip(asked.tolist(), matrix.sources(asked).tolist(), strict=True))
    assert sources[2] == sources[3] and min(sources.values()) > 0  # (one text, one row)
    other = np.random.default_rng(8).normal(size=DIM).astype(np.float32)
    with sqlite3.connect(db) as con:
        # text 1 (chunks 2, 3) embedded again: its old row deleted, then taken by another
        # text's vector; text 2 (chunks 4, 5): its new row elsewhere, the old one empty;
        # chunk 10 deleted with its text's vector (text 5: chunk 11 kept, re-embedded)
        con.execute("DELETE FROM embeddings WHERE id IN (?, ?, ?)",
                    (sources[2], sources[4], sources[10]))
        con.execute("INSERT INTO embeddings(id, content_hash, model, dim, vector) "
                    "VALUES (?, 'h-other', ?, ?, ?)", (sources[2], MODEL, DIM, other.tobytes()))
        con.execute("DELETE FROM chunks WHERE id = 10")
        con.executemany("INSERT INTO embeddings(content_hash, model, dim, vector) "
                        "VALUES (?, ?, ?, ?)",
                        [(f"h{t}", MODEL, DIM, stored[c].tobytes())
                         for t, c in ((1, 2), (2, 4), (5, 11))])
    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    rows = RowReads(db, busy_timeout_ms=1000, snapshot=False)
    try:
        reader = _counting(conn, db, rows)
        got = _by_id(*await exact_vectors(matrix, reader, MODEL, DIM, asked))
        want = _by_id(*await Reader(conn, db).exact_vectors(MODEL, DIM, asked))
    finally:
        rows.close()
        await conn.close()
    assert got == want == {c: stored[c].tobytes() for c in (2, 3, 4, 5, 11, 20)}
    assert reader.through_texts == 6  # (2, 3: their row taken; 4, 5, 10, 11: theirs gone)


async def test_a_load_finding_the_chunks_beside_the_rows_holds_what_a_load_in_one_read_holds(
    tmp_path: Path,
) -> None:
    # texts two chunks share (a row copied), texts without a compact row (converted),
    # a vector no chunk uses any more (its row dropped), chunks not embedded yet
    db = tmp_path / "i.db"
    stored = await vectors_db(db, 300, codes=lambda text: text % 5 != 0)
    orphan = np.random.default_rng(9).normal(size=(1, DIM)).astype(np.float32)
    with sqlite3.connect(db) as con:
        con.execute("INSERT INTO embeddings(content_hash, model, dim, vector) "
                    "VALUES ('unused', ?, ?, ?)", (MODEL, DIM, orphan.tobytes()))
        con.execute("INSERT INTO embedding_codes(id, model, codes) SELECT id, model, ? FROM "
                    "embeddings WHERE content_hash = 'unused'", (packed(orphan)[0],))
    opened: list[object] = []

    async def beside() -> object:
        other = await connect(db, busy_timeout_ms=1000, readonly=True)
        opened.append(other)
        return other

    conn = await connect(db, busy_timeout_ms=1000, readonly=True)
    try:
        at_once, found_beside = VectorIndex(DIM, capacity=4), VectorIndex(DIM, capacity=4)
        one = await Reader(conn, db).stream_vectors(MODEL, DIM, at_once.append,
                                                    at_once.append_codes, at_once.assign)
        two = await Reader(conn, db, beside=beside).stream_vectors(  # type: ignore[arg-type]
            MODEL, DIM, found_beside.append, found_beside.append_codes, found_beside.assign)
    finally:
        await conn.close()
    at_once.seal()
    found_beside.seal()
    assert len(opened) == 1  # (the second load found the chunks on another connection)
    assert one == two == len(at_once) == len(found_beside) == len(stored)
    assert same_rows(found_beside, at_once)
    ids = np.asarray(sorted(stored), dtype=np.int64)
    assert np.array_equal(found_beside.sources(ids), at_once.sources(ids))
    assert (at_once.sources(ids) > 0).all()
