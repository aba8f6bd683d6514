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
  100 rescored hits, through a local rerank server (``tests.rerank_server``: a real HTTP
  server whose scores are the bundled model's cosines, a bi-encoder standing in for a
  cross-encoder). Each search is timed with and without reranking, in turns; the
  server's own scoring time is given beside it, so that what Rifflux adds (the request,
  reading the hits' texts, the reordering) is the difference. The nDCG@10 of the
  reranked list is given too, but a stand-in bi-encoder's scores say nothing of what a
  real cross-encoder would do to quality.
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
                         qrels: dict[int, dict[str, int]], backend: str) -> dict[str, Any]:
    """The rerank path's added latency at each of ``RERANK_DEPTHS`` through a local rerank
    server, and the stand-in scorer's nDCG@10 (the module's docstring)."""
    from tests.rerank_server import rerank_server  # (the tests' server: real HTTP)

    asked = list(queries[:_RERANK_QUERIES])
    out: dict[str, Any] = {"queries": len(asked), "server": "tests.rerank_server: the "
                           "bundled model's cosines (a stand-in for a cross-encoder)"}
    with rerank_server() as server:
        for depth in RERANK_DEPTHS:
            settings = Settings(rerank_url=server.url, rerank_depth=depth,
                                rerank_timeout=60.0).with_overrides(embedding_backend=backend)
            plain_ms, reranked_ms, ndcg = [], [], []
            server.score_ms.clear()
            async with Rifflux(db, settings=settings) as rf:
                await rf.search("warm up", rerank=True)  # (the model and the connection)
                server.score_ms.clear()
                for n, text in asked:
                    started = time.perf_counter()
                    await rf.search(text, rerank=False)
                    plain_ms.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    hits = await rf.search(text, rerank=True)
                    reranked_ms.append((time.perf_counter() - started) * 1000)
                    ndcg.append(ndcg_at(_docs(hits), qrels[n], 10))
                failures = (await rf.status())["reranker"]
            added = [r - p for r, p in zip(reranked_ms, plain_ms, strict=True)]
            scorer = list(server.score_ms)
            out[f"N={depth}"] = {
                "hybrid_p50_ms": _p(plain_ms, 50), "reranked_p50_ms": _p(reranked_ms, 50),
                "added_p50_ms": _p(added, 50), "added_p95_ms": _p(added, 95),
                "server_scoring_p50_ms": _p(scorer, 50),
                "added_beyond_scoring_p50_ms": round(_p(added, 50) - _p(scorer, 50), 2),
                "failures": 0 if failures is None else failures["failures"],
                "ndcg@10 (stand-in scorer)": round(statistics.fmean(ndcg), 4)}
    return out


def _p(values: list[float], q: int) -> float:
    if not values:
        return 0.0
    ranked = sorted(values)
    return round(ranked[min(len(ranked) - 1, round(q / 100 * (len(ranked) - 1)))], 2)


async def cranfield_models(cranfield: Path, out: Path, backend: str = "onnx") -> dict[str, Any]:
    """Only these measures, on the whole of Cranfield indexed in ``out/cranfield`` (where
    ``--sections cranfield,quality --reuse-db`` keeps it): ``python -m
    benchmarks._quality_models [CRANFIELD [OUT]]``. The quality section gives the same
    figures beside the others."""
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
        guessed = await hypothesis_figures(rf, queries, qrels,
                                           {docno: title for docno, title, _ in docs})
    return {"docs": len(docs), "chunks": status["chunks"], "model": status["embedding_model"],
            "hypothesis": guessed, "rerank": await rerank_figures(db, queries, qrels, backend)}


if __name__ == "__main__":
    import json
    import sys

    import anyio

    here = Path(__file__).resolve().parent
    given = sys.argv[1:]
    where = Path(given[0]) if given else here.parent.parent / "shared" / "eval" / "cranfield"
    results = Path(given[1]) if len(given) > 1 else here / "results"
    figures = anyio.run(cranfield_models, where, results)
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")
