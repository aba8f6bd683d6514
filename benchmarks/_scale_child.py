"""The scale section's worker processes, so their RSS is rifflux's alone.

``index``: a cold index of the grown corpus (time to lexically searchable, to
fully embedded, lifetime peak RSS). ``serve``: a fresh process opens that
index, waits until every vector is in memory, then times hybrid (and, for
context, lexical and semantic) queries, each once; it reports the RSS after
loading, the peak during the query phase (VmHWM reset just before it) and the
process's lifetime peak (``ru_maxrss``). Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux

from ._common import (
    job_finished,
    job_left_indexing,
    poll_until,
    reset_peak_rss,
    rss,
    ru_maxrss_mib,
    summary_ms,
)

_TIMEOUT = 6 * 3600.0


async def index(db: Path, corpus: Path, backend: str) -> dict[str, Any]:
    async with Rifflux(db, embedding_backend=backend) as rf:
        t0 = time.perf_counter()
        job_id = (await rf.reindex(corpus, background=True))["job"]["id"]
        await job_left_indexing(rf, job_id, within=_TIMEOUT, interval=0.02)
        t_lex = time.perf_counter() - t0
        snap = await job_finished(rf, job_id, within=_TIMEOUT, interval=0.05)
        t_full = time.perf_counter() - t0
        status = await rf.status()
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "status": snap["status"],
        "backend": status["embedding_backend"],
        "files": status["files"],
        "chunks": status["chunks"],
        "embeddings": status["embeddings"],
        "lexically_searchable_s": round(t_lex, 2),
        "fully_embedded_s": round(t_full, 2),
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child of a large parent
        # reports the parent's RSS at fork time (3.5 GB in one run) instead of its own.
        "peak_rss_mib": rss().peak_mib,
        "ru_maxrss_mib": ru_maxrss_mib(),
        "largest_child_peak_rss_mib": round(children, 1),
    }


async def serve(db: Path, backend: str, queries: dict[str, list[str]]) -> dict[str, Any]:
    opened = time.perf_counter()
    async with Rifflux(db, embedding_backend=backend) as rf:
        status = await rf.status()
        chunks = int(status["chunks"])

        async def loaded() -> bool:
            st = await rf.status()
            return bool(st["embedding_model_ready"]) and st["vectors_in_memory"] >= chunks

        await rf.search(queries["warmup"][0], mode="semantic")  # waits for model and matrix
        await poll_until(loaded, within=600.0, interval=0.05)
        load_s = time.perf_counter() - opened
        after_load = rss()
        for q in queries["warmup"][1:]:
            await rf.search(q, mode="hybrid")
        peak_before_queries = rss().peak_mib
        reset_ok = reset_peak_rss()
        seconds: dict[str, list[float]] = {m: [] for m in ("hybrid", "lexical", "semantic")}
        for mode in seconds:
            for q in queries[mode]:
                start = time.perf_counter()
                await rf.search(q, top_k=10, mode=mode)
                seconds[mode].append(time.perf_counter() - start)
        during = rss()
        status = await rf.status()
    return {
        "backend": status["embedding_backend"],
        "chunks": chunks,
        "vectors_in_memory": status["vectors_in_memory"],
        "open_and_load_s": round(load_s, 2),
        "rss_after_load_mib": after_load.current_mib,
        "peak_rss_query_phase_mib": during.peak_mib if reset_ok else None,
        "rss_after_queries_mib": during.current_mib,
        "peak_rss_lifetime_mib": max(peak_before_queries, during.peak_mib),
        "ru_maxrss_mib": ru_maxrss_mib(),
        "modes": {m: summary_ms(s) for m, s in seconds.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._scale_child")
    parser.add_argument("step", choices=["index", "serve"])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--backend", default="hash")
    parser.add_argument("--queries", type=Path, help="JSON: {mode: [query, ...], 'warmup': [...]}")
    args = parser.parse_args()
    if args.step == "index":
        result = anyio.run(index, args.db, args.corpus, args.backend)
    else:
        queries = json.loads(args.queries.read_text())
        result = anyio.run(serve, args.db, args.backend, queries)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
