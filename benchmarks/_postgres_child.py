"""The postgres section's search process (one per store, so that its RSS is its own):
``python -m benchmarks._postgres_child --db DB --queries FILE``.

It opens the index (an SQLite file, or a PostgreSQL URL) with hash vectors, waits
until searches see every vector (SQLite: its matrix is loaded; PostgreSQL: the
vectors stay in the database), warms up, then times every mode at concurrency 1
and 8 (each query once per concurrency, ``concurrency`` searches in flight). It
keeps the top-10 of each query at concurrency 1, for the agreement between the
stores, and reports its RSS after the queries and its peak while querying. Prints
one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux

from ._common import poll_until, reset_peak_rss, rss, summary_ms

MODES = ("hybrid", "lexical", "semantic")
CONCURRENCY = (1, 8)


async def serve(db: str, queries: dict[str, list[str]]) -> dict[str, Any]:
    opened = time.perf_counter()
    async with Rifflux(db, embedding_backend="hash") as rf:
        status = await rf.status()
        chunks = int(status["chunks"])

        async def loaded() -> bool:  # (PostgreSQL: every text has its vector already)
            st = await rf.status()
            ready = st["vectors_in_memory"] >= chunks if st["store"] == "sqlite" else \
                st["pending_embeddings"] == 0
            return bool(st["embedding_model_ready"]) and ready

        await rf.search(queries["warmup"][0], mode="semantic")  # waits for the model
        await poll_until(loaded, within=1800.0, interval=0.05)
        load_s = time.perf_counter() - opened
        for q in queries["warmup"]:
            for mode in MODES:
                await rf.search(q, mode=mode)
        after_load = rss()
        reset_ok = reset_peak_rss()
        timed: dict[str, dict[str, Any]] = {}
        top: dict[str, list[list[str]]] = {}
        for concurrency in CONCURRENCY:
            for mode in MODES:
                seconds, answers = await _timed(rf, queries[mode], mode, concurrency)
                timed[f"{mode}_c{concurrency}"] = summary_ms(seconds)
                if concurrency == 1:
                    top[mode] = answers
        during = rss()
        status = await rf.status()
    return {
        "store": status["store"], "chunks": chunks, "embeddings": status["embeddings"],
        "lexical_ranking": status.get("lexical_ranking"),
        "open_and_ready_s": round(load_s, 2),
        "rss_after_warmup_mib": after_load.current_mib,
        "rss_after_queries_mib": during.current_mib,
        "peak_rss_query_phase_mib": during.peak_mib if reset_ok else None,
        "timed": timed, "top10": top,
    }


async def _timed(rf: Rifflux, queries: list[str], mode: str,
                 concurrency: int) -> tuple[list[float], list[list[str]]]:
    """Each query once, ``concurrency`` at a time: durations, and each one's top 10."""
    seconds: list[float] = [0.0] * len(queries)
    answers: list[list[str]] = [[] for _ in queries]
    limiter = anyio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with limiter:
            start = time.perf_counter()
            hits = await rf.search(queries[i], top_k=10, mode=mode)
            seconds[i] = time.perf_counter() - start
            answers[i] = [f"{h['path']}#{h['chunk_index']}" for h in hits]

    async with anyio.create_task_group() as tg:
        for i in range(len(queries)):
            tg.start_soon(one, i)
    return seconds, answers


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._postgres_child")
    parser.add_argument("--db", required=True, help="an index file or a postgresql:// URL")
    parser.add_argument("--queries", type=Path, required=True,
                        help="JSON: {mode: [query, ...], 'warmup': [...]}")
    args = parser.parse_args()
    result = anyio.run(serve, args.db, json.loads(args.queries.read_text()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
