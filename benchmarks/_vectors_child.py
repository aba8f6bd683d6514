"""The vectors section's worker process, so that its RSS is the matrix's alone: load a
synthetic index's hash vectors as the query actor does (their compact rows), then run
the semantic branch of a search over the given queries (query embedding excluded), and
rank every query exactly over all rows in one streamed pass for the agreement; last,
time a load through the float32 vectors instead (converted as they come, as for an
index made before compact rows). Prints one JSON object."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from rifflux.core.codes import normalise
from rifflux.core.embedders import HashEmbedder
from rifflux.core.ranking import rank
from rifflux.core.vectors import VectorIndex
from rifflux.store.sqlite.reader import Reader
from rifflux.store.sqlite.schema import connect

from ._common import reset_peak_rss, rss, summary_ms

FEEDBACK = 3
POOL = 200
DEPTH = 20


async def _exact_top(reader: Reader, label: str, dim: int, queries: np.ndarray[Any, Any],
                     keep: int) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """Each query's best ``keep`` rows by exact cosine over every vector, equal cosines
    by smaller id (ids, vectors), read block by block: the pool that ``rank`` over all
    rows ranks."""
    best = [(np.zeros(0, np.int64), np.zeros((0, dim), np.float32), np.zeros(0, np.float32))
            for _ in range(len(queries))]

    def take(ids: Any, vectors: Any, files: Any) -> None:
        unit = normalise(np.asarray(vectors, dtype=np.float32))
        scores = (unit.astype(np.float64) @ queries.T.astype(np.float64)).astype(np.float32)
        for j in range(len(queries)):
            sc = scores[:, j]
            if len(sc) > keep:
                top = np.argpartition(-sc, keep - 1)[:keep]
                top = np.flatnonzero(sc >= sc[top].min())  # ties at the cut: by id below
            else:
                top = np.arange(len(sc))
            b_ids, b_vec, b_sc = best[j]
            ids_j = np.concatenate([b_ids, ids[top]])
            vec_j = np.concatenate([b_vec, vectors[top]])
            sc_j = np.concatenate([b_sc, sc[top]])
            order = np.lexsort((ids_j, -sc_j))[:keep]
            best[j] = (ids_j[order], vec_j[order], sc_j[order])

    await reader.stream_vectors(label, dim, take)
    return [(i, v) for i, v, _ in best]


async def _load(reader: Reader, label: str, dim: int, rows: int, *,
                compact: bool) -> VectorIndex:
    """The matrix loaded as the query actor loads it: each vector's compact row as the
    writer stored it (``compact``), or, without, every float32 vector converted as it
    comes (the load of an index made before compact rows, opened read-only)."""
    index = VectorIndex(dim, capacity=rows + max(1024, rows // 8))
    await reader.stream_vectors(label, dim, index.append,
                                index.append_codes if compact else None)
    index.seal()
    return index


async def serve(db: Path, queries: list[str]) -> dict[str, Any]:
    embedder = HashEmbedder()
    label, dim = embedder.label, embedder.dim
    conn = await connect(db, busy_timeout_ms=5000, readonly=True)
    try:
        reader = Reader(conn, db)
        vectors = [embedder.embed_query(q) for q in queries]
        import numkong  # noqa: F401  (imported by the first search in the service)

        before = rss()
        reset_peak_rss()
        start = time.perf_counter()
        rows = await reader.vector_capacity()
        index = await _load(reader, label, dim, rows, compact=True)
        load_s = time.perf_counter() - start
        loaded = rss()
        timings: dict[str, list[float]] = {k: [] for k in
                                           ("total", "scan", "read", "rank", "order",
                                            "filtered_total", "cpu")}
        results: list[list[int]] = []
        files = np.unique(np.arange(1, rows // 16 + 2))
        allowed = np.random.default_rng(7).choice(files, max(1, len(files) // 100),
                                                  replace=False)
        mask = index.mask(allowed)
        for vector in vectors:
            cpu = time.process_time()  # this process does nothing else: load-independent
            t0 = time.perf_counter()
            found = index.to_read(vector, DEPTH, feedback=FEEDBACK)
            t1 = time.perf_counter()
            got_ids, got_vectors = await reader.exact_vectors(label, dim, found)
            t2 = time.perf_counter()
            ranked = rank(vector, got_ids, got_vectors, DEPTH, feedback=FEEDBACK, ties=True)
            t3 = time.perf_counter()
            ordered = await reader.in_stable_order(ranked, DEPTH)
            t4 = time.perf_counter()
            timings["cpu"].append(time.process_time() - cpu)
            for key, seconds in (("scan", t1 - t0), ("read", t2 - t1), ("rank", t3 - t2),
                                 ("order", t4 - t3), ("total", t4 - t0)):
                timings[key].append(seconds)
            results.append([i for i, _ in rank(vector, got_ids, got_vectors, DEPTH,
                                               feedback=FEEDBACK)][:10])
            del ordered
            t0 = time.perf_counter()
            found = index.to_read(vector, DEPTH, feedback=FEEDBACK, mask=mask)
            got_ids, got_vectors = await reader.exact_vectors(label, dim, found)
            ranked = rank(vector, got_ids, got_vectors, DEPTH, feedback=FEEDBACK, ties=True)
            await reader.in_stable_order(ranked, DEPTH)
            timings["filtered_total"].append(time.perf_counter() - t0)
        after_queries = rss()
        start = time.perf_counter()
        units = normalise(np.stack(vectors))
        exact_pools = await _exact_top(reader, label, dim, units, POOL)
        reference_s = time.perf_counter() - start
        shares, same = [], []
        for vector, got, (ids, vecs) in zip(vectors, results, exact_pools, strict=True):
            exact = [i for i, _ in rank(vector, ids, vecs, DEPTH, feedback=FEEDBACK)][:10]
            shares.append(len(set(got) & set(exact)) / max(len(exact), 1))
            same.append(got == exact)
        matrix_mib, held = round(index.nbytes / 2**20, 1), len(index)
        del index  # (the matrix again, through the float32 vectors: one at a time)
        start = time.perf_counter()
        await _load(reader, label, dim, rows, compact=False)
        load_float32_s = time.perf_counter() - start
    finally:
        await conn.close()
    return {
        "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "vectors": held,
        "matrix_mib": matrix_mib,
        "float32_mib": round(held * dim * 4 / 2**20, 1),
        "load_s": round(load_s, 2),
        "load_float32_s": round(load_float32_s, 2),
        "rss_before_load_mib": before.current_mib,
        "rss_after_load_mib": loaded.current_mib,
        "peak_rss_while_loading_mib": loaded.peak_mib,
        "rss_after_queries_mib": after_queries.current_mib,
        "filtered_files": len(allowed),
        "semantic_ms": {k: summary_ms(v) for k, v in timings.items()},
        "top10_agreement_feedback": round(float(np.mean(shares)), 4),
        "top10_worst_feedback": round(float(np.min(shares)), 2),
        "top10_identical_share_feedback": round(float(np.mean(same)), 4),
        "reference_pass_s": round(reference_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks._vectors_child")
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True, help="JSON: [query, ...]")
    args = parser.parse_args()
    print(json.dumps(anyio.run(serve, args.db, json.loads(args.queries.read_text()))))


if __name__ == "__main__":
    main()
