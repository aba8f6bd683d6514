"""Model servers for the tests: real HTTP servers (Starlette under uvicorn, in a thread
of the test process, on a free port) that speak the APIs Rifflux is a client of, and
fail on request.

- ``served(app)``: any ASGI app on a free port, until the block ends; ``stop()`` takes
  it away (the port refuses connections) and ``start()`` brings it back on the same port.
- ``embedding_server(...)``: the OpenAI-compatible ``POST /v1/embeddings`` (and
  ``GET /v1/models``), answering the bundled ONNX model's vectors (so that results match
  the local model's), with its faults set on ``server.faults``: a status (500, 429 with
  ``Retry-After``, 404...) for the next N requests, a delay (a timeout), vectors of a
  wrong dimension, malformed JSON, a largest batch (413 above it).

A reranker's server can be built the same way: a Starlette app given to ``served``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

#: How long a server may take to start or stop listening.
START_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Served:
    """An ASGI app served by uvicorn in a thread of its own on 127.0.0.1:``port``."""

    def __init__(self, app: Any, port: int | None = None) -> None:
        self.app = app
        self.port = port or free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen (again) on the same port; returns once it accepts connections."""
        assert self._server is None, "already serving"
        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning",
                                lifespan="off", access_log=False, timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        # (uvicorn installs signal handlers only in the main thread: none here)
        thread = threading.Thread(target=server.run, name=f"test-server-{self.port}",
                                  daemon=True)
        thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the test server on port {self.port} did not start")
            time.sleep(0.01)
        self._server, self._thread = server, thread

    def stop(self) -> None:
        """Stop listening: connections to the port are refused until ``start()``."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        server.force_exit = True  # (a request held open by a delay is not waited for)
        thread.join(START_SECONDS)
        self._server = self._thread = None

    @property
    def running(self) -> bool:
        return self._server is not None


@contextmanager
def served(app: Any, port: int | None = None) -> Iterator[Served]:
    server = Served(app, port)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# ---------------------------------------------------------------- embeddings


@dataclass
class Faults:
    """What the embedding server does wrong, changed by the test at any time."""

    #: Answer this status (with ``body``) instead of vectors, for the next ``times``
    #: requests (None: forever).
    status: int | None = None
    times: int | None = None
    retry_after: str | None = None
    body: str = '{"error": {"message": "the test server fails on purpose"}}'
    #: Seconds to wait before answering (a client's timeout), and more for each text.
    delay: float = 0.0
    per_text: float = 0.0
    #: Answer vectors cut to this many dimensions.
    dim: int | None = None
    #: Answer text that is not JSON.
    malformed: bool = False
    #: Answer 413 to a request of more texts than this ...
    max_batch: int | None = None
    #: ... or holding a text longer than this (in characters).
    max_chars: int | None = None

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]


@dataclass
class Asked:
    """One request the embedding server received."""

    texts: list[str]
    model: str | None
    authorization: str | None
    answered: int  # the status it answered


@dataclass
class EmbeddingServer:
    served: Served
    model: str
    faults: Faults = field(default_factory=Faults)
    asked: list[Asked] = field(default_factory=list)
    #: The most requests it was answering at once.
    most_at_once: int = 0

    @property
    def url(self) -> str:
        """What a user gives as ``--embed-url``."""
        return self.served.base + "/v1"

    def stop(self) -> None:
        self.served.stop()

    def start(self) -> None:
        self.served.start()

    def texts_embedded(self) -> int:
        return sum(len(a.texts) for a in self.asked if a.answered == 200)


_local: Any = None
_local_lock = threading.Lock()


def local_embedder() -> Any:
    """The bundled ONNX model (loaded once for every server of the test run)."""
    global _local
    with _local_lock:
        if _local is None:
            from rifflux.core.embedders import OnnxEmbedder, locate_model

            _local = OnnxEmbedder(locate_model())
        return _local


def embeddings_app(server: EmbeddingServer, embed: Callable[[list[str]], Any]) -> Starlette:
    lock = threading.Lock()  # (ONNX from uvicorn's worker threads, one at a time)
    at_once = 0

    async def embeddings(request: Request) -> Response:
        nonlocal at_once
        at_once += 1
        server.most_at_once = max(server.most_at_once, at_once)
        try:
            return await _answer(request)
        finally:
            at_once -= 1

    async def _answer(request: Request) -> Response:
        f = server.faults
        body = await request.json()
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts)
        asked = Asked(texts, body.get("model"), request.headers.get("authorization"), 200)
        server.asked.append(asked)
        if f.delay or f.per_text:
            await asyncio.sleep(f.delay + f.per_text * len(texts))
        if f.status is not None and (f.times is None or f.times > 0):
            if f.times is not None:
                f.times -= 1
            asked.answered = f.status
            headers = {"Retry-After": f.retry_after} if f.retry_after is not None else {}
            return Response(f.body, status_code=f.status, headers=headers,
                            media_type="application/json")
        if body.get("model") not in (None, server.model):
            asked.answered = 404
            return JSONResponse({"error": {"message": f"model {body.get('model')!r} not "
                                                      "found, try pulling it first"}}, 404)
        if f.max_batch is not None and len(texts) > f.max_batch:
            asked.answered = 413
            return JSONResponse({"error": {"message": "payload too large"}}, 413)
        if f.max_chars is not None and any(len(t) > f.max_chars for t in texts):
            asked.answered = 400  # (as llama.cpp's server says it)
            return JSONResponse({"error": {"message": "input is too large to process. "
                                                      "increase the physical batch size"}}, 400)
        if f.malformed:
            return Response('{"data": [{"embedding": [0.1, ', media_type="application/json")

        def run() -> Any:
            with lock:
                return embed(texts)

        vectors = await asyncio.to_thread(run)
        if f.dim is not None:
            vectors = vectors[:, : f.dim]
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
                for i, v in enumerate(vectors)]
        data.reverse()  # (the index says where each goes, not the order)
        return Response(json.dumps({"object": "list", "data": data, "model": server.model,
                                    "usage": {"prompt_tokens": 0, "total_tokens": 0}}),
                        media_type="application/json")

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": server.model,
                                                         "object": "model"}]})

    return Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"]),
                             Route("/v1/models", models, methods=["GET"])])


@contextmanager
def embedding_server(*, model: str = "minilm-served",
                     embed: Callable[[list[str]], Any] | None = None,
                     port: int | None = None) -> Iterator[EmbeddingServer]:
    """An OpenAI-compatible embedding server on a free port until the block ends;
    ``embed`` makes the vectors (default: the bundled ONNX model's documents' vectors)."""
    if embed is None:
        embed = local_embedder().embed_documents
    holder = Served(None, port)
    server = EmbeddingServer(holder, model)
    holder.app = embeddings_app(server, embed)
    holder.start()
    try:
        yield server
    finally:
        holder.stop()
