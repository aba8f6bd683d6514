from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rifflux.core.fusion import combine, rrf


def test_spec_example() -> None:
    k = 60
    fused = rrf([["c1", "c2"], ["c2", "c3"]], k=k)
    scores = {f.key: f.score for f in fused}
    assert scores["c2"] == pytest.approx(1 / (k + 2) + 1 / (k + 1))
    assert scores["c1"] == pytest.approx(1 / (k + 1))
    assert scores["c3"] == pytest.approx(1 / (k + 2))
    assert [f.key for f in fused] == ["c2", "c1", "c3"]
    assert {f.key: f.ranks for f in fused} == {"c1": (1, None), "c2": (2, 1), "c3": (None, 2)}


def test_one_branch_empty() -> None:
    fused = rrf([["a", "b"], []], k=60)
    assert [(f.key, f.ranks) for f in fused] == [("a", (1, None)), ("b", (2, None))]


def test_both_branches_empty() -> None:
    assert rrf([[], []], k=60) == []


def test_ties_break_deterministically() -> None:
    one = rrf([["a", "x"], ["b", "y"]], k=60)
    two = rrf([["a", "x"], ["b", "y"]], k=60)
    assert [f.key for f in one] == [f.key for f in two] == ["a", "b", "x", "y"]


def test_k_changes_scores_not_membership() -> None:
    assert {f.key for f in rrf([["a"], ["b"]], k=1)} == {"a", "b"}
    assert rrf([["a"], []], k=1)[0].score == pytest.approx(0.5)


def test_limit() -> None:
    assert len(rrf([list("abcdef"), list("fedcba")], k=60, limit=3)) == 3


@given(lexical=st.lists(st.integers(0, 30), unique=True),
       semantic=st.lists(st.integers(0, 30), unique=True), k=st.integers(1, 100))
def test_the_first_fused_hit_is_lexical_whenever_the_lexical_list_has_one(
    lexical: list[int], semantic: list[int], k: int
) -> None:
    # (why an answer can tell from its hits alone that no chunk holds the query's words)
    fused = rrf([lexical, semantic], k=k)
    assert (bool(fused) and fused[0].ranks[0] is not None) == bool(lexical)


# ---------------------------------------------------------------- the score fusion


def test_a_flat_list_cannot_bury_the_other_branchs_clear_winner() -> None:
    # lexical: one chunk holds the words (twice the bm25 of the next); semantic: noise,
    # forty chunks alike, the winner not among them; RRF puts the chunks found by both
    # above it
    lexical = [("win", -20.0)] + [(f"c{i}", -10.0 + i * 0.1) for i in range(20)]
    semantic = [(f"c{i}", 0.70 - i * 0.001) for i in range(40)]
    fused = combine(lexical, semantic, depth=40)
    assert fused[0].key == "win"
    assert [f.key for f in rrf([[c for c, _ in lexical], [c for c, _ in semantic]])][0] != "win"
    assert fused[0].ranks == (1, None) and fused[0].rrf == pytest.approx(1 / 61)


def test_each_branch_counts_its_score_over_its_best() -> None:
    fused = {f.key: f for f in combine([("a", -8.0), ("b", -4.0)], [("b", 0.5), ("c", 0.25)],
                                       depth=10)}
    # (lists shorter than their depth: a chunk missing from one counts 0 there)
    assert fused["a"].score == pytest.approx((1.0 + 0.0) / 2)
    assert fused["b"].score == pytest.approx((0.5 + 1.0) / 2)
    assert fused["c"].score == pytest.approx((0.0 + 0.5) / 2)
    assert fused["b"].rrf == pytest.approx(1 / 62 + 1 / 61)


def test_a_chunk_missing_from_a_full_list_counts_its_last_score() -> None:
    fused = {f.key: f for f in combine([("a", -8.0), ("b", -4.0)], [("b", 0.5), ("c", 0.4)],
                                       depth=2)}
    assert fused["a"].score == pytest.approx((1.0 + 0.4 / 0.5) / 2)  # semantic: read full
    assert fused["c"].score == pytest.approx((0.5 + 0.8) / 2)  # lexical too


def test_chunks_holding_every_word_keep_their_place_in_the_lexical_list() -> None:
    # a mixed CJK query ranks chunks holding every word first, whatever their bm25
    fused = combine([("every", -3.0), ("some", -9.0)], [], depth=10)
    assert [f.key for f in fused] == ["every", "some"]
    assert fused[0].score == fused[1].score == pytest.approx(0.5)  # ties: the best rank


def test_equal_scores_keep_the_branches_order_lexical_first() -> None:
    fused = combine([("a", -5.0), ("b", -5.0)], [("c", 0.5)], depth=10)
    assert [f.key for f in fused] == ["a", "c", "b"]
    assert combine([], [], depth=10) == []
