"""Section: the compact vector matrix (int8, a scale per row) against exact float32.

**agreement**: on the Cranfield index and the corpus index (the real model's vectors;
the ones the cranfield and corpus sections make, reused with ``--reuse-db``), each
query's top 10 by the path a search takes (the int8 scan, its candidates ranked exactly
on their float32 vectors read back from the database) against an exact float32 ranking
of every vector in the index, both with the service's pseudo-relevance feedback (3 rows,
a pool of 200) and without. A search for the top 10 reads 20 deep, so both rank 20 and
their first 10 are compared. Figures: the mean share of the exact top 10 that the
compact path returns, the share of queries whose top 10 is identical (order included),
and the worst query.

**scale**: a synthetic index of ``--vectors-rows`` chunks (default 1,000,000) with hash
vectors of perturbed corpus text (and their compact rows, as the writer stores them)
and 16 chunks a file, loaded by a worker process (``python -m benchmarks._vectors_child``)
as the query actor loads it: time, RSS after loading and peak while loading. Then the
semantic branch as a search runs it, query embedding excluded (the scan, reading the
candidates' float32 vectors, the exact ranking with feedback, the stable order of
ties), over distinct queries, unfiltered and filtered to 1% of the files, with its
agreement against an exact float32 ranking of all rows (computed in one streamed
pass). Last, the time of a load through the float32 vectors instead, converted as they
come (the load of an index made before compact rows).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from rifflux import Rifflux
from rifflux.core.codes import packed
from rifflux.core.embedders import HashEmbedder, load_embedder
from rifflux.core.ranking import rank
from rifflux.core.vectors import VectorIndex
from rifflux.store.sqlite.reader import Reader
from rifflux.store.sqlite.schema import connect

from ._context import State
from ._cranfield import load_docs, load_queries, write_docs
from ._grow import perturb
from ._workers import run_worker

#: The service's defaults (Settings.semantic_feedback, VectorIndex's pool).
FEEDBACK = 3
DEPTH = 20  # a search for the top 10 ranks 20 deep
CHUNKS_PER_FILE = 16


async def _cranfield_db(state: State, backend: str) -> Path:
    """The Cranfield index the cranfield section uses (made now if there is none)."""
    cfg = state.config
    base = cfg.out / "cranfield" if cfg.reuse_db else cfg.work / "cranfield"
    folder, db = base / "docs", base / "index.db"
    if not db.exists():
        write_docs(load_docs(cfg.cranfield)[: cfg.cranfield_docs], folder)
    async with Rifflux(db, embedding_backend=backend) as rf:
        await rf.reindex(folder)
    return db


async def agreement(db: Path, backend: str, queries: list[str]) -> dict[str, Any]:
    """The compact path's top 10 against an exact float32 ranking, on ``db``."""
    embedder = load_embedder(backend).embedder
    conn = await connect(db, busy_timeout_ms=5000, readonly=True)
    try:
        reader = Reader(conn, db)
        label, dim = embedder.label, embedder.dim
        index = VectorIndex(dim, capacity=await reader.vector_capacity())
        blocks: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = []

        def keep(ids: Any, vectors: Any, files: Any) -> None:
            index.upsert(ids, vectors, files)
            blocks.append((ids, vectors))

        await reader.stream_vectors(label, dim, keep)
        if not blocks:
            raise RuntimeError(f"{db} holds no vectors of {label}: nothing to compare")
        all_ids = np.concatenate([b[0] for b in blocks])
        all_vectors = np.concatenate([b[1] for b in blocks])
        shares: dict[str, list[float]] = {"no_feedback": [], "feedback": []}
        same: dict[str, list[bool]] = {"no_feedback": [], "feedback": []}
        read_ms: list[float] = []
        candidates: list[int] = []
        for query in queries:
            vector = embedder.embed_query(query)
            for name, feedback in (("no_feedback", 0), ("feedback", FEEDBACK)):
                exact = [i for i, _ in rank(vector, all_ids, all_vectors, DEPTH,
                                            feedback=feedback)][:10]
                found = index.to_read(vector, DEPTH, feedback=feedback)
                start = time.perf_counter()
                got_ids, got_vectors = await reader.exact_vectors(label, dim, found)
                read_ms.append((time.perf_counter() - start) * 1000)
                candidates.append(len(found))
                got = [i for i, _ in rank(vector, got_ids, got_vectors, DEPTH,
                                          feedback=feedback)][:10]
                shares[name].append(len(set(got) & set(exact)) / max(len(exact), 1))
                same[name].append(got == exact)
    finally:
        await conn.close()
    return {
        "db": str(db), "model": label, "vectors": len(index), "queries": len(queries),
        "matrix_mib": round(index.nbytes / 2**20, 2),
        "float32_mib": round(len(index) * dim * 4 / 2**20, 2),
        "top10_agreement": {k: round(statistics.fmean(v), 4) for k, v in shares.items()},
        "top10_worst": {k: round(min(v), 2) for k, v in shares.items()},
        "top10_identical_share": {k: round(statistics.fmean(v), 4) for k, v in same.items()},
        "candidates_mean": round(statistics.fmean(candidates), 1),
        "exact_read_ms_median": round(statistics.median(read_ms), 2),
    }


def build_synthetic(db: Path, texts: list[str], rows: int, seed: int) -> None:
    """An index of ``rows`` chunks of perturbed ``texts`` with their hash vectors and
    their compact rows, 16 chunks a file, written straight into the schema (no FTS rows:
    the lexical index is not what this measures)."""
    import anyio

    async def schema() -> None:
        await (await connect(db, busy_timeout_ms=5000)).close()

    db.parent.mkdir(parents=True, exist_ok=True)
    anyio.run(schema)
    rng = random.Random(seed)
    vocab = sorted({w for t in texts[:2000] for w in t.split() if w.isalpha()})
    embedder = HashEmbedder()
    con = sqlite3.connect(db)
    try:
        con.execute("DROP TRIGGER IF EXISTS chunks_ai")
        con.execute("INSERT INTO roots(id, path) VALUES (1, '/synthetic')")
        con.execute("INSERT INTO meta(key, value) VALUES ('embedding_model', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (embedder.label,))
        block = 4096
        for start in range(0, rows, block):
            n = min(block, rows - start)
            chunk_texts = [perturb(texts[(start + i) % len(texts)], rng, vocab) +
                           f" r{start + i}" for i in range(n)]
            vectors = embedder.embed_documents(chunk_texts)
            files = [(start + i) // CHUNKS_PER_FILE + 1 for i in range(n)]
            con.executemany(
                "INSERT OR IGNORE INTO files(id, root_id, rel_path, mtime_ns, size, sha256, "
                "indexed_at) VALUES (?, 1, ?, 0, 0, '', 0)",
                [(f, f"f{f:07d}.md") for f in sorted(set(files))])
            con.executemany(
                "INSERT INTO chunks(id, chunk_id, file_id, chunk_index, heading_path, content, "
                "content_hash) VALUES (?, ?, ?, ?, '', ?, ?)",
                [(start + i + 1, f"c{start + i}", files[i], (start + i) % CHUNKS_PER_FILE,
                  chunk_texts[i], f"h{start + i}") for i in range(n)])
            con.executemany(
                "INSERT INTO embeddings(id, content_hash, model, dim, vector) "
                "VALUES (?, ?, ?, ?, ?)",
                [(start + i + 1, f"h{start + i}", embedder.label, embedder.dim,
                  vectors[i].tobytes()) for i in range(n)])
            con.executemany(  # each vector's compact row beside it, as the writer stores it
                "INSERT INTO embedding_codes(id, model, codes) VALUES (?, ?, ?)",
                [(start + i + 1, embedder.label, code)
                 for i, code in enumerate(packed(vectors))])
            con.commit()
    finally:
        con.close()


def _synthetic(db: Path, texts: list[str], rows: int, seed: int) -> None:
    """``build_synthetic`` unless it is there (kept with ``--reuse-db``); a build that
    stopped half-way is never taken for one."""
    if db.exists() and _compact_rows(db) == rows:
        return
    db.unlink(missing_ok=True)  # (kept from before the compact rows were written: made again)
    part = db.with_suffix(".part")
    part.unlink(missing_ok=True)
    build_synthetic(part, texts, rows, seed)
    part.rename(db)


def _compact_rows(db: Path) -> int:
    """The last compact row's id in ``db`` (its vectors' count, as ``build_synthetic``
    writes them), 0 when it has none."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT coalesce(max(id), 0) FROM embedding_codes").fetchone()[0])
    except sqlite3.DatabaseError:  # (no such table, or no index at all)
        return 0
    finally:
        con.close()


async def vectors(state: State) -> dict[str, Any]:
    import anyio

    cfg = state.config
    backend = "hash" if cfg.quick else "onnx"
    cran = await _cranfield_db(state, backend)
    cran_queries = load_queries(cfg.cranfield)[: cfg.cranfield_queries]
    corpus_db = await state.ensure_corpus_db()
    corpus_queries = state.queries.take(40 if cfg.quick else 200)
    result: dict[str, Any] = {
        "backend": backend,
        "cranfield": await agreement(cran, backend, cran_queries),
        "corpus": await agreement(corpus_db, cfg.backend, corpus_queries),
    }
    rows = cfg.vectors_rows
    base = cfg.out / "vectors" if cfg.reuse_db else cfg.work / "vectors"
    db = base / f"synthetic-{rows}.db"
    start = time.perf_counter()
    texts = [c.content for c in state.chunks if len(c.content.split()) >= 8]
    await anyio.to_thread.run_sync(_synthetic, db, texts, rows, cfg.seed)
    built_s = time.perf_counter() - start
    qfile = cfg.work / "vectors-queries.json"
    qfile.write_text(json.dumps(state.queries.take(20 if cfg.quick else 60)))
    scale = run_worker("_vectors_child", ["--db", str(db), "--queries", str(qfile)],
                       what="vectors worker")
    result["scale"] = {"rows": rows, "build_s": round(built_s, 1), **scale}
    return result


def report(v: dict[str, Any]) -> list[str]:
    """The section's markdown."""
    lines = ["### Vectors: the int8 matrix against exact float32", ""]
    header = ["index", "vectors", "queries", "top-10 agreement (feedback / none)",
              "identical top 10", "worst query", "candidates", "exact read p50",
              "matrix / float32"]
    rows = []
    for name in ("cranfield", "corpus"):
        a = v[name]
        rows.append([
            f"{name} ({a['model']})", a["vectors"], a["queries"],
            f"{a['top10_agreement']['feedback']} / {a['top10_agreement']['no_feedback']}",
            f"{a['top10_identical_share']['feedback']} / "
            f"{a['top10_identical_share']['no_feedback']}",
            f"{a['top10_worst']['feedback']} / {a['top10_worst']['no_feedback']}",
            a["candidates_mean"], f"{a['exact_read_ms_median']} ms",
            f"{a['matrix_mib']} / {a['float32_mib']} MiB"])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows] + [""]
    s = v["scale"]
    ms = s["semantic_ms"]
    lines += [f"Synthetic index of {s['vectors']:,} hash vectors (384 dims): loaded in "
              f"{s['load_s']} s from their compact rows, as the query actor loads them "
              f"({s['load_float32_s']} s through their float32 vectors instead, converted "
              f"as they load, as for an index made before compact rows); matrix "
              f"{s['matrix_mib']} MiB (float32 would be "
              f"{s['float32_mib']} MiB); RSS {s['rss_before_load_mib']} MiB before loading, "
              f"{s['rss_after_load_mib']} MiB after, peak while loading "
              f"{s['peak_rss_while_loading_mib']} MiB.", "",
              "| semantic branch, query embedding excluded | p50 ms | p95 ms |",
              "|---|---|---|"]
    for key, what in (("total", "total (feedback 3, 20 deep)"), ("scan", "int8 scan"),
                      ("read", "float32 read of the candidates"), ("rank", "exact rank"),
                      ("order", "stable order of ties"),
                      ("cpu", "total, CPU time of the process (what load cannot inflate)"),
                      ("filtered_total", f"total, filtered to {s['filtered_files']} files")):
        lines.append(f"| {what} | {ms[key]['p50_ms']} | {ms[key]['p95_ms']} |")
    lines += ["", f"Load average when done: {s['load_average']} (on {os.cpu_count()} CPUs). "
              f"Top-10 agreement with an exact float32 ranking of all rows: "
              f"{s['top10_agreement_feedback']} (identical: "
              f"{s['top10_identical_share_feedback']}, worst {s['top10_worst_feedback']}).",
              ""]
    return lines
