"""A real rerank server for the tests and the benchmarks: a standard-library HTTP server on
a free port, in a thread, that speaks the ``/v1/rerank`` API (llama.cpp's server, Jina,
Cohere: ``{"query", "documents"}`` -> ``{"results": [{"index", "relevance_score"}]}``)
and text-embeddings-inference's ``/rerank`` (``{"query", "texts"}`` -> ``[{"index",
"score"}]``).

Its scorer is built from the bundled ONNX model: a document's score is the cosine of its
vector and the query's (a bi-encoder standing in for a cross-encoder: real vectors, real
work per request); ``scorer="overlap"`` scores the query's words a document holds
instead (microseconds: what a benchmark of the client's own path wants). ``fault``
makes it misbehave: ``"500"`` (an error status),
``"slow"`` (answers after ``slow_seconds``), ``"malformed"`` (a body that is not JSON),
``"short"`` (scores one document fewer than sent). Each answer carries the time the
scorer took (``X-Score-Ms``), and the server counts the requests it was sent.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rifflux.core.embedders import OnnxEmbedder, locate_model

Fault = Literal["none", "500", "slow", "malformed", "short"]
Scorer = Literal["cosine", "overlap"]

_MODEL: OnnxEmbedder | None = None
_MODEL_LOCK = threading.Lock()


def bundled_model() -> OnnxEmbedder:
    """The bundled model, loaded once per process."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            _MODEL = OnnxEmbedder(locate_model())
        return _MODEL


def overlap_scores(query: str, documents: list[str]) -> list[float]:
    """How many of the query's words each document holds."""
    words = set(query.lower().split())
    return [float(len(words & set(d.lower().split()))) for d in documents]


def cosine_scores(query: str, documents: list[str]) -> list[float]:
    """Each document's cosine to the query, by the bundled model's vectors."""
    model = bundled_model()
    q = model.embed_query(query)
    docs = model.embed_documents(documents)
    return [float(s) for s in docs @ q]


@dataclass
class RerankServer:
    url: str  # http://127.0.0.1:PORT (append /v1/rerank or /rerank)
    fault: Fault = "none"
    scorer: Scorer = "cosine"
    slow_seconds: float = 3.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: Each request's Authorization header ("" without one).
    authorizations: list[str] = field(default_factory=list)
    #: The scorer's time in each answer, in milliseconds.
    score_ms: list[float] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


@contextmanager
def rerank_server(scorer: Scorer = "cosine") -> Iterator[RerankServer]:
    """A rerank server on a free port of 127.0.0.1, stopped on exit."""
    state = RerankServer(url="", scorer=scorer)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # (TCP_NODELAY, as servers set it: no 40 ms waits)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # (quiet: the tests' output stays theirs)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            state.requests.append(body)
            state.authorizations.append(self.headers.get("Authorization", ""))
            fault = state.fault
            if fault == "500":
                self._send(500, b'{"error": "the model crashed"}')
                return
            if fault == "slow":  # (a server that hangs: released when the test ends)
                state.release.wait(state.slow_seconds)
            if fault == "malformed":
                self._send(200, b'{"results": [{"index": 0, "relevance_')
                return
            texts = body.get("documents", body.get("texts"))
            if not isinstance(texts, list) or not isinstance(body.get("query"), str):
                self._send(422, b'{"error": "query and documents (or texts) are needed"}')
                return
            started = time.perf_counter()
            score = overlap_scores if state.scorer == "overlap" else cosine_scores
            scores = score(body["query"], [str(t) for t in texts])
            took = (time.perf_counter() - started) * 1000
            state.score_ms.append(took)
            order = sorted(range(len(scores)), key=lambda i: -scores[i])
            if fault == "short":
                order = order[:-1]
            if self.path.rstrip("/") == "/rerank" and "texts" in body:  # TEI's shape
                answer: Any = [{"index": i, "score": scores[i]} for i in order]
            else:
                top_n = body.get("top_n") or len(order)
                answer = {"model": body.get("model", "cosine"), "object": "list",
                          "results": [{"index": i, "relevance_score": scores[i]}
                                      for i in order[:top_n]]}
            self._send(200, json.dumps(answer).encode(), {"X-Score-Ms": f"{took:.3f}"})

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None,
                  ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    if scorer == "cosine":  # (loaded before the first request: a test's timeout is the server's)
        bundled_model()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="rerank-server", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def ordered_by_cosine(query: str, texts: list[str]) -> list[str]:
    """``texts`` as the server's scorer orders them for ``query``."""
    scores = np.asarray(cosine_scores(query, texts))
    return [texts[i] for i in np.argsort(-scores, kind="stable")]


# ---------------------------------------------------------------- an ONNX cross-encoder

#: The bundled tokenizer's [CLS] and [SEP].
_CLS, _SEP = 101, 102


def overlap_cross_encoder(where: Path, *, output: str = "logits",
                          flat: bool = False) -> Path:
    """A cross-encoder built here with ``onnx``, in a directory with the bundled tokenizer:
    a (query, text) pair scores the number of the text's tokens that the query holds
    too (each token of the text counted once per place; [CLS] and [SEP] never). Output
    ``[batch, 1]`` (``flat``: ``[batch]``) under the name ``output``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name: str, value: Any) -> onnx.TensorProto:
        return numpy_helper.from_array(np.asarray(value, dtype=np.int64), name)

    nodes = [
        # the query's tokens (type 0, in the mask, not [CLS] or [SEP]) ...
        helper.make_node("Equal", ["input_ids", "cls"], ["is_cls"]),
        helper.make_node("Equal", ["input_ids", "sep"], ["is_sep"]),
        helper.make_node("Or", ["is_cls", "is_sep"], ["special"]),
        helper.make_node("Not", ["special"], ["plain_b"]),
        helper.make_node("Cast", ["plain_b"], ["plain"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["second"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "second"], ["first"]),
        helper.make_node("Mul", ["first", "mask"], ["q0"]),
        helper.make_node("Mul", ["q0", "plain"], ["query_tokens"]),
        # ... and the text's (type 1, in the mask, not [SEP])
        helper.make_node("Mul", ["second", "mask"], ["d0"]),
        helper.make_node("Mul", ["d0", "plain"], ["text_tokens"]),
        # same[b, i, j]: text token i is query token j
        helper.make_node("Unsqueeze", ["input_ids", "axis2"], ["ids_i"]),
        helper.make_node("Unsqueeze", ["input_ids", "axis1"], ["ids_j"]),
        helper.make_node("Equal", ["ids_i", "ids_j"], ["same_b"]),
        helper.make_node("Cast", ["same_b"], ["same"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["text_tokens", "axis2"], ["text_i"]),
        helper.make_node("Unsqueeze", ["query_tokens", "axis1"], ["query_j"]),
        helper.make_node("Mul", ["same", "text_i"], ["m0"]),
        helper.make_node("Mul", ["m0", "query_j"], ["matches"]),
        helper.make_node("ReduceMax", ["matches"], ["held"], axes=[2], keepdims=0),
        helper.make_node("ReduceSum", ["held", "axis1"], ["summed"], keepdims=0 if flat else 1),
        helper.make_node("Identity", ["summed"], [output]),
    ]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]
    graph = helper.make_graph(
        nodes, "overlap", inputs,
        [helper.make_tensor_value_info(output, TensorProto.FLOAT,
                                       ["batch"] if flat else ["batch", 1])],
        initializer=[const("cls", _CLS), const("sep", _SEP), const("axis1", [1]),
                     const("axis2", [2]),
                     numpy_helper.from_array(np.asarray(1.0, dtype=np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    where.mkdir(parents=True)
    onnx.save(model, str(where / "model.onnx"))
    shutil.copy(locate_model().tokenizer, where / "tokenizer.json")
    return where


def overlap(query: str, text: str) -> int:
    """What ``overlap_cross_encoder`` scores (query, text): computed here in Python."""
    from tokenizers import Tokenizer

    pair = Tokenizer.from_file(str(locate_model().tokenizer)).encode(query, text)
    asked = {i for i, t in zip(pair.ids, pair.type_ids, strict=True)
             if t == 0 and i not in (_CLS, _SEP)}
    return sum(1 for i, t in zip(pair.ids, pair.type_ids, strict=True)
               if t == 1 and i != _SEP and i in asked)
