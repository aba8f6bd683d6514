"""The reranker a search may ask to rescore its first hits: a rerank server (``Settings.
rerank_url``, through one httpx client kept open) or an ONNX cross-encoder in a directory
(``Settings.rerank_model``, loaded once in a worker thread and run in one at a time).

It owns that client or model and nothing else; the query actor's ranking calls
``scores`` and, on a ``RerankError`` (the server down, an error status, a malformed
answer, no answer within ``rerank_timeout``, a model that does not load), keeps its
fused order. The last failure is kept (``last_failure``) for the answer's hint and
``status()``.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ..config import Settings
from ..core.rerank import endpoint, read_scores, request_body
from ..errors import RerankError
from ..types import RerankStatus

if TYPE_CHECKING:  # (loaded with the reranker: the client at its first request)
    from ..core.cross_encoder import OnnxCrossEncoder

__all__ = ["Reranker", "open_reranker"]

logger = logging.getLogger(__name__)

#: How much of an error answer's body a failure quotes.
_BODY_CHARS = 200


class Reranker:
    """The configured reranker (``Settings.rerank_url`` or ``rerank_model``)."""

    def __init__(self, settings: Settings) -> None:
        self.depth = settings.rerank_depth
        self.timeout = settings.rerank_timeout
        #: Searches rerank unless they say otherwise (``Settings.rerank``).
        self.default = settings.rerank
        self._model_dir = settings.rerank_model
        self._url: str | None = None
        self._api: Literal["jina", "tei", "onnx"] = "onnx"
        if settings.rerank_url is not None:
            self._url, self._api = endpoint(settings.rerank_url, settings.rerank_api)
        self._name = settings.rerank_name
        self._headers = ({"Authorization": f"Bearer {settings.rerank_key}"}
                         if settings.rerank_key else {})
        self._client: Any = None  # httpx2.AsyncClient, made at the first request
        self._encoder: OnnxCrossEncoder | None = None
        self._load_error: str | None = None
        self._load_lock = threading.Lock()
        self._run_limiter = anyio.CapacityLimiter(1)
        self.reranked = 0
        self.failures = 0
        self.last_failure: str | None = None

    @property
    def by(self) -> str:
        """What reranks, as answers and ``status()`` name it."""
        return self._url if self._url is not None else str(self._model_dir)

    def snapshot(self) -> RerankStatus:
        return {"by": self.by, "api": self._api, "default": self.default, "depth": self.depth,
                "timeout": self.timeout, "reranked": self.reranked, "failures": self.failures,
                "last_failure": self.last_failure}

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def warm(self) -> None:
        """Load a cross-encoder now (a long-lived process), so that the first search does
        not spend its time on the load."""
        if self._model_dir is not None:
            try:
                await anyio.to_thread.run_sync(self._load, abandon_on_cancel=True)
            except RerankError:
                pass  # kept in _load_error: each search says it

    async def scores(self, query: str, texts: list[str]) -> list[float]:
        """One score per text (higher: more relevant to ``query``), within ``timeout``;
        raises ``RerankError`` saying why there are none (and keeps it)."""
        try:
            with anyio.fail_after(self.timeout):
                if self._url is not None:
                    found = await self._ask_server(self._url, query, texts)
                else:
                    found = await self._run_model(query, texts)
        except TimeoutError:
            error = RerankError(f"the reranker ({self.by}) gave no answer within "
                                f"{self.timeout:g} s (rerank_timeout)")
        except RerankError as exc:
            error = exc
        else:
            self.reranked += 1
            return found
        self.failures += 1
        self.last_failure = str(error)
        logger.warning("reranking failed, hits keep their fused order: %s", error)
        raise error

    async def _ask_server(self, url: str, query: str, texts: list[str]) -> list[float]:
        import httpx2

        if self._client is None:
            self._client = httpx2.AsyncClient(headers=self._headers, timeout=self.timeout,
                                              trust_env=False)
        body = request_body("tei" if self._api == "tei" else "jina", query, texts, self._name)
        try:
            response = await self._client.post(url, json=body)
        except httpx2.HTTPError as exc:
            raise RerankError(f"the rerank server at {url} cannot be reached "
                              f"({type(exc).__name__}: {exc or 'no detail'})") from exc
        if response.status_code != 200:
            said = response.text.strip()[:_BODY_CHARS] or "no body"
            raise RerankError(f"the rerank server at {url} answered {response.status_code} "
                              f"({said})")
        try:
            answer = response.json()
        except ValueError as exc:
            raise RerankError(f"the rerank server at {url} answered with malformed JSON "
                              f"({response.text.strip()[:_BODY_CHARS]!r})") from exc
        try:
            return read_scores(answer, len(texts))
        except RerankError as exc:
            raise RerankError(f"the rerank server at {url} answered in a shape Rifflux "
                              f"cannot read: {exc}") from exc

    async def _run_model(self, query: str, texts: list[str]) -> list[float]:
        encoder = self._encoder
        if encoder is None:
            encoder = await anyio.to_thread.run_sync(self._load, abandon_on_cancel=True)
        scored: list[float] = await anyio.to_thread.run_sync(
            encoder.score, query, texts, limiter=self._run_limiter, abandon_on_cancel=True)
        return scored

    def _load(self) -> OnnxCrossEncoder:
        """The cross-encoder, loaded by the first caller (in a worker thread; a load a
        timed-out search left goes on, and the next search uses it)."""
        with self._load_lock:
            if self._encoder is not None:
                return self._encoder
            if self._load_error is not None:
                raise RerankError(self._load_error)
            assert self._model_dir is not None
            from ..core.cross_encoder import OnnxCrossEncoder

            try:
                self._encoder = OnnxCrossEncoder(self._model_dir)
            except RerankError as exc:
                self._load_error = str(exc)
                raise
            return self._encoder


def open_reranker(settings: Settings) -> Reranker | None:
    """The reranker ``settings`` configure, or None."""
    if settings.rerank_url is None and settings.rerank_model is None:
        return None
    return Reranker(settings)
