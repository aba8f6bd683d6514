"""What a rerank server is asked and how its answer is read (``rifflux.core.rerank``)."""

from __future__ import annotations

from typing import Any

import pytest

from rifflux import RerankError
from rifflux.core.rerank import endpoint, read_scores, reordered, request_body


@pytest.mark.parametrize(("url", "api", "expected"), [
    ("http://127.0.0.1:8012", "auto", ("http://127.0.0.1:8012/v1/rerank", "jina")),
    ("http://127.0.0.1:8012/v1/rerank", "auto", ("http://127.0.0.1:8012/v1/rerank", "jina")),
    ("https://api.jina.ai/v1/rerank", "auto", ("https://api.jina.ai/v1/rerank", "jina")),
    ("http://tei:8080/rerank", "auto", ("http://tei:8080/rerank", "tei")),
    ("http://tei:8080/rerank", "jina", ("http://tei:8080/rerank", "jina")),
    ("http://host/my/ranker", "tei", ("http://host/my/ranker", "tei")),
])
def test_the_api_is_told_by_the_urls_path_unless_given(url: str, api: Any,
                                                       expected: tuple[str, str]) -> None:
    assert endpoint(url, api) == expected


def test_each_api_is_asked_in_its_own_shape() -> None:
    assert request_body("jina", "q", ["a", "b"], "bge-reranker") == {
        "query": "q", "documents": ["a", "b"], "top_n": 2, "model": "bge-reranker"}
    assert request_body("jina", "q", ["a"], None) == {"query": "q", "documents": ["a"],
                                                      "top_n": 1}
    assert request_body("tei", "q", ["a", "b"], "ignored") == {"query": "q", "texts": ["a", "b"],
                                                               "truncate": True}


def test_either_answer_gives_one_score_per_document_in_their_order() -> None:
    jina = {"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.5},
                        {"index": 1, "relevance_score": -1}]}
    tei = [{"index": 1, "score": 3.0}, {"index": 0, "score": 2}]
    assert read_scores(jina, 3) == [0.5, -1.0, 0.9]
    assert read_scores(tei, 2) == [2.0, 3.0]


@pytest.mark.parametrize(("answer", "says"), [
    ({"error": "busy"}, "not a rerank answer"),
    ("fine", "not a rerank answer"),
    ([{"index": 0, "score": 1.0}], "1 of the 2 documents sent have no score"),
    ([{"index": 0, "score": 1.0}, {"index": 0, "score": 2.0}], "scored twice"),
    ([{"index": 0, "score": 1.0}, {"index": 5, "score": 2.0}], "not one of the 2 documents"),
    ([{"index": 0, "score": 1.0}, {"index": True, "score": 2.0}], "not one of the 2 documents"),
    ([{"index": 0, "score": 1.0}, {"index": 1, "score": "high"}], "not a number"),
    ([{"index": 0, "score": 1.0}, {"index": 1, "score": float("nan")}], "not a number"),
    ([{"index": 0, "score": 1.0}, [1, 2.0]], "not an object"),
])
def test_a_malformed_answer_is_an_error_saying_what_is_wrong(answer: Any, says: str) -> None:
    with pytest.raises(RerankError, match=says):
        read_scores(answer, 2)


def test_reordering_moves_only_the_scored_head_and_keeps_ties_in_order() -> None:
    ranked = [("a", 1), ("b", 2), ("c", 3), ("d", 4)]
    assert reordered(ranked, [0.1, 0.5, 0.5]) == [
        (1, ("b", 2), 0.5), (2, ("c", 3), 0.5), (0, ("a", 1), 0.1)]
