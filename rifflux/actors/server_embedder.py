"""An embedding server as the index's model: the client of the OpenAI-compatible
``/v1/embeddings`` API (``core.embed_api`` makes the requests and reads the answers).

``ServerEmbedder`` is an ``Embedder`` whose vectors come from the server. It is async
(httpx2, the MCP SDK's HTTP client, on the event loop): the embedder actor and the
search await ``aembed_documents`` / ``aembed_query`` instead of running a model in a
worker thread, so a shutdown cancels a request or a wait at once. The synchronous
methods of the protocol run those from a worker thread (``anyio.from_thread``).

- Batches are sized to the server: a window of texts is sent ``batch`` at a time (at
  first ``Settings.embed_server_batch``), at most ``concurrency`` requests at once; an
  answer that a request is too large (413, or a 400/422/500 that says so) halves the
  batch for good, and a single text still too large is cut to half its length. A
  request of several texts unanswered within the timeout halves the batch and the
  requests in flight (a busy server answers one request after the other: retrying the
  same ones would only pile more work on it).
- A request that fails for a while (no connection, a timeout, 429, 5xx, an answer that
  is not the API's) is sent again after a backoff, or the ``Retry-After`` the server
  asked for; after a few tries it raises ``EmbeddingUnavailableError``: the embedder
  actor then waits and tries again later, storing nothing meanwhile, and a search's
  semantic branch answers nothing (the answer's hint says why).
- ``health`` says whether the server answered last time, and since when it does not:
  status and the answers' hints read it.

The index's model identity is the server's model name and dimension
(``server:NAME:DIM``), learnt by ``connect`` from one request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import anyio

from ..errors import EmbeddingError, EmbeddingUnavailableError
from .server_health import ServerHealth

if TYPE_CHECKING:
    from ..config import Settings
    from ..core.vectors import F32
    from ..types import EmbeddingServerStatus

__all__ = ["ServerEmbedder"]

logger = logging.getLogger(__name__)

#: Tries of one request of documents before the embedder actor waits instead ...
_DOCUMENT_TRIES = 4
#: ... and of a query's (a search waits for it).
_QUERY_TRIES = 2
#: The first wait between two tries (doubled at each), the longest, and the longest a
#: query waits for a ``Retry-After``.
_BACKOFF = 0.25
_MAX_WAIT = 60.0
_QUERY_MAX_WAIT = 1.0
#: The first request (its model and dimension) gives up after this long at most, so that
#: searches stop waiting for a server that hangs (it is asked again after a backoff).
_PROBE_TIMEOUT = 10.0
#: A query's request gives up sooner than a batch's.
_QUERY_TIMEOUT = 5.0
#: A text is cut no shorter than this when the server refuses it as too large.
_SHORTEST_CUT = 16


class _TooLarge(Exception):
    """The server refused a request for its size: send fewer or shorter texts."""


class _TooSlow(Exception):
    """A request of several texts went unanswered within the timeout: send fewer at a
    time, fewer at once (a server busy with the requests before it is not down)."""


class ServerEmbedder:
    """The vectors of an embedding server. Made unconnected (``health`` is known from
    then on); ``connect`` learns its model and dimension."""

    backend: Literal["server"] = "server"

    def __init__(self, settings: Settings) -> None:
        import httpx2

        from ..core.embed_api import embeddings_url, models_url, shown_url

        assert settings.embed_url is not None
        self._httpx = httpx2
        self.url = shown_url(settings.embed_url)
        self._embeddings = embeddings_url(settings.embed_url)
        self._models = models_url(settings.embed_url)
        self._asked = settings.embed_model
        self._model: str | None = settings.embed_model
        self._timeout = settings.embed_timeout
        self.query_prefix = settings.embed_query_prefix
        self.document_prefix = settings.embed_document_prefix
        self.batch = settings.embed_server_batch
        self.concurrency = settings.embed_concurrency
        self._limiter = anyio.CapacityLimiter(settings.embed_concurrency)
        headers = {"Accept": "application/json"}
        if settings.embed_key:
            headers["Authorization"] = f"Bearer {settings.embed_key}"
        self._client = httpx2.AsyncClient(
            headers=headers, timeout=settings.embed_timeout, follow_redirects=True,
            # (room beside the batches' requests for the searches' queries)
            limits=httpx2.Limits(max_connections=settings.embed_concurrency + 8))
        self.health = ServerHealth()
        self._in_flight = 0  # requests sent and not answered yet
        self._dim: int | None = None
        self._label: str | None = None

    # ------------------------------------------------------------ the protocol

    @property
    def label(self) -> str:
        if self._label is None:
            raise EmbeddingError("the embedding server is not connected yet")
        return self._label

    @property
    def dim(self) -> int:
        if self._dim is None:
            raise EmbeddingError("the embedding server is not connected yet")
        return self._dim

    @property
    def model(self) -> str | None:
        """The server's model (None until known)."""
        return self._model

    @property
    def batch_texts(self) -> int:
        """How many texts a call of ``aembed_documents`` should get to keep every
        request slot busy."""
        return self.batch * self.concurrency

    def embed_documents(self, texts: list[str]) -> F32:
        """From a worker thread of anyio's (``aembed_documents`` runs on the loop)."""
        return anyio.from_thread.run(self.aembed_documents, texts)

    def embed_query(self, text: str) -> F32:
        return anyio.from_thread.run(self.aembed_query, text)

    # ------------------------------------------------------------ connecting

    async def connect(self) -> None:
        """Learn the server's model (its only one, when none was named) and dimension
        with one request; ``EmbeddingUnavailableError`` when it does not answer."""
        if self._asked is None:
            self._model = await self._only_model()
        vectors, named = await self._post(["dimension probe"], tries=1, max_wait=0.0,
                                          timeout=min(self._timeout, _PROBE_TIMEOUT))
        from ..core.embed_api import label

        self._model = named or self._model or "default"
        self._dim = int(vectors.shape[1])
        self._label = label(self._model, self._dim, self.query_prefix, self.document_prefix)
        logger.info("embedding server %s: model %s, %d dimensions", self.url, self._model,
                    self._dim)

    async def _only_model(self) -> str:
        from ..core.embed_api import parse_models

        try:
            response = await self._client.get(self._models)
        except self._httpx.HTTPError as exc:
            why = f"at {self.url} cannot be reached ({type(exc).__name__}: {exc})"
            self.health.failed(why)
            raise EmbeddingUnavailableError(why) from exc
        models = parse_models(response.content) if response.status_code == 200 else []
        if len(models) == 1:
            self.health.answered()
            return models[0]
        said = (f"lists {len(models)} models ({', '.join(models[:5])})" if models
                else f"does not list its models ({response.status_code} from {self._models})")
        why = (f"at {self.url} {said}: name the one to use with --embed-model or "
               "RIFFLUX_EMBED_MODEL")
        self.health.failed(why)
        raise EmbeddingUnavailableError(why)

    async def check(self) -> None:
        """Ask the server once (status: whether it answers now), unless requests are on
        their way (their answers will tell, and a busy server is not a server away);
        never raises."""
        if self._in_flight:
            return
        try:
            await self._post(["status check"], tries=1, max_wait=0.0,
                             timeout=min(self._timeout, 2.0))
        except EmbeddingError:
            pass  # (health says why)

    async def aclose(self) -> None:
        await self._client.aclose()

    def status(self) -> EmbeddingServerStatus:
        h = self.health
        return {"url": self.url, "model": self._model, "dim": self._dim,
                "reachable": h.reachable, "error": h.error, "unreachable_since": h.since,
                "batch_size": self.batch, "concurrency": self.concurrency}

    # ------------------------------------------------------------ embedding

    async def aembed_query(self, text: str) -> F32:
        if self.health.hangs():
            raise EmbeddingUnavailableError(f"the embedding server {self.health.error}")
        text = self.query_prefix + text
        while True:
            try:
                vectors, _ = await self._post([text], tries=_QUERY_TRIES,
                                              max_wait=_QUERY_MAX_WAIT,
                                              timeout=min(self._timeout, _QUERY_TIMEOUT),
                                              retry_unreachable=False)
            except _TooLarge:  # a query longer than the model takes: its beginning
                if len(text) <= _SHORTEST_CUT:
                    why = f"at {self.url} refuses a query of {len(text)} characters as too large"
                    self.health.failed(why)
                    raise EmbeddingUnavailableError(f"the embedding server {why}") from None
                text = text[: len(text) // 2]
                continue
            out: F32 = vectors[0]
            return out

    async def aembed_documents(self, texts: list[str]) -> F32:
        """One unit vector per text, in their order: ``batch`` texts a request, at most
        ``concurrency`` requests at once."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.document_prefix:
            texts = [self.document_prefix + t for t in texts]
        rows: list[F32 | None] = [None] * len(texts)
        try:
            async with anyio.create_task_group() as tg:
                for start in range(0, len(texts), self.batch):
                    tg.start_soon(self._part, texts, start, min(start + self.batch,
                                                                len(texts)), rows)
        except ExceptionGroup as group:  # the first of our errors, as one request raises it
            own = [e for e in group.exceptions if isinstance(e, EmbeddingError)]
            if not own:
                raise
            raise own[0] from group
        return np.stack([r for r in rows if r is not None]).astype(np.float32)

    async def _part(self, texts: list[str], start: int, end: int,
                    rows: list[F32 | None]) -> None:
        part = texts[start:end]
        try:
            async with self._limiter:
                vectors, _ = await self._post(part, tries=_DOCUMENT_TRIES, max_wait=_MAX_WAIT,
                                              timeout=self._timeout, split_when_slow=True)
        except (_TooLarge, _TooSlow) as exc:
            if len(part) > 1:  # fewer texts a request from now on
                half = len(part) // 2
                slow = isinstance(exc, _TooSlow)
                if half < self.batch:
                    self.batch = half
                    logger.info("the embedding server %s %d texts at once: sending %d a "
                                "request from now on",
                                f"did not answer within {self._timeout:g} s to" if slow
                                else "refused", len(part), half)
                if slow and self.concurrency > 1:  # (it answers one after the other)
                    self.concurrency = max(1, self.concurrency // 2)
                    self._limiter.total_tokens = self.concurrency
                await self._part(texts, start, start + half, rows)
                await self._part(texts, start + half, end, rows)
                return
            rows[start] = await self._cut(part[0])
            return
        for offset, row in enumerate(vectors):
            rows[start + offset] = row

    async def _cut(self, text: str) -> F32:
        """A text the server refuses as too large, cut to half its length until it takes
        it (its beginning is what its vector is made of)."""
        while len(text) > _SHORTEST_CUT:
            text = text[: len(text) // 2]
            try:
                async with self._limiter:
                    vectors, _ = await self._post([text], tries=_DOCUMENT_TRIES,
                                                  max_wait=_MAX_WAIT, timeout=self._timeout)
                row: F32 = vectors[0]
                return row
            except _TooLarge:
                continue
        raise EmbeddingError(f"the embedding server at {self.url} refuses even "
                             f"{_SHORTEST_CUT} characters of a text as too large")

    async def _post(self, texts: list[str], *, tries: int, max_wait: float,
                    timeout: float,  # noqa: ASYNC109 - httpx's own
                    retry_unreachable: bool = True,
                    split_when_slow: bool = False) -> tuple[F32, str | None]:
        """The vectors of ``texts`` and the model the server names, after at most
        ``tries`` requests; ``_TooLarge`` when the server refuses them for their size,
        ``_TooSlow`` (``split_when_slow``) when several went unanswered in time. A
        server away or timing out is asked again only when ``retry_unreachable`` (a
        query is not: the search goes on without it, and the next search asks)."""
        from ..core.embed_api import (
            parse_embeddings,
            request_body,
            retry_after,
            says_too_large,
            verdict,
        )

        body = request_body(self._model, texts)
        why = ""
        wait: float | None = None
        for attempt in range(tries):
            wait = None
            try:
                self._in_flight += 1
                try:
                    response = await self._client.post(self._embeddings, json=body,
                                                       timeout=timeout)
                finally:
                    self._in_flight -= 1
            except self._httpx.TimeoutException:
                if split_when_slow and len(texts) > 1:
                    raise _TooSlow() from None
                why = f"at {self.url} did not answer within {timeout:g} s"
                self.health.failed(why, timeout=True)
                if not retry_unreachable:
                    break
            except self._httpx.HTTPError as exc:
                why = f"at {self.url} cannot be reached ({type(exc).__name__}: {exc})"
                if not retry_unreachable:  # (a query: asked again by the next search)
                    self.health.failed(why)
                    break
            else:
                code = response.status_code
                said = verdict(code)
                if said == "ok":
                    try:
                        found = parse_embeddings(response.content, len(texts), self._dim)
                    except EmbeddingUnavailableError as exc:
                        why = f"at {self.url} {exc}"
                    else:
                        self.health.answered()
                        return found
                elif said == "smaller" or says_too_large(code, response.text):
                    self.health.answered()
                    raise _TooLarge(response.text[:200])
                else:
                    why = (f"at {self.url} answered {code} "
                           f"{_short(response.text) or response.reason_phrase}")
                    wait = retry_after(response.headers.get("retry-after"))
                    if said == "refused":  # (sent again as it is, it is refused again)
                        why += (" (check the URL, --embed-model / RIFFLUX_EMBED_MODEL and "
                                "RIFFLUX_EMBED_KEY)")
                        self.health.failed(why)
                        break
            self.health.failed(why)
            if attempt + 1 < tries:
                delay = wait if wait is not None else _BACKOFF * 2 ** attempt
                if delay > max_wait:
                    break  # (longer than this caller may wait: it says why instead)
                await anyio.sleep(delay)
        raise EmbeddingUnavailableError(f"the embedding server {why}", retry_after=wait)


def _short(text: str) -> str:
    """A server's error body, on one line and short."""
    one = " ".join(text.split())
    return one if len(one) <= 200 else one[:199] + "…"
