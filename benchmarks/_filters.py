"""Section 6: filtered hybrid search next to unfiltered, in process, in one run.

The hybrid query list of the latency section (the same queries when it ran
first; otherwise the same seeded lists, from the same helper), each query
searched three ways: unfiltered, filtered to one folder (``paths``), and
filtered by one tag (``tags``). The three kinds take turns in a rotating order
(unfiltered, folder, tag; then folder, tag, unfiltered; ...) so that machine
noise, and whichever kind comes first for a query text, hit all three alike.
Each call is timed once. A few throwaway queries of each kind run first: the
first search with a given filter builds the allowed-files cache.

The tag is the most used one that fewer than half of the files carry (from
``list_tags()``): narrow enough to filter, common enough to return results.
Every filtered result is checked against its filter (path under the folder,
tag among the result's tags), outside the timed call.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from rifflux import Rifflux

from ._common import Skipped, expect_answers, summary_ms
from ._context import State
from ._latency import WARMUP, plan_queries

FOLDER = "instructions"
KINDS = ("unfiltered", "folder", "tag")
TOP_K = 10


def pick_tag(tags: list[dict[str, Any]], files: int) -> dict[str, Any] | None:
    """The most used tag carried by fewer than half of the ``files`` (None if none is)."""
    ordered = sorted(tags, key=lambda t: (-t["files"], t["tag"]))
    return next((t for t in ordered if t["files"] * 2 < files), None)


def _matches(kind: str, result: Any, tag: str) -> bool:
    if kind == "folder":
        return str(result["path"]).startswith(FOLDER + "/")
    if kind == "tag":
        return tag in result["tags"]
    return True


async def filtered(state: State) -> dict[str, Any]:
    cfg = state.config
    db = await state.ensure_corpus_db()
    same_as_latency = state.timed_queries is not None
    if state.timed_queries is not None:
        queries = state.timed_queries["hybrid"]
        warm = state.queries.take(WARMUP)
    else:
        timed, warm_by_mode = plan_queries(state)
        queries, warm = timed["hybrid"], warm_by_mode["hybrid"]
    in_folder = [c.path for c in state.chunks if c.path.startswith(FOLDER + "/")]
    folder_files, folder_chunks = set(in_folder), len(in_folder)
    async with Rifflux(db, embedding_backend=cfg.backend) as rf:
        files = int((await rf.status())["files"])
        chosen = pick_tag([dict(t) for t in await rf.list_tags()], files)
        if chosen is None:
            raise Skipped(f"no tag is carried by fewer than half of the {files} files")
        tag = str(chosen["tag"])
        print(f"[bench] filters: tag {tag!r} carried by {chosen['files']} of {files} files; "
              f"folder {FOLDER}/ holds {len(folder_files)} files, {folder_chunks} chunks",
              file=sys.stderr, flush=True)
        kwargs: dict[str, dict[str, Any]] = {
            "unfiltered": {},
            "folder": {"paths": [f"{FOLDER}/**"]},
            "tag": {"tags": [tag]},
        }
        for q in warm:
            for kind in KINDS:
                await rf.search(q, top_k=TOP_K, mode="hybrid", **kwargs[kind])
        seconds: dict[str, list[float]] = {k: [] for k in KINDS}
        returned: dict[str, int] = dict.fromkeys(KINDS, 0)
        empty: dict[str, int] = dict.fromkeys(KINDS, 0)
        mismatched: dict[str, int] = dict.fromkeys(KINDS, 0)
        for i, q in enumerate(queries):
            for j in range(len(KINDS)):
                kind = KINDS[(i + j) % len(KINDS)]
                start = time.perf_counter()
                results = await rf.search(q, top_k=TOP_K, mode="hybrid", **kwargs[kind])
                seconds[kind].append(time.perf_counter() - start)
                returned[kind] += len(results)
                empty[kind] += not results
                mismatched[kind] += sum(not _matches(kind, r, tag) for r in results)
        status = await rf.status()
    n = len(queries)
    kinds = {
        k: {**summary_ms(seconds[k]), "empty_results": empty[k],
            "mean_results": round(returned[k] / n, 2) if n else 0.0,
            "results_not_matching": mismatched[k]}
        for k in KINDS
    }
    expect_answers({k: {"n": n, "empty_results": empty[k]} for k in KINDS},
                   f"the index of {cfg.corpus} (hybrid, filtered or not)")
    base = kinds["unfiltered"]
    return {
        "surface": "in-process",
        "backend": status["embedding_backend"],
        "chunks": status["chunks"],
        "files": files,
        "top_k": TOP_K,
        "mode": "hybrid",
        "queries": n,
        "same_queries_as_latency": same_as_latency,
        "folder": {"paths": kwargs["folder"]["paths"], "files": len(folder_files),
                   "chunks": folder_chunks},
        "tag": {"tag": tag, "files": chosen["files"]},
        "kinds": kinds,
        "ratio_p50": {k: round(kinds[k]["p50_ms"] / base["p50_ms"], 3) for k in KINDS[1:]},
        "ratio_p95": {k: round(kinds[k]["p95_ms"] / base["p95_ms"], 3) for k in KINDS[1:]},
        "all_filtered_results_match": all(mismatched[k] == 0 for k in KINDS[1:]),
        "sample_queries": queries[:5],
    }
