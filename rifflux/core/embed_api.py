"""The OpenAI-compatible embeddings API, as Rifflux speaks it: pure, no I/O.

``POST {base}/embeddings`` with ``{"model": ..., "input": [texts]}`` answers
``{"data": [{"embedding": [...], "index": i}, ...], "model": ...}`` (Ollama's
``/v1``, llama.cpp's ``llama-server --embedding``, LM Studio, vLLM,
text-embeddings-inference). This module makes the addresses and the request, reads an
answer into unit vectors (or says what is wrong with it), tells what a status code
means for the caller (retry, send less, or give up), and reads ``Retry-After``.
The client that sends the requests is ``rifflux.actors.server_embedder``.
"""

from __future__ import annotations

import hashlib
import json
import time
from email.utils import parsedate_to_datetime
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ..errors import EmbeddingUnavailableError
from .codes import normalise
from .vectors import F32

__all__ = ["Verdict", "embeddings_url", "label", "models_url", "parse_embeddings",
           "parse_models", "request_body", "retry_after", "shown_url", "verdict"]

#: What a status code tells the client: the vectors are there; wait and send again (the
#: server is busy, failing or restarting); send fewer or shorter texts; or the request
#: itself is refused (a wrong model name, key or address: it waits too, saying so, since
#: the server's side may be fixed without Rifflux being restarted).
Verdict = Literal["ok", "retry", "smaller", "refused"]


def _base(url: str) -> str:
    """The API's base: ``/v1`` added to a bare server address; ``/embeddings`` taken off."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith("/embeddings"):
        path = path[: -len("/embeddings")]
    elif not path:
        path = "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def embeddings_url(url: str) -> str:
    """Where embeddings are asked for: ``http://localhost:11434/v1`` ->
    ``http://localhost:11434/v1/embeddings`` (a URL ending in ``/embeddings`` is kept)."""
    return _base(url) + "/embeddings"


def models_url(url: str) -> str:
    """Where the server lists its models (``GET /v1/models``)."""
    return _base(url) + "/models"


def shown_url(url: str) -> str:
    """``url`` as status and hints show it: without a user name or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def label(model: str, dim: int, query_prefix: str = "", document_prefix: str = "") -> str:
    """The index's name for the vectors of ``model`` at ``dim`` dimensions (and with these
    prefixes, when there are any: a hash of them ends it): another name, dimension or
    prefix re-embeds the index, as another local model does."""
    if not (query_prefix or document_prefix):
        return f"server:{model}:{dim}"
    digest = hashlib.sha256(f"{query_prefix}\0{document_prefix}".encode()).hexdigest()[:8]
    return f"server:{model}:{dim}:{digest}"


def request_body(model: str | None, texts: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"input": texts, "encoding_format": "float"}
    if model:
        body["model"] = model
    return body


def verdict(status: int) -> Verdict:
    if status == 200:
        return "ok"
    if status == 413:
        return "smaller"
    if status in (408, 425, 429) or status >= 500:
        return "retry"
    return "refused"


#: Words of a 400 or 422 answer that mean "this input is too long or too large".
_TOO_LARGE = ("too large", "too long", "too many", "exceed", "maximum context", "max_tokens",
              "context length", "context size", "must have less than", "payload")


def says_too_large(status: int, text: str) -> bool:
    """Whether a refusal is about the input's size (sent smaller, it may pass)."""
    lowered = text.lower()
    return status in (400, 413, 422, 500) and any(w in lowered for w in _TOO_LARGE)


def parse_embeddings(content: bytes, count: int, dim: int | None) -> tuple[F32, str | None]:
    """The unit vectors of an answer for ``count`` texts, in the texts' order, and the
    model the server names; ``dim``: the dimension they must have (None: any, the same
    for all). A malformed answer or a wrong dimension raises
    ``EmbeddingUnavailableError`` (nothing from it is stored)."""
    try:
        payload = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbeddingUnavailableError(
            f"answered something that is not JSON ({exc}: {content[:80]!r}): is the URL "
            "that of an OpenAI-compatible /v1/embeddings API?") from exc
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or len(data) != count:
        got = f"{len(data)} embeddings" if isinstance(data, list) else "no 'data' list"
        raise EmbeddingUnavailableError(
            f"answered {got} for {count} texts: not the OpenAI embeddings API's answer "
            "({\"data\": [{\"embedding\": [...], \"index\": i}]})")
    rows: list[Any] = [None] * count
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if (not isinstance(index, int) or not 0 <= index < count or rows[index] is not None
                or not isinstance(vector, list) or not vector):
            raise EmbeddingUnavailableError(
                f"answered a malformed embedding at position {position} (each must be "
                "{\"embedding\": [numbers], \"index\": i}, every index once; base64 "
                "encodings are not read)")
        rows[index] = vector
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise EmbeddingUnavailableError(
            f"answered vectors of different lengths ({', '.join(map(str, sorted(lengths)))})")
    found = lengths.pop()
    if dim is not None and found != dim:
        raise EmbeddingUnavailableError(
            f"answered vectors of {found} dimensions where its model gave {dim} when Rifflux "
            "connected: the server's model changed? Nothing is stored from it; restart "
            "Rifflux to re-embed the index with the server's new model")
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingUnavailableError(f"answered embeddings that are not numbers ({exc})") \
            from exc
    if not np.isfinite(matrix).all():
        raise EmbeddingUnavailableError("answered embeddings holding NaN or infinite values")
    model = payload.get("model")
    return normalise(matrix), model if isinstance(model, str) and model.strip() else None


def parse_models(content: bytes) -> list[str]:
    """The model ids a ``GET /v1/models`` answer lists (none when it lists none, or is not
    that answer)."""
    try:
        payload = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return []
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return []
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number, or an HTTP date); None
    when there is none or it cannot be read."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))
