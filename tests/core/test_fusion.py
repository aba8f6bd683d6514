from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rifflux.core.fusion import rrf


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
