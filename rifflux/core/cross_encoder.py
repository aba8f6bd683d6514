"""An ONNX cross-encoder in a directory of its own: it reads a query and a text together
and gives one relevance score (the reranker of ``--rerank-model DIR``).

The directory is laid out as a bring-your-own embedding model's (``model_dir``):
``model.onnx``, ``tokenizer.json`` and optionally ``rifflux-model.json``, of which a
cross-encoder reads ``name``, ``max_tokens`` (query and text together; default 256)
and, when they differ from BERT's, ``input_names`` and ``output_name``. The output
must hold one number per pair (``[batch]`` or ``[batch, 1]``: a cross-encoder's
logit, higher is more relevant), as sentence-transformers' ``CrossEncoder`` exports
(ms-marco-MiniLM, bge-reranker) give.

Synchronous: the reranker runs it in a worker thread. Every error is a ``RerankError``
naming the file and what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError, RerankError
from .embedders import _tokenizer  # (one tokenizer set-up: truncation and padding)
from .model_dir import CONFIG_FILE, ModelFiles, read_config, resolve_inputs, resolve_output

__all__ = ["OnnxCrossEncoder"]

_HINT = "see README.md, 'Reranking'"


class OnnxCrossEncoder:
    """Scores (query, text) pairs with the cross-encoder in ``directory``."""

    def __init__(self, directory: Path) -> None:
        directory = directory.expanduser()
        model, tok = directory / "model.onnx", directory / "tokenizer.json"
        if not directory.is_dir():
            raise RerankError(f"rerank model directory {directory} not found: pass a directory "
                              "holding a cross-encoder's model.onnx and tokenizer.json "
                              f"(--rerank-model, RIFFLUX_RERANK_MODEL; {_HINT})")
        for f in (model, tok):
            if not f.is_file():
                raise RerankError(f"{f} not found: a rerank model directory needs model.onnx "
                                  f"and tokenizer.json ({_HINT})")
        try:
            config = read_config(directory / CONFIG_FILE, default_name=directory.name)
            files = ModelFiles(model, tok, config)
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = 2
            options.inter_op_num_threads = 1
            try:
                self._session = ort.InferenceSession(str(model), sess_options=options,
                                                     providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime's own errors, translated at the boundary
                raise RerankError(f"{model} cannot be loaded by onnxruntime "
                                  f"({type(exc).__name__}: {str(exc).strip()}): it must be an "
                                  f"ONNX export of a cross-encoder ({_HINT})") from exc
            self._inputs = resolve_inputs(files, [i.name for i in self._session.get_inputs()])
            self._output = resolve_output(files, [o.name for o in self._session.get_outputs()])
            self._tokenizer = _tokenizer(tok, config.max_tokens)
        except EmbeddingError as exc:  # (model_dir's words, for the rerank model)
            raise RerankError(f"the rerank model: {exc}") from exc
        self.name = config.name
        self._model = model
        self.score("warm up", ["a first run, so that a broken model fails at its load"])

    def score(self, query: str, texts: list[str]) -> list[float]:
        """One score per text, in order (higher: more relevant to ``query``)."""
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch([(query, text) for text in texts])
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.asarray([e.type_ids for e in encodings], dtype=np.int64)}
        try:
            out = self._session.run([self._output], {name: feeds[role] for role, name
                                                     in self._inputs.items()})[0]
        except Exception as exc:  # onnxruntime's own errors, translated at the boundary
            raise RerankError(f"{self._model} failed on {len(texts)} texts "
                              f"({type(exc).__name__}: {str(exc).strip()})") from exc
        scores = np.asarray(out, dtype=np.float32)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.ndim != 1 or scores.shape[0] != len(texts):
            raise RerankError(
                f"{self._model} output {self._output!r} has shape {list(np.shape(out))}, not "
                "[batch] or [batch, 1]: a cross-encoder gives one score per (query, text) "
                f"pair; name that output in field 'output_name' of {CONFIG_FILE}")
        return [float(s) for s in scores]
