"""The scale section's worker processes, so their RSS is rifflux's alone.

``index``: a cold index of the grown corpus (time to lexically searchable, to fully
embedded, the process's peak RSS), then no-op reindexes of the unchanged corpus.
``floor``: what the targets are measured against in the same run (numkong's int8 scan
of a million random rows; reading the compact rows from the index with plain sqlite3).
``serve``: a fresh process opens that index and times how long until it answers a
lexical search and a semantic one with every vector in memory (open-to-ready), then
times hybrid, lexical and semantic queries, each once; it reports the RSS after
loading, the peak during the query phase (VmHWM reset just before it) and the
process's lifetime peak (``ru_maxrss``). Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux
from rifflux.core import steps
from rifflux.core.embedders import HashEmbedder, OnnxEmbedder, locate_model

from ._common import (
    job_finished,
    job_left_indexing,
    median,
    percentile,
    poll_until,
    reset_peak_rss,
    rss,
    ru_maxrss_mib,
    summary_ms,
)

_TIMEOUT = 6 * 3600.0
#: No-op reindexes of the unchanged corpus after the cold index (median reported).
NOOP_RUNS = 3
MODES = ("hybrid", "lexical", "semantic")


def _dump_tasks_on_sigusr1() -> None:
    """``kill -USR1 <pid>`` prints every asyncio task's stack to stderr: a run of many
    minutes that stops moving can say where it waits."""
    loop = asyncio.get_running_loop()

    def dump() -> None:
        for task in asyncio.all_tasks(loop):
            task.print_stack(file=sys.stderr)
        sys.stderr.flush()

    loop.add_signal_handler(signal.SIGUSR1, dump)


async def index(db: Path, corpus: Path, backend: str) -> dict[str, Any]:
    _dump_tasks_on_sigusr1()
    async with Rifflux(db, embedding_backend=backend) as rf:
        t0 = time.perf_counter()
        job_id = (await rf.reindex(corpus, background=True))["job"]["id"]
        await job_left_indexing(rf, job_id, within=_TIMEOUT, interval=0.02)
        t_lex = time.perf_counter() - t0
        cpu_lex = _cpu(resource.RUSAGE_SELF)
        lexical_peak = rss().peak_mib
        snap = await job_finished(rf, job_id, within=_TIMEOUT, interval=0.05)
        t_full = time.perf_counter() - t0
        status = await rf.status()
        peak = rss().peak_mib
        result = snap.get("result") or {}
        noops: list[float] = []
        noops_cpu: list[float] = []  # (what a shared machine's other work leaves alone)
        reindexed = 0
        skipped: list[int] = []
        for _ in range(NOOP_RUNS):
            start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
            out = await rf.reindex(corpus)
            noops.append(time.perf_counter() - start)
            noops_cpu.append(_cpu(resource.RUSAGE_SELF) - cpu)
            reindexed += int(out["indexed_files"])
            skipped.append(int(out["skipped_files"]))
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    parse_cpu = _cpu(resource.RUSAGE_CHILDREN)  # the parse workers, ended at close
    chunks = int(status["chunks"])
    return {
        "status": snap["status"],
        "error": snap.get("error"),
        "job_errors": [f"{e['path']}: {e['error']}" for e in result.get("errors", [])][:5],
        "backend": status["embedding_backend"],
        "files": status["files"],
        "chunks": chunks,
        "embeddings": status["embeddings"],
        "lexically_searchable_s": round(t_lex, 2),
        "lexical_chunks_per_s": round(chunks / t_lex, 1) if t_lex else None,
        "fully_embedded_s": round(t_full, 2),
        # CPU seconds, which the other processes on a shared machine do not change: this
        # process's until lexically searchable, and its parse workers' (all parsing)
        "cpu_lexical_s": round(cpu_lex, 1),
        "cpu_parse_workers_s": round(parse_cpu, 1),
        # VmHWM, not ru_maxrss: ru_maxrss survives exec, so a child of a large parent
        # reports the parent's RSS at fork time (3.5 GB in one run) instead of its own.
        "peak_rss_lexical_mib": lexical_peak,
        "peak_rss_mib": peak,
        "ru_maxrss_mib": ru_maxrss_mib(),
        "largest_child_peak_rss_mib": round(children, 1),
        "noop_s": [round(s, 3) for s in noops],
        "noop_median_s": round(median(noops), 3),
        "noop_cpu_median_s": round(median(noops_cpu), 3),
        "noop_reindexed_files": reindexed,  # 0 when nothing changed
        "noop_skipped_files": skipped,  # every file, each run
    }


def _cpu(who: int) -> float:
    used = resource.getrusage(who)
    return used.ru_utime + used.ru_stime


def _query_embedder(backend: str) -> HashEmbedder | OnnxEmbedder:
    """The same embedder class the index uses, to time the query embedding alone."""
    return OnnxEmbedder(locate_model()) if backend == "onnx" else HashEmbedder()


async def serve(db: Path, backend: str, queries: dict[str, list[str]]) -> dict[str, Any]:
    _dump_tasks_on_sigusr1()
    warmup = queries["warmup"]
    opened, opened_cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
    async with Rifflux(db, embedding_backend=backend) as rf:
        lexical_hits = len(await rf.search(warmup[0], mode="lexical"))
        lexical_ready_s = time.perf_counter() - opened
        await rf.search(warmup[1], mode="semantic")  # waits for the model and the matrix
        semantic_ready_s = time.perf_counter() - opened
        # (all the process's threads: the matrix's load, the catalog's, the model's)
        semantic_ready_cpu_s = _cpu(resource.RUSAGE_SELF) - opened_cpu
        # Then checked, not timed (the status counts a million chunks: a second of work
        # that is the harness's, not the load's): every vector was in memory by then. A
        # load that outlasted the search's wait for it is timed until it is.
        status = await rf.status()
        chunks = int(status["chunks"])

        async def loaded() -> bool:
            st = await rf.status()
            return bool(st["embedding_model_ready"]) and st["vectors_in_memory"] >= chunks

        if not await loaded():
            await poll_until(loaded, within=600.0, interval=0.05)
            semantic_ready_s = time.perf_counter() - opened
            semantic_ready_cpu_s = _cpu(resource.RUSAGE_SELF) - opened_cpu
        after_load = rss()
        for q in warmup[2:]:
            await rf.search(q, mode="hybrid")
        peak_before_queries = rss().peak_mib
        reset_ok = reset_peak_rss()
        seconds: dict[str, list[float]] = {m: [] for m in MODES}
        empty: dict[str, int] = dict.fromkeys(MODES, 0)
        timed_steps: dict[str, list[dict[str, float]]] = {}
        for mode in MODES:
            with steps.recording() as timed_steps[mode]:
                for q in queries[mode]:
                    start = time.perf_counter()
                    found = await rf.search(q, top_k=10, mode=mode)
                    seconds[mode].append(time.perf_counter() - start)
                    empty[mode] += not found
        during = rss()
        status = await rf.status()
    # The query embedding alone, each semantic query again, with the same embedder class:
    # the semantic figure without it is each search's time less its query's embedding.
    embedder = _query_embedder(str(status["embedding_backend"]))
    embedder.embed_query(warmup[0])
    embed_s = []
    for q in queries["semantic"]:
        start = time.perf_counter()
        embedder.embed_query(q)
        embed_s.append(time.perf_counter() - start)
    without = [max(s - e, 0.0) for s, e in zip(seconds["semantic"], embed_s, strict=True)]
    return {
        "backend": status["embedding_backend"],
        "chunks": chunks,
        "vectors_in_memory": status["vectors_in_memory"],
        "lexical_ready_s": round(lexical_ready_s, 2),
        "lexical_ready_hits": lexical_hits,
        "semantic_ready_s": round(semantic_ready_s, 2),
        "semantic_ready_cpu_s": round(semantic_ready_cpu_s, 2),
        "rss_after_load_mib": after_load.current_mib,
        "peak_rss_query_phase_mib": during.peak_mib if reset_ok else None,
        "rss_after_queries_mib": during.current_mib,
        "peak_rss_lifetime_mib": max(peak_before_queries, during.peak_mib),
        "ru_maxrss_mib": ru_maxrss_mib(),
        "modes": {m: {**summary_ms(s), "empty_results": empty[m]} for m, s in seconds.items()},
        "semantic_without_query_embedding": summary_ms(without),
        "query_embedding": summary_ms(embed_s),
        "raw_ms": {m: [round(x * 1000.0, 3) for x in s] for m, s in seconds.items()},
        "steps": {m: step_summary(timed_steps[m]) for m in MODES},
    }


def step_summary(searches: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each step's p50 and mean over the searches (ms; a search that skipped a step
    counts 0 there), in the order the steps first came."""
    names = list(dict.fromkeys(name for timed in searches for name in timed))
    out: dict[str, dict[str, float]] = {}
    for name in names:
        ms = [timed.get(name, 0.0) for timed in searches]
        out[name] = {"p50_ms": round(percentile(ms, 50), 3),
                     "mean_ms": round(sum(ms) / len(ms), 3)}
    return out


#: Rows and dimensions of the scan floor: numkong's int8 dot product of one query with
#: this many random rows (``floor``), as the matrix scans its rows.
FLOOR_ROWS, FLOOR_DIM, FLOOR_RUNS = 1_000_000, 384, 9


def floor(db: Path) -> dict[str, Any]:
    """What the scale targets are measured against, in this run: numkong's int8 scan
    of ``FLOOR_ROWS`` x ``FLOOR_DIM`` random rows on one core (median of ``FLOOR_RUNS``,
    after one untimed), the same split across the cores as a search scans (its own
    median: a search's ratio to it is what is not the scan), and the time to read the
    compact rows the serving process loads (every row of ``embedding_codes``, with plain
    sqlite3, nothing done with them: the read floor of open-to-ready), twice, the second
    read reported."""
    import sqlite3

    import numkong
    import numpy as np

    rng = np.random.default_rng(7)
    codes = rng.integers(-127, 128, size=(FLOOR_ROWS, FLOOR_DIM), dtype=np.int8)
    query = rng.integers(-127, 128, size=(1, FLOOR_DIM), dtype=np.int8)
    out = np.empty((1, FLOOR_ROWS), dtype=np.float32)
    numkong.cdist(query, codes, metric="dot", out=out)
    scans = []
    for _ in range(FLOOR_RUNS):
        start = time.perf_counter()
        numkong.cdist(query, codes, metric="dot", out=out)
        scans.append(time.perf_counter() - start)
    # the same rows scanned as a search scans them: in parts, on every core at once
    # (``rifflux.core.int8_scan``); the targets stand over the one-core scan above
    from rifflux.core.int8_scan import dots, parts_for

    parts = []
    for _ in range(FLOOR_RUNS):
        start = time.perf_counter()
        dots(query[0], codes, out[0])
        parts.append(time.perf_counter() - start)
    del codes, out
    reads, rows, size = [], 0, 0
    for _ in range(2):
        start = time.perf_counter()
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            cursor = conn.execute("SELECT id, codes FROM embedding_codes ORDER BY id")
            rows = size = 0
            while block := cursor.fetchmany(4096):
                rows += len(block)
                size += len(b"".join(r[1] for r in block))
        finally:
            conn.close()
        reads.append(time.perf_counter() - start)
    return {"scan_rows": FLOOR_ROWS, "scan_dim": FLOOR_DIM,
            "scan_ms": [round(s * 1000.0, 3) for s in scans],
            "scan_p50_ms": round(median(scans) * 1000.0, 3),
            "scan_parts": parts_for(FLOOR_ROWS),
            "scan_parts_ms": [round(s * 1000.0, 3) for s in parts],
            "scan_parts_p50_ms": round(median(parts) * 1000.0, 3),
            "read_rows": rows, "read_mib": round(size / 2**20, 1),
            "read_s": round(reads[-1], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._scale_child")
    parser.add_argument("step", choices=["index", "serve", "floor"])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--backend", default="hash")
    parser.add_argument("--queries", type=Path, help="JSON: {mode: [query, ...], 'warmup': [...]}")
    args = parser.parse_args()
    if args.step == "index":
        result = anyio.run(index, args.db, args.corpus, args.backend)
    elif args.step == "floor":
        result = floor(args.db)
    else:
        queries = json.loads(args.queries.read_text())
        result = anyio.run(serve, args.db, args.backend, queries)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
