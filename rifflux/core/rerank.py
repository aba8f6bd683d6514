"""What a reranker is asked and answers, as pure functions: the request a rerank server
takes, its answer read back into one score per document, and a ranking reordered by
those scores.

Two shapes of rerank API are spoken (``Api``):

- ``jina``: ``POST {"model", "query", "documents": [...], "top_n"}`` answered
  ``{"results": [{"index", "relevance_score"}, ...]}``: llama.cpp's ``llama-server
  --reranking`` (``/v1/rerank``, also ``/rerank``), Jina's and Cohere's rerank APIs;
- ``tei``: ``POST {"query", "texts": [...]}`` answered ``[{"index", "score"}, ...]``:
  Hugging Face text-embeddings-inference (``/rerank``).

Either answer is read whichever was asked for (llama.cpp answers a ``texts`` request in
TEI's shape). An answer must score every document once, with a finite number; anything
else is a ``RerankError`` saying what was wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..errors import RerankError

__all__ = ["Api", "RerankError", "endpoint", "read_scores", "reordered", "request_body"]

Api = Literal["jina", "tei"]
_T = TypeVar("_T")
_V = TypeVar("_V")


def endpoint(url: str, api: Literal["auto", "jina", "tei"]) -> tuple[str, Api]:
    """The URL to post to and the API it speaks: a URL without a path gets
    ``/v1/rerank``; ``auto`` takes a path that is ``/rerank`` alone for
    text-embeddings-inference's, any other for the ``/v1/rerank`` shape."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path:
        path = "/v1/rerank"
        url = urlunsplit(parts._replace(path=path))
    if api == "auto":
        api = "tei" if path == "/rerank" else "jina"
    return url, api


def request_body(api: Api, query: str, documents: Sequence[str],
                 model: str | None) -> dict[str, Any]:
    """The JSON body asking for a score of each of ``documents`` against ``query``."""
    if api == "tei":
        return {"query": query, "texts": list(documents), "truncate": True}
    body: dict[str, Any] = {"query": query, "documents": list(documents),
                            "top_n": len(documents)}
    if model is not None:
        body["model"] = model
    return body


def read_scores(answer: Any, count: int) -> list[float]:
    """One score per document (in the documents' order) from a server's JSON answer in
    either shape; raises ``RerankError`` saying what is wrong with it."""
    if isinstance(answer, dict) and isinstance(answer.get("results"), list):
        items, key = answer["results"], "relevance_score"
    elif isinstance(answer, list):
        items, key = answer, "score"
    else:
        raise RerankError(f"the answer is not a rerank answer ({_shown(answer)}): expected "
                          '{"results": [{"index", "relevance_score"}]} or '
                          '[{"index", "score"}]')
    scores: list[float | None] = [None] * count
    for item in items:
        if not isinstance(item, dict):
            raise RerankError(f"a result is not an object: {_shown(item)}")
        index = item.get("index")
        score = item.get(key, item.get("score", item.get("relevance_score")))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise RerankError(f"a result's index is {_shown(index)}, not one of the "
                              f"{count} documents sent (0 to {count - 1})")
        if isinstance(score, bool) or not isinstance(score, int | float) \
                or not math.isfinite(score):
            raise RerankError(f"document {index}'s score is {_shown(score)}, not a number")
        if scores[index] is not None:
            raise RerankError(f"document {index} is scored twice")
        scores[index] = float(score)
    unscored = [i for i, s in enumerate(scores) if s is None]
    if unscored:
        raise RerankError(f"{len(unscored)} of the {count} documents sent have no score "
                          f"(the first: {unscored[0]})")
    return [s for s in scores if s is not None]


def reordered(ranked: Sequence[tuple[_T, _V]],
              scores: Sequence[float]) -> list[tuple[int, tuple[_T, _V], float]]:
    """The first ``len(scores)`` of ``ranked`` by score, best first (equal scores keep
    their order), each with its place in ``ranked`` and its score."""
    head = list(enumerate(ranked[: len(scores)]))
    head.sort(key=lambda pair: -scores[pair[0]])
    return [(place, item, scores[place]) for place, item in head]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
