"""FTS5's bm25 in numpy: sums in bm25's order, the best kept with their ties,
the packed lists read back as written, and FTS5's own numbers read from its records."""

from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rifflux.core import bm25

positive = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False, allow_infinity=False)


phrase_parts = st.dictionaries(st.integers(1, 60), positive, max_size=40)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(phrase_parts, min_size=1, max_size=8), min_size=1, max_size=3),
       st.integers(61, 2_000))
def test_totals_add_each_chunks_parts_one_after_the_other(
    searches: list[list[dict[int, float]]], size: int
) -> None:
    totals = bm25.Totals(size)  # small sizes sum densely, large ones sparsely
    for phrases in searches:  # one after another with the same arrays
        expected: dict[int, float] = {}
        for phrase in phrases:
            ids = np.array(sorted(phrase), dtype=np.int64)
            totals.add(ids, np.array([phrase[i] for i in sorted(phrase)]))
            for i in sorted(phrase):  # bm25: score += part, phrase after phrase
                expected[i] = expected.get(i, 0.0) + phrase[i]
        found, sums = totals.take()
        assert found.tolist() == sorted(expected)
        assert sums.tolist() == [expected[i] for i in sorted(expected)]  # to the last bit


def test_a_search_that_failed_half_way_leaves_nothing_behind() -> None:
    totals = bm25.Totals(10)
    totals.add(np.array([1, 2, 3], dtype=np.int64), np.array([1.0, 2.0, 3.0]))
    totals.discard()
    totals.add(np.array([4], dtype=np.int64), np.array([0.5]))
    found, sums = totals.take()
    assert (found.tolist(), sums.tolist()) == ([4], [0.5])


def test_the_best_are_kept_with_every_row_tied_with_the_last_of_them() -> None:
    ids = np.array([7, 3, 9, 5, 1], dtype=np.int64)
    totals = np.array([2.0, 5.0, 5.0, 2.0, 1.0])
    # 5 ties with 7 for the third place: both kept, the store orders them by path
    assert bm25.order(ids, totals, 3) == [(3, -5.0, 0), (9, -5.0, 0), (5, -2.0, 0),
                                          (7, -2.0, 0)]
    assert bm25.order(ids, totals, 2) == [(3, -5.0, 0), (9, -5.0, 0)]
    assert bm25.merged([[(9, -5.0, 0)], [(3, -5.0, 0), (1, -1.0, 0)]], 1) == [
        (3, -5.0, 0), (9, -5.0, 0)]
    assert bm25.merged([[(9, -5.0, 0)], [(3, -5.0, 0), (1, -1.0, 0)]], 3) == [
        (3, -5.0, 0), (9, -5.0, 0), (1, -1.0, 0)]


def test_rows_holding_every_word_come_first_each_group_by_score() -> None:
    ids = np.array([1, 2, 3, 4], dtype=np.int64)
    totals = np.array([9.0, 1.0, 8.0, 2.0])
    first = np.array([False, True, False, True])
    assert bm25.order(ids, totals, 3, first) == [(4, -2.0, 1), (2, -1.0, 1), (1, -9.0, 0)]
    assert bm25.order(ids, totals, 1, first) == [(4, -2.0, 1)]
    assert bm25.merged([[(4, -2.0, 1)], [(1, -9.0, 0)], [(5, -0.5, 1)]], 2) == [
        (4, -2.0, 1), (5, -0.5, 1)]


@given(st.sets(st.integers(1, 2**40), max_size=300),
       st.lists(st.integers(1, 70_000), max_size=300))
def test_packed_lists_read_back_as_written(ids: set[int], counts: list[int]) -> None:
    ascending = np.array(sorted(ids), dtype=np.int64)
    assert bm25.decode_ids(bm25.encode_ids(ascending)).tolist() == ascending.tolist()
    whole = np.array(counts, dtype=np.float64)
    assert bm25.decode_counts(bm25.encode_counts(whole)).tolist() == whole.tolist()
    halves = whole + 0.5
    assert bm25.decode_counts(bm25.encode_counts(halves)).tolist() == halves.tolist()


def test_fts5s_row_count_and_average_length_are_read_from_its_records() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(a, b)")
    db.executemany("INSERT INTO t(a, b) VALUES (?, ?)",
                   [("one two", "three"), ("four", " ".join(["w"] * 300))])
    db.commit()  # (FTS5 writes its records at the commit)
    rows, avgdl = bm25.averages(db.execute("SELECT block FROM t_data WHERE id = 1").fetchone()[0])
    assert (rows, avgdl) == (2, (3 + 301) / 2)
    sizes = [bm25.varints(r[0]) for r in db.execute("SELECT sz FROM t_docsize ORDER BY id")]
    assert sizes == [[2, 1], [1, 300]]


def test_idf_is_floored_as_fts5_floors_it() -> None:
    assert bm25.idf(10, 9) == bm25.IDF_FLOOR
    assert bm25.idf(10, 1) > 1.0
