"""Section 7: a curve of corpus sizes (``--scale-sizes``, 100,000 chunks by default):
ingest, open-to-ready, latency per mode and RSS at each.

Each size's corpus is grown from the real corpus (see ``_grow``; kept and reused in
``--scale-corpora``), indexed in one worker process and served from another
(``_scale_child``), so the RSS figures are rifflux's, not the harness's. A point whose
corpus is missing, whose index job did not complete, or whose index holds fewer than
95% of the chunks it aimed for fails (``Incomplete``), and so does the section: no
target is checked over work not done. Indexing uses the hash embedder by default:
embedding 100,000 chunks with the ONNX model takes the best part of an hour on 2
cores, and query latency and memory depend on the matrix size, not on how its vectors
were made. What hash vectors leave out is the model's query embedding (a few ms per
semantic or hybrid query); ``--scale-backend onnx`` measures it all for real.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ._common import Incomplete, expect_answers, expect_chunks
from ._context import Config, State
from ._grow import grown_corpus
from ._workers import run_worker

_TIMEOUT = 6 * 3600


def _child(args: list[str]) -> dict[str, Any]:
    return run_worker("_scale_child", args, what=f"scale worker {args[0]}", timeout=_TIMEOUT)


def _files_in(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def scale_db(cfg: Config, size: int, backend: str) -> Path:
    """Where the corpus grown to ``size`` chunks is indexed with ``backend`` vectors (the
    postgres section reuses the index this section made), or was by an earlier run
    (``--scale-index``)."""
    return (cfg.scale_index or cfg.work) / f"scale-{size}-{backend}" / "index.db"


def kept_index(db: Path, backend: str) -> dict[str, Any]:
    """What an index an earlier run kept holds (``--scale-index``), as the index step
    reports it, without its timings: none was measured in this run."""
    import sqlite3

    from rifflux.store.sqlite.schema import SCHEMA_VERSION

    if not db.is_file():
        raise Incomplete(f"--scale-index: no index at {db} (keep one with --keep-work)")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        def one(sql: str) -> Any:
            return conn.execute(sql).fetchone()[0]

        version = int(one("SELECT value FROM meta WHERE key = 'schema_version'"))
        found = {"files": one("SELECT COUNT(*) FROM files"),
                 "chunks": one("SELECT COUNT(*) FROM chunks"),
                 "embeddings": one("SELECT COUNT(*) FROM embeddings")}
    finally:
        conn.close()
    if version != SCHEMA_VERSION:
        raise Incomplete(f"--scale-index: {db} was made by another version of Rifflux (its "
                         f"schema {version}, this one's {SCHEMA_VERSION}): index anew")
    return {"reused_from": str(db), "status": "completed", "error": None, "job_errors": [],
            "backend": backend, **found, "read_first_s": _read_through(db)}


def _read_through(db: Path) -> float:
    """Read ``db`` once, end to end (seconds): a run that indexes serves from an index
    its writes left in the page cache; so is a kept one served, not from the disk (a
    semantic search's exact reads, 50 to 150 random rows of a 1.5 GB table, took two
    or three times as long from it)."""
    import time

    started = time.perf_counter()
    with db.open("rb", buffering=0) as f:
        while f.read(1 << 24):
            pass
    return round(time.perf_counter() - started, 2)


def indexed_point(state: State, size: int, backend: str) -> dict[str, Any]:
    """``size`` chunks grown and indexed into ``scale_db`` with ``backend`` vectors: what
    that did. Raises ``Incomplete`` (with it) when its work was not done."""
    cfg = state.config
    base = cfg.scale_corpora or cfg.work
    corpus, growth = grown_corpus(cfg.corpus, base, state.chunks, size, seed=cfg.seed + 6)
    point: dict[str, Any] = {"target_chunks": size, "corpus": str(corpus), "growth": growth}
    on_disk = _files_in(corpus) if corpus.is_dir() else 0
    if on_disk < growth["files"]:
        raise Incomplete(f"the grown corpus {corpus} is missing files ({on_disk:,} of "
                         f"{growth['files']:,}): delete its .json manifest to grow it again",
                         point)
    db = scale_db(cfg, size, backend)
    if cfg.scale_index is not None:  # (served as it is: nothing indexed, nothing timed)
        point["index"] = indexed = kept_index(db, backend)
    else:
        point["index"] = indexed = _child(["index", "--db", str(db), "--corpus",
                                           str(corpus), "--backend", backend])
    if indexed["status"] != "completed":
        raise Incomplete(f"the index job ended {indexed['status']}: {indexed['error']}", point)
    why = f"; the job reported: {'; '.join(indexed['job_errors'])}" if indexed["job_errors"] else ""
    try:
        expect_chunks(int(indexed["chunks"]), int(growth["estimated_chunks"]),
                      f"the index of {corpus.name}")
    except Incomplete as exc:
        raise Incomplete(f"{exc}{why}", point) from None
    return point


def scale_point(state: State, size: int) -> dict[str, Any]:
    """One point of the curve: ``size`` chunks grown, indexed, served. Raises
    ``Incomplete`` (with what it measured) when its work was not done."""
    cfg = state.config
    point = indexed_point(state, size, cfg.scale_backend)
    db = scale_db(cfg, size, cfg.scale_backend)
    n = cfg.latency_queries
    queries = {"warmup": state.queries.take(5), "hybrid": state.queries.take(n),
               "lexical": state.queries.take(n), "semantic": state.queries.take(n)}
    qfile = cfg.work / f"scale-{size}-queries.json"
    qfile.write_text(json.dumps(queries))
    before = _child(["floor", "--db", str(db)])
    point["serve"] = served = _child(["serve", "--db", str(db), "--backend",
                                      cfg.scale_backend, "--queries", str(qfile)])
    point["floor"] = floors = _floors(before, _child(["floor", "--db", str(db)]))
    point["ratios"] = ratios(served, floors)
    point["db_size_mib"] = round(sum(p.stat().st_size for p in db.parent.iterdir()) / 2**20, 1)
    if served["vectors_in_memory"] < served["chunks"]:
        raise Incomplete(f"the serving process loaded {served['vectors_in_memory']:,} vectors "
                         f"for {served['chunks']:,} chunks", point)
    try:
        expect_answers(served["modes"], f"the {size:,}-chunk index")
    except Incomplete as exc:
        raise Incomplete(str(exc), point) from None
    return point


def _floors(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The floors measured before and after serving, as one: the scan's median over both
    runs' timings, the read's faster one (the machine is shared: a floor is what the work
    can take, at best of what was seen)."""
    scans = sorted([*before["scan_ms"], *after["scan_ms"]])
    parts = sorted([*before.get("scan_parts_ms", []), *after.get("scan_parts_ms", [])])
    return {**before, "scan_ms": scans, "scan_p50_ms": round(_median(scans), 3),
            "scan_p50_before_after_ms": [before["scan_p50_ms"], after["scan_p50_ms"]],
            "scan_parts_ms": parts,
            "scan_parts_p50_ms": round(_median(parts), 3) if parts else None,
            "read_s": min(before["read_s"], after["read_s"]),
            "read_before_after_s": [before["read_s"], after["read_s"]]}


def _median(values: list[float]) -> float:
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def ratios(served: dict[str, Any], floors: dict[str, Any]) -> dict[str, float]:
    """Each timed figure over its floor measured in the same run (issue 39's targets):
    searches over numkong's scan of a million rows on one core (and semantic over the
    scan split across the cores too), open-to-ready over reading the compact rows."""
    scan, read = float(floors["scan_p50_ms"]), float(floors["read_s"])
    modes = served["modes"]
    semantic = served["semantic_without_query_embedding"]["p50_ms"]
    parts = floors.get("scan_parts_p50_ms")
    return {
        "semantic_p50": round(semantic / scan, 2),
        # (over the same scan split across the cores, as a search scans: the rest's cost)
        **({"semantic_p50_over_parts": round(semantic / float(parts), 2)} if parts else {}),
        "hybrid_p50": round(modes["hybrid"]["p50_ms"] / scan, 2),
        "hybrid_p95": round(modes["hybrid"]["p95_ms"] / scan, 2),
        "lexical_p50": round(modes["lexical"]["p50_ms"] / scan, 2),
        "semantic_ready": round(served["semantic_ready_s"] / read, 2),
    }


def scale(state: State) -> dict[str, Any]:
    """Every size of the curve, smallest first; a point that fails does not stop the
    others, but fails the section (with every point's figures kept for the report)."""
    sizes = sorted(set(state.config.scale_sizes))
    result: dict[str, Any] = {"sizes": sizes, "backend": state.config.scale_backend,
                              "points": {}}
    failed: list[str] = []
    for size in sizes:
        print(f"[bench] scale: {size:,} chunks ...", file=sys.stderr, flush=True)
        try:
            result["points"][str(size)] = scale_point(state, size)
        except Incomplete as exc:
            result["points"][str(size)] = {**(exc.partial or {"target_chunks": size}),
                                           "error": str(exc)}
            failed.append(f"{size:,} chunks: {exc}")
            print(f"[bench] scale: {size:,} chunks FAILED: {exc}", file=sys.stderr, flush=True)
    if failed:
        raise Incomplete("; ".join(failed), result)
    return result
