"""Section 8: retrieval quality on the Cranfield collection, per mode.

Each document becomes ``<docno>.md`` holding ``# {title}`` and its text (lines
left-stripped, so indented lines do not turn into markdown code blocks). The
folder is indexed with the real ONNX model (the hash backend in ``--quick``)
and the 225 queries are run in each mode. The n-th query of ``cran.qry.xml``
is QUERY n of the judgments (see the collection's README).

Results are chunks; a document's rank is its best chunk's, duplicates dropped.
Two lists per query and mode:

- documents (the headline figures): ``search(q, top_k=200)`` mapped to documents
  and cut to 100; nDCG@10, MRR@10 and Recall@100. This ranks documents, like the
  baselines in the collection's README (whole documents indexed);
- served: ``search(q, top_k=10)``, the ten chunks a user gets, mapped to
  documents: nDCG@10 and MRR@10 there also count what several chunks of one
  document crowding the top ten (and hybrid's shallower fusion depth) cost.
"""

from __future__ import annotations

import re
import statistics
import time
from pathlib import Path
from typing import Any

from rifflux import Rifflux
from rifflux.types import SearchResult

from ._common import ENOUGH, Incomplete
from ._context import State
from ._latency import MODES
from ._metrics import dedupe_docs, mrr_at, ndcg_at, recall_at

_DOC = re.compile(r"<doc>(.*?)</doc>", re.DOTALL)
_TOP = re.compile(r"<top>(.*?)</top>", re.DOTALL)
_DEEP_TOP_K = 200


def _field(block: str, name: str) -> str:
    m = re.search(rf"<{name}>(.*?)</{name}>", block, re.DOTALL)
    return m.group(1) if m else ""


def load_docs(folder: Path) -> list[tuple[str, str, str]]:
    """(docno, title, text) in file order."""
    raw = (folder / "cran.all.1400.xml").read_text(encoding="utf-8")
    return [
        (_field(b, "docno").strip(), " ".join(_field(b, "title").split()), _field(b, "text"))
        for b in _DOC.findall(raw)
    ]


def load_queries(folder: Path) -> list[str]:
    raw = (folder / "cran.qry.xml").read_text(encoding="utf-8")
    return [" ".join(_field(b, "title").split()) for b in _TOP.findall(raw)]


def load_qrels(folder: Path) -> dict[int, dict[str, int]]:
    """QUERY position (1-based) -> {docno: grade}."""
    qrels: dict[int, dict[str, int]] = {}
    for line in (folder / "cranqrel.trec.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 4:
            qrels.setdefault(int(parts[0]), {})[parts[2]] = int(parts[3])
    return qrels


def write_docs(docs: list[tuple[str, str, str]], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for docno, title, text in docs:
        body = "\n".join(line.strip() for line in text.strip().splitlines())
        (dest / f"{docno}.md").write_text(f"# {title}\n\n{body}\n", encoding="utf-8")


def _docs_of(results: list[SearchResult]) -> list[str]:
    return dedupe_docs([Path(r["path"]).stem for r in results])


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else float("nan")


async def quality(state: State) -> dict[str, Any]:
    cfg = state.config
    backend = "hash" if cfg.quick else "onnx"
    if not (cfg.cranfield / "cran.all.1400.xml").is_file():
        raise Incomplete(f"the Cranfield collection is missing ({cfg.cranfield} has no "
                         "cran.all.1400.xml): pass --cranfield")
    docs = load_docs(cfg.cranfield)[: cfg.cranfield_docs]
    doc_ids = {d[0] for d in docs}
    qrels = {
        q: {d: g for d, g in judged.items() if d in doc_ids}
        for q, judged in load_qrels(cfg.cranfield).items()
    }
    queries = [
        (n, text) for n, text in enumerate(load_queries(cfg.cranfield), start=1)
        if any(g > 0 for g in qrels.get(n, {}).values())
    ][: cfg.cranfield_queries]
    base = cfg.out / "cranfield" if cfg.reuse_db else cfg.work / "cranfield"
    folder, db = base / "docs", base / "index.db"
    reused = cfg.reuse_db and db.exists()
    if not reused:
        write_docs(docs, folder)
    start = time.perf_counter()
    per_query: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    async with Rifflux(db, embedding_backend=backend) as rf:
        await rf.reindex(folder)
        index_s = time.perf_counter() - start
        status = await rf.status()
        if not queries or int(status["files"]) < ENOUGH * len(docs):
            raise Incomplete(f"the Cranfield index holds {status['files']} of its "
                             f"{len(docs)} documents, with {len(queries)} judged queries: "
                             "its figures would measure work not done")
        for n, text in queries:
            judged = qrels[n]
            for mode in MODES:
                served = _docs_of(await rf.search(text, top_k=10, mode=mode))
                deep = _docs_of(await rf.search(text, top_k=_DEEP_TOP_K, mode=mode))[:100]
                per_query[mode].append({
                    "ndcg@10": ndcg_at(deep, judged, 10),
                    "mrr@10": mrr_at(deep, judged, 10),
                    "recall@100": recall_at(deep, judged, 100),
                    "served_ndcg@10": ndcg_at(served, judged, 10),
                    "served_mrr@10": mrr_at(served, judged, 10),
                    "served_distinct_docs": float(len(served)),
                })
    metrics = {
        mode: {key: _mean([r[key] for r in rows]) for key in rows[0]} if rows else {}
        for mode, rows in per_query.items()
    }
    hybrid = [r["ndcg@10"] for r in per_query["hybrid"]]
    best_single = [max(a["ndcg@10"], b["ndcg@10"])
                   for a, b in zip(per_query["lexical"], per_query["semantic"], strict=True)]
    return {
        "backend": status["embedding_backend"],
        "model": status["embedding_model"],
        "docs": len(docs),
        "chunks": status["chunks"],
        "queries": len(queries),
        "reused_db": reused,
        "index_s": round(index_s, 1),
        "metrics": metrics,
        "hybrid_below_best_single_queries": sum(h < b for h, b in zip(hybrid, best_single,
                                                                        strict=True)),
        "per_query_ndcg@10": {m: [round(r["ndcg@10"], 4) for r in rows]
                              for m, rows in per_query.items()},
    }
