"""Markdown not slower: the corpus indexed and searched by this checkout and by the
checkout before the extractors, in the same run.

Each run is a fresh process (``_formats_md_child``) with ``PYTHONPATH`` set to one
checkout's folder (the base's ``rifflux/`` written out of git by
``_formats_inputs.base_checkout``): a cold index of the corpus with hash vectors (the
seconds until lexically searchable) and the same lexical queries (the corpus's query
pool, each searched once after 5 throwaway ones; p50). ``markdown_rounds`` runs of each,
taking turns (base first, then this checkout first, ...), so that a slow minute of the
machine falls on both; the median of the runs counts. Beside the wall times, what the
machine's load inflates far less: each run's CPU seconds (its process and its parse
workers) and the p50 of each query's CPU time. Each run must index the whole
corpus (95% of its chunks by this checkout's chunker) or the part is not measured.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._common import ENOUGH, Incomplete, percentile
from ._context import State
from ._corpus import REPO_ROOT

CHILD = Path(__file__).with_name("_formats_md_child.py")
_WARMUP = 5


def _run(checkout: Path, db: Path, corpus: Path, queries: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # cwd: the parse workers run ``python -m``, which puts the working folder first on
    # their path; elsewhere (the repository) they would import another checkout's rifflux
    proc = subprocess.run([sys.executable, str(CHILD), str(db), str(corpus), str(queries)],
                          capture_output=True, text=True, timeout=3600, check=False, env=env,
                          cwd=checkout)
    if proc.returncode != 0:
        return {"error": f"the run on {checkout} failed: {proc.stderr.strip()[-500:]}"}
    if "parse worker failed" in proc.stderr:  # (parsed in the process instead: not as built)
        return {"error": f"the run on {checkout}: {proc.stderr.strip().splitlines()[0]}"}
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # (its parse workers' too)
    found: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    found["cpu_s"] = round(after.ru_utime + after.ru_stime - before.ru_utime
                           - before.ru_stime, 2)
    found["p50_ms"] = round(percentile([s * 1000 for s in found.pop("lexical_s")], 50), 4)
    found["cpu_p50_ms"] = round(percentile([s * 1000 for s in found.pop("lexical_cpu_s")], 50),
                                4)
    found["lexically_searchable_s"] = round(found["lexically_searchable_s"], 3)
    return found


def markdown_part(state: State) -> dict[str, Any]:
    """This checkout's figures over the base's; ``error`` when a run's work was not done."""
    from ._formats_inputs import Missing, base_checkout

    cfg = state.config
    try:
        base, label = base_checkout(cfg)
        aimed = len(state.chunks)
    except (Missing, Incomplete) as exc:  # (Incomplete: the corpus is missing)
        return {"error": f"not measured: {exc}"}
    work = cfg.work / "formats"
    work.mkdir(parents=True, exist_ok=True)
    queries = work / "markdown-queries.json"
    queries.write_text(json.dumps(state.queries.take(cfg.formats_queries + _WARMUP)))
    checkouts = {"base": base, "current": REPO_ROOT}
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "current": []}
    for r in range(cfg.markdown_rounds):
        for name in ("base", "current") if r % 2 == 0 else ("current", "base"):
            runs[name].append(_run(checkouts[name], work / f"md-{name}-{r}.db", cfg.corpus,
                                   queries))
    out: dict[str, Any] = {"base_commit": label, "corpus": str(cfg.corpus), "aimed_chunks": aimed,
                           "queries": cfg.formats_queries, "rounds": cfg.markdown_rounds,
                           "runs": runs}
    broken = [run["error"] for rs in runs.values() for run in rs if "error" in run]
    short = [f"{name}: {run['chunks']} chunks" for name, rs in runs.items() for run in rs
             if "error" not in run and run["chunks"] < ENOUGH * aimed]
    if broken or short:
        out["error"] = "not measured: " + "; ".join([*broken, *short])[:600]
        return out
    for name, rs in runs.items():
        out[name] = {"lexically_searchable_s": statistics.median(
                         r["lexically_searchable_s"] for r in rs),
                     "p50_ms": statistics.median(r["p50_ms"] for r in rs),
                     "cpu_s": statistics.median(r["cpu_s"] for r in rs),
                     "cpu_p50_ms": statistics.median(r["cpu_p50_ms"] for r in rs),
                     "chunks": rs[0]["chunks"], "files": rs[0]["files"],
                     "empty": sum(r["empty"] for r in rs), "rifflux": rs[0]["rifflux"]}
    out["index_ratio"] = round(out["current"]["lexically_searchable_s"]
                               / out["base"]["lexically_searchable_s"], 3)
    out["lexical_p50_ratio"] = round(out["current"]["p50_ms"] / out["base"]["p50_ms"], 3)
    out["cpu_ratio"] = round(out["current"]["cpu_s"] / out["base"]["cpu_s"], 3)
    out["lexical_cpu_p50_ratio"] = round(out["current"]["cpu_p50_ms"]
                                         / out["base"]["cpu_p50_ms"], 3)
    return out
