"""The global options that choose the models: the embedding backend, a model directory,
an embedding server, a reranker (``arguments.parser`` adds them to every command)."""

from __future__ import annotations

import argparse
from typing import Any

from ..config import BACKENDS
from ..limits import RERANK_DEPTH


def add_model_options(g: Any) -> None:
    """The model options, on ``g`` (the global options' argument group)."""
    g.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS,
                   help="embedding backend; auto uses the ONNX model (bundled, or "
                        "--model-dir's) and falls back to hashing "
                        "[RIFFLUX_EMBEDDING_BACKEND; default auto]")
    g.add_argument("--model-dir", metavar="DIR", default=argparse.SUPPRESS,
                   help="your own embedding model: a directory with model.onnx, "
                        "tokenizer.json and optionally rifflux-model.json (see the README) "
                        "[RIFFLUX_MODEL_DIR; default the bundled all-MiniLM-L6-v2]")
    g.add_argument("--embed-url", metavar="URL", default=argparse.SUPPRESS,
                   help="make the vectors with an OpenAI-compatible embedding server "
                        "instead of the local model, e.g. http://localhost:11434/v1 (Ollama) "
                        "or http://localhost:8080/v1 (llama-server --embedding); its key "
                        "from RIFFLUX_EMBED_KEY [RIFFLUX_EMBED_URL]")
    g.add_argument("--embed-model", metavar="NAME", default=argparse.SUPPRESS,
                   help="the embedding server's model, e.g. nomic-embed-text or bge-m3 "
                        "[RIFFLUX_EMBED_MODEL; default the one model the server lists]")
    g.add_argument("--embed-timeout", metavar="SECONDS", type=float, default=argparse.SUPPRESS,
                   help="how long a request to the embedding server may take "
                        "[RIFFLUX_EMBED_TIMEOUT; default 30]")
    g.add_argument("--rerank", action="store_true", default=argparse.SUPPRESS,
                   help="rescore every search's first hits with the reranker of --rerank-url "
                        "or --rerank-model (a search's --no-rerank turns it off) "
                        "[RIFFLUX_RERANK=1]")
    g.add_argument("--rerank-url", metavar="URL", default=argparse.SUPPRESS,
                   help="a rerank server: http://127.0.0.1:8012/v1/rerank (llama.cpp's "
                        "llama-server --reranking, Jina, Cohere) or http://HOST:8080/rerank "
                        "(text-embeddings-inference) [RIFFLUX_RERANK_URL; the model name "
                        "sent: RIFFLUX_RERANK_NAME, a key: RIFFLUX_RERANK_KEY]")
    g.add_argument("--rerank-model", metavar="DIR", default=argparse.SUPPRESS,
                   help="an ONNX cross-encoder instead: a directory with model.onnx and "
                        "tokenizer.json (see the README) [RIFFLUX_RERANK_MODEL]")
    g.add_argument("--rerank-depth", metavar="N", type=int, default=argparse.SUPPRESS,
                   help=f"how many of the first hits are rescored ({RERANK_DEPTH[0]} to "
                        f"{RERANK_DEPTH[2]}) [RIFFLUX_RERANK_DEPTH; default {RERANK_DEPTH[1]}]")
    g.add_argument("--rerank-timeout", metavar="SECONDS", type=float,
                   default=argparse.SUPPRESS,
                   help="a reranker slower than this leaves the hits in their fused order "
                        "[RIFFLUX_RERANK_TIMEOUT; default 2]")
