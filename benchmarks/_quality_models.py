"""The quality section's measures of issue 35 on Cranfield: a hypothesis, and a reranker.

- Hypothesis (``search(query, hypothesis=...)``): each query's hypothesis is the title
  of one of its judged-relevant documents (the first its judgments list, at its highest
  grade). This is an UPPER BOUND, not what an agent's hypothesis will do: the title is
  written in the relevant document itself (its ``# title`` line), so the semantic
  branch is handed a text that names the answer. It tells how far the mode can go and
  which way of embedding is better: the hypothesis alone, or the hypothesis and the
  query together (``core.hypothesis.WITH_QUERY``, switched here for the measure), each
  in hybrid and semantic mode beside the query alone.
- Reranker: the added latency of the rerank path (``--rerank-url``) at N = 10, 30 and
  100 rescored hits, through a local rerank server (``tests.rerank_server``: real HTTP
  on 127.0.0.1, scoring by word overlap, microseconds, so that the figure is Rifflux's
  path: reading the hits' texts, the request and its JSON both ways, the reordering).
  Each search is timed with and without reranking, in turns; the server's own scoring
  time is given beside it, and per search what is left once it is taken off. A real
  cross-encoder's time (30-200 ms on a CPU for 10-50 hits) comes on top of it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rifflux import Rifflux, Settings
from rifflux.core import hypothesis as hypothesis_module
from rifflux.types import SearchResult

from ._metrics import dedupe_docs, ndcg_at, recall_at

#: The depths the rerank path is timed at, and how many queries each.
RERANK_DEPTHS = (10, 30, 100)
_RERANK_QUERIES = 40


def _docs(hits: list[SearchResult]) -> list[str]:
    return dedupe_docs([Path(h["path"]).stem for h in hits])


def hypotheses(queries: Sequence[tuple[int, str]], qrels: dict[int, dict[str, int]],
               titles: dict[str, str]) -> dict[int, str]:
    """Each query's hypothesis: the title of its first judged-relevant document at its
    highest grade."""
    out = {}
    for n, _ in queries:
        judged = qrels.get(n, {})
        best = max(judged.values(), default=0)
        doc = next((d for d, g in judged.items() if g == best and g > 0), None)
        if doc is not None and titles.get(doc, "").strip():
            out[n] = titles[doc]
    return out


async def _figures(rf: Rifflux, queries: Sequence[tuple[int, str]],
                   qrels: dict[int, dict[str, int]], mode: str,
                   guesses: dict[int, str] | None) -> dict[str, float]:
    ndcg, recall = [], []
    for n, text in queries:
        guess = None if guesses is None else guesses[n]
        top10 = await rf.search(text, top_k=10, mode=mode, hypothesis=guess)
        top100 = await rf.search(text, top_k=100, mode=mode, hypothesis=guess)
        ndcg.append(ndcg_at(_docs(top10), qrels[n], 10))
        recall.append(recall_at(_docs(top100), qrels[n], 100))
    return {"ndcg@10": round(statistics.fmean(ndcg), 4),
            "recall@100": round(statistics.fmean(recall), 4), "queries": len(queries)}


async def hypothesis_figures(rf: Rifflux, queries: Sequence[tuple[int, str]],
                             qrels: dict[int, dict[str, int]],
                             titles: dict[str, str]) -> dict[str, Any]:
    """nDCG@10 and recall@100 of the query alone, the hypothesis alone and the hypothesis
    with the query, in hybrid and semantic mode (an upper bound: the module's docstring)."""
    guesses = hypotheses(queries, qrels, titles)
    asked = [(n, text) for n, text in queries if n in guesses]
    table: dict[str, dict[str, float]] = {}
    chosen = hypothesis_module.WITH_QUERY
    try:
        for mode in ("hybrid", "semantic"):
            table[f"{mode}: query alone"] = await _figures(rf, asked, qrels, mode, None)
            for with_query, name in ((False, "hypothesis alone"),
                                     (True, "hypothesis + query")):
                hypothesis_module.WITH_QUERY = with_query
                table[f"{mode}: {name}"] = await _figures(rf, asked, qrels, mode, guesses)
    finally:
        hypothesis_module.WITH_QUERY = chosen
    return {"hypothesis_from": "the title of a judged-relevant document (an upper bound: "
                               "that title is written in the document itself)",
            "library_embeds": "hypothesis + query" if chosen else "hypothesis alone",
            "table": table}


async def rerank_figures(db: Path, queries: Sequence[tuple[int, str]],
                         backend: str) -> dict[str, Any]:
    """The rerank path's added latency at each of ``RERANK_DEPTHS`` through a local rerank
    server (the module's docstring)."""
    from tests.rerank_server import rerank_server  # (the tests' server: real HTTP)

    asked = list(queries[:_RERANK_QUERIES])
    out: dict[str, Any] = {"queries": len(asked), "server": "tests.rerank_server, scoring "
                           "by word overlap (microseconds: the figures are Rifflux's path)"}
    with rerank_server("overlap") as server:
        for depth in RERANK_DEPTHS:
            settings = Settings(rerank_url=server.url, rerank_depth=depth,
                                rerank_timeout=60.0).with_overrides(embedding_backend=backend)
            plain_ms, reranked_ms = [], []
            server.score_ms.clear()
            async with Rifflux(db, settings=settings) as rf:
                await rf.search("warm up", rerank=True)  # (the model and the connection)
                server.score_ms.clear()
                for _, text in asked:
                    started = time.perf_counter()
                    await rf.search(text, rerank=False)
                    plain_ms.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    await rf.search(text, rerank=True)
                    reranked_ms.append((time.perf_counter() - started) * 1000)
                reranker = (await rf.status())["reranker"]
            added = [r - p for r, p in zip(reranked_ms, plain_ms, strict=True)]
            scorer = list(server.score_ms)  # (one request per reranked search)
            left = [a - s for a, s in zip(added, scorer, strict=True)]
            out[f"N={depth}"] = {
                "hybrid_p50_ms": _p(plain_ms, 50), "reranked_p50_ms": _p(reranked_ms, 50),
                "added_p50_ms": _p(added, 50), "added_p95_ms": _p(added, 95),
                "server_scoring_p50_ms": _p(scorer, 50),
                "added_beyond_scoring_p50_ms": _p(left, 50),
                "added_beyond_scoring_p95_ms": _p(left, 95),
                "failures": 0 if reranker is None else reranker["failures"]}
    return out


def _p(values: list[float], q: int) -> float:
    if not values:
        return 0.0
    ranked = sorted(values)
    return round(ranked[min(len(ranked) - 1, round(q / 100 * (len(ranked) - 1)))], 2)


async def cranfield_models(cranfield: Path, out: Path, backend: str = "onnx",
                           parts: Sequence[str] = ("hypothesis", "rerank")) -> dict[str, Any]:
    """Only these measures, on the whole of Cranfield indexed in ``out/cranfield`` (where
    ``--sections cranfield,quality --reuse-db`` keeps it): ``python -m
    benchmarks._quality_models [CRANFIELD [OUT [hypothesis|rerank]]]``. The quality
    section gives the same figures beside the others."""
    from ._cranfield import load_docs, load_qrels, load_queries, write_docs

    docs = load_docs(cranfield)
    qrels = load_qrels(cranfield)
    queries = [(n, text) for n, text in enumerate(load_queries(cranfield), start=1)
               if any(g > 0 for g in qrels.get(n, {}).values())]
    folder, db = out / "cranfield" / "docs", out / "cranfield" / "index.db"
    if not folder.is_dir():
        write_docs(docs, folder)
    settings = Settings().with_overrides(embedding_backend=backend)
    async with Rifflux(db, settings=settings) as rf:
        await rf.reindex(folder)
        status = await rf.status()
        figures: dict[str, Any] = {"docs": len(docs), "chunks": status["chunks"],
                                   "model": status["embedding_model"]}
        if "hypothesis" in parts:
            figures["hypothesis"] = await hypothesis_figures(
                rf, queries, qrels, {docno: title for docno, title, _ in docs})
    if "rerank" in parts:
        figures["rerank"] = await rerank_figures(db, queries, backend)
    return figures


if __name__ == "__main__":
    import json
    import sys

    import anyio

    here = Path(__file__).resolve().parent
    given = sys.argv[1:]
    where = Path(given[0]) if given else here.parent.parent / "shared" / "eval" / "cranfield"
    results = Path(given[1]) if len(given) > 1 else here / "results"
    figures = anyio.run(cranfield_models, where, results, "onnx",
                        given[2:] or ("hypothesis", "rerank"))
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")
