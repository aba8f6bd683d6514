from __future__ import annotations

import numpy as np
import pytest

from rifflux.core.vectors import normalise

from ..helpers import ExactVectors


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_top_k_orders_by_cosine() -> None:
    idx = ExactVectors(3)
    idx.upsert([10, 20, 30], np.stack([unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 0)]))
    got = idx.top_k(unit(1, 0.1, 0), 2)
    assert [i for i, _ in got] == [10, 20]
    assert got[0][1] == pytest.approx(float(unit(1, 0, 0) @ unit(1, 0.1, 0)), rel=1e-5)


def test_remove_keeps_rows_contiguous_and_correct() -> None:
    idx = ExactVectors(2, capacity=2)
    vecs = np.stack([unit(1, i) for i in range(50)])
    idx.upsert(list(range(50)), vecs)
    idx.remove(range(0, 50, 2))
    assert len(idx) == 25
    got = dict(idx.top_k(unit(1, 7), 50))
    assert set(got) == set(range(1, 50, 2))
    assert got[7] == pytest.approx(1.0, abs=1e-5)


def test_zero_query_vector_gives_zero_cosines() -> None:
    idx = ExactVectors(2)
    idx.upsert([1, 2], np.stack([unit(1, 0), unit(0, 1)]))
    got = idx.top_k(np.zeros(2, dtype=np.float32), 5)
    assert [s for _, s in got] == [0.0, 0.0]


def test_empty_index_returns_nothing() -> None:
    assert ExactVectors(4).top_k(unit(1, 0, 0, 0), 3) == []


def test_upsert_replaces_a_vector() -> None:
    idx = ExactVectors(2)
    idx.upsert([1], unit(1, 0)[None, :])
    idx.upsert([1], unit(0, 1)[None, :])
    assert len(idx) == 1
    assert idx.top_k(unit(0, 1), 1)[0][1] == pytest.approx(1.0)


def test_feedback_rescores_against_the_moved_query() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    idx = ExactVectors(8)
    idx.upsert(list(range(300)), vecs)
    q = vecs[5] + 0.5 * vecs[9]
    plain = idx.top_k(q, 10)
    assert idx.top_k(q, 10, feedback=0) == plain
    moved_hits = idx.top_k(q, 10, feedback=3, weight=1.0, pool=300)
    qn = q / np.linalg.norm(q)
    top3 = [i for i, _ in plain[:3]]
    moved = qn + vecs[top3].mean(axis=0)
    moved /= np.linalg.norm(moved)
    expected = sorted(((float(vecs[i] @ moved), i) for i in range(300)), reverse=True)[:10]
    assert [i for i, _ in moved_hits] == [i for _, i in expected]
    assert [s for _, s in moved_hits] == pytest.approx([s for s, _ in expected], rel=1e-5)


def test_feedback_with_a_zero_query_still_gives_zero_cosines() -> None:
    idx = ExactVectors(2)
    idx.upsert([1, 2], np.stack([unit(1, 0), unit(0, 1)]))
    got = idx.top_k(np.zeros(2, dtype=np.float32), 2, feedback=3)
    assert [s for _, s in got] == [0.0, 0.0]


def test_a_mask_limits_top_k_to_its_groups_before_the_cut() -> None:
    rng = np.random.default_rng(7)
    index = ExactVectors(8)
    vectors = rng.normal(size=(200, 8)).astype(np.float32)
    groups = [i % 10 for i in range(200)]
    index.upsert(list(range(200)), vectors, groups)
    query = rng.normal(size=8).astype(np.float32)
    allowed = np.asarray([3, 7], dtype=np.int64)
    mask = index.mask(allowed)
    got = index.top_k(query, 15, mask=mask)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ (query / np.linalg.norm(query))
    expected = sorted((i for i in range(200) if groups[i] in (3, 7)),
                      key=lambda i: (-cosines[i], i))[:15]
    assert [i for i, _ in got] == expected
    assert len(index.top_k(query, 500, mask=mask)) == 40  # only the masked rows exist
    with_feedback = index.top_k(query, 15, mask=mask, feedback=3)
    assert {i for i, _ in with_feedback} <= set(expected) | {i for i in range(200)
                                                              if groups[i] in (3, 7)}
    assert all(groups[i] in (3, 7) for i, _ in with_feedback)
    index.remove([3])
    with pytest.raises(ValueError, match="make it again"):
        index.top_k(query, 5, mask=mask)  # stale: the matrix changed
    assert index.top_k(query, 5, mask=index.mask(np.asarray([99], dtype=np.int64))) == []


def test_equal_vectors_tie_exactly_whatever_path_blas_summed_them_by() -> None:
    # Found by the property test: BLAS gave row 2 a cosine one ulp above row 1's equal
    # vector, so the larger id came first and the smaller one lost the cut.
    index = ExactVectors(4)
    index.upsert([0, 1, 2], normalise(np.array(
        [[1, 0, 0, 0], [1, -1, 1, -1], [1, -1, 1, -1]], dtype=np.float32)))
    query = np.array([0, 1, 1, -2], dtype=np.float32)
    assert [i for i, _ in index.top_k(query, 1)] == [1]
    two = index.top_k(query, 2)
    assert [i for i, _ in two] == [1, 2] and two[0][1] == two[1][1]


@pytest.mark.parametrize("feedback", [0, 3])
def test_with_ties_every_row_equal_to_the_kth_is_returned_for_the_caller_to_order(
    feedback: int,
) -> None:
    idx = ExactVectors(3)
    same = unit(1, 0.2, 0)
    idx.upsert([7, 3, 9, 5, 1], np.stack([unit(1, 0, 0), same, same, same, unit(0, 0, 1)]))
    query = unit(1, 0.1, 0)
    plain = idx.top_k(query, 2, feedback=feedback)
    assert len(plain) == 2
    tied = idx.top_k(query, 2, feedback=feedback, ties=True)
    assert len({s for i, s in tied if i in (3, 5, 9)}) == 1  # exactly equal cosines
    assert {i for i, _ in tied} == {i for i, _ in plain} | {3, 5, 9}
    assert 1 not in dict(idx.top_k(query, 4, feedback=feedback, ties=True))
    zero = idx.top_k(np.zeros(3, dtype=np.float32), 2, ties=True)
    assert len(zero) == 2  # every cosine 0.0: no tie group of the whole index
