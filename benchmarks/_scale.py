"""Section 7: a corpus grown to 100,000 chunks; hybrid latency and peak RSS.

The grown corpus is written to the temp folder (see ``_grow``), indexed in one
worker process and served from another (``_scale_child``), so the RSS figures
are rifflux's, not the harness's. Indexing uses the hash embedder by default:
embedding 100,000 chunks with the ONNX model takes the best part of an hour on
2 cores, and query latency and memory depend on the matrix size, not on how
its vectors were made. The one thing hash vectors leave out is the model's
query embedding (a few ms per semantic or hybrid query); ``--scale-backend
onnx`` measures it all for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._context import State
from ._corpus import REPO_ROOT
from ._grow import grow_corpus

_TIMEOUT = 6 * 3600


def _child(args: list[str]) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks._scale_child", *args],
        capture_output=True, text=True, env=env, timeout=_TIMEOUT, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"scale worker {args[0]} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def scale(state: State) -> dict[str, Any]:
    cfg = state.config
    grown = cfg.work / "grown"
    start = time.perf_counter()
    growth: dict[str, Any] = dict(
        grow_corpus(cfg.corpus, grown, state.chunks, cfg.scale_chunks, seed=cfg.seed + 6)
    )
    growth["seconds"] = round(time.perf_counter() - start, 1)
    db = cfg.work / "grown-db" / "index.db"
    indexed = _child(["index", "--db", str(db), "--corpus", str(grown),
                      "--backend", cfg.scale_backend])
    n = cfg.latency_queries
    queries = {"warmup": state.queries.take(5), "hybrid": state.queries.take(n),
               "lexical": state.queries.take(n), "semantic": state.queries.take(n)}
    qfile = cfg.work / "scale-queries.json"
    qfile.write_text(json.dumps(queries))
    served = _child(["serve", "--db", str(db), "--backend", cfg.scale_backend,
                     "--queries", str(qfile)])
    db_mib = sum(p.stat().st_size for p in Path(db).parent.iterdir()) / 2**20
    return {
        "target_chunks": cfg.scale_chunks,
        "growth": growth,
        "index": indexed,
        "serve": served,
        "db_size_mib": round(db_mib, 1),
        "hybrid_p50_ms": served["modes"]["hybrid"]["p50_ms"],
        # the stricter figure: the larger of the indexing and the serving process's peaks
        "peak_rss_mib": max(indexed["peak_rss_mib"], served["peak_rss_lifetime_mib"]),
    }
