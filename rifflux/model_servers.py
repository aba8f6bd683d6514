"""What the settings of the model servers must be: an embedding server's URL and its
timeout, and a reranker (a server or an ONNX cross-encoder, never both), each checked
when ``Settings`` is made, with an error that says what to give instead."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal, Protocol

from .errors import InvalidArgumentError
from .limits import RERANK_DEPTH

if TYPE_CHECKING:
    from pathlib import Path

#: What a rerank server speaks (``core.rerank``): ``auto`` by the URL's path (``/rerank``
#: alone: text-embeddings-inference's; else the ``/v1/rerank`` of llama.cpp, Jina, Cohere).
RerankApi = Literal["auto", "jina", "tei"]
RERANK_APIS: tuple[RerankApi, ...] = ("auto", "jina", "tei")


def checked_embed_url(url: str) -> str:
    """``url``, or an error that says what an embedding server's URL looks like."""
    from urllib.parse import urlsplit

    parts = urlsplit(str(url).strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgumentError(
            "embed_url must be the http:// or https:// URL of an OpenAI-compatible embedding "
            "server, such as http://localhost:11434/v1 (Ollama) or http://localhost:8080/v1 "
            f"(llama-server --embedding), not {url!r} (--embed-url, RIFFLUX_EMBED_URL)")
    return str(url).strip()


class ModelServers(Protocol):
    """The settings checked here (``config.Settings`` has them)."""

    @property
    def embed_url(self) -> str | None: ...
    @property
    def embed_timeout(self) -> float: ...
    @property
    def embedding_backend(self) -> str: ...
    @property
    def rerank(self) -> bool: ...
    @property
    def rerank_url(self) -> str | None: ...
    @property
    def rerank_model(self) -> Path | None: ...
    @property
    def rerank_api(self) -> str: ...
    @property
    def rerank_depth(self) -> int: ...
    @property
    def rerank_timeout(self) -> float: ...


def check_model_servers(settings: ModelServers) -> None:
    """An error naming the first setting of the model servers that cannot be used."""
    if settings.embed_url is not None and settings.embedding_backend == "hash":
        raise InvalidArgumentError(
            "embedding_backend 'hash' makes no use of the embedding server embed_url "
            "names: drop one of them (--backend, --embed-url, RIFFLUX_EMBED_URL)")
    if not 0 < settings.embed_timeout < math.inf:
        raise InvalidArgumentError(f"embed_timeout must be a number of seconds above 0, "
                                   f"not {settings.embed_timeout!r}")
    if settings.rerank_url is not None and settings.rerank_model is not None:
        raise InvalidArgumentError(
            "give a rerank server (--rerank-url, RIFFLUX_RERANK_URL) or a cross-encoder "
            "directory (--rerank-model, RIFFLUX_RERANK_MODEL), not both")
    if settings.rerank and settings.rerank_url is None and settings.rerank_model is None:
        raise InvalidArgumentError(
            "rerank is on but names no reranker: give a rerank server's URL "
            "(--rerank-url http://127.0.0.1:8012/v1/rerank, RIFFLUX_RERANK_URL) or an "
            "ONNX cross-encoder's directory (--rerank-model DIR, RIFFLUX_RERANK_MODEL)")
    if settings.rerank_url is not None and not settings.rerank_url.startswith(
            ("http://", "https://")):
        raise InvalidArgumentError(
            f"rerank_url must be an http:// or https:// URL such as "
            f"http://127.0.0.1:8012/v1/rerank, not {settings.rerank_url!r}")
    if settings.rerank_api not in RERANK_APIS:
        raise InvalidArgumentError(f"rerank_api must be one of {', '.join(RERANK_APIS)}, "
                                   f"not {settings.rerank_api!r}")
    least, _, most = RERANK_DEPTH
    if isinstance(settings.rerank_depth, bool) or not least <= settings.rerank_depth <= most:
        raise InvalidArgumentError(f"rerank_depth must be a whole number from {least} to "
                                   f"{most}, not {settings.rerank_depth!r} (--rerank-depth)")
    if not 0 < settings.rerank_timeout <= 600:
        raise InvalidArgumentError(f"rerank_timeout must be a number of seconds above 0 "
                                   f"(at most 600), not {settings.rerank_timeout!r}")
