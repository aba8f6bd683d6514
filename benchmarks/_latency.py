"""Section 4a: query latency per mode, in process.

Each mode gets its own list of queries that no earlier search in the process
has seen; each query is timed once. Modes take turns (lexical, semantic,
hybrid, lexical, ...) so background noise spreads evenly over them. A few
throwaway queries per mode run first (model and matrix loaded, SQLite pages
cached), and their figures are not kept.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from rifflux import Rifflux

from ._common import expect_answers, summary_ms
from ._context import State

MODES = ("lexical", "semantic", "hybrid")
WARMUP = 5

SearchFn = Callable[[str, str], Awaitable[int]]  # (query, mode) -> number of results


async def time_modes(
    search: SearchFn, queries: dict[str, list[str]], warmup: dict[str, list[str]]
) -> dict[str, Any]:
    """Time every query once, modes interleaved; p50/p95 per mode."""
    for mode, qs in warmup.items():
        for q in qs:
            await search(q, mode)
    seconds: dict[str, list[float]] = {m: [] for m in queries}
    empty: dict[str, int] = {m: 0 for m in queries}
    n = min(len(qs) for qs in queries.values())
    for i in range(n):
        for mode, qs in queries.items():
            start = time.perf_counter()
            count = await search(qs[i], mode)
            seconds[mode].append(time.perf_counter() - start)
            empty[mode] += count == 0
    return {mode: {**summary_ms(seconds[mode]), "empty_results": empty[mode]} for mode in queries}


def plan_queries(state: State) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(timed, warm-up) queries per mode, all distinct from everything handed out before."""
    n = state.config.latency_queries
    timed = {m: state.queries.take(n) for m in MODES}
    warm = {m: state.queries.take(WARMUP) for m in MODES}
    return timed, warm


async def in_process(state: State) -> dict[str, Any]:
    cfg = state.config
    db = await state.ensure_corpus_db()
    timed, warm = plan_queries(state)
    state.timed_queries = timed
    async with Rifflux(db, embedding_backend=cfg.backend) as rf:

        async def search(query: str, mode: str) -> int:
            return len(await rf.search(query, top_k=10, mode=mode))

        modes = await time_modes(search, timed, warm)
        status = await rf.status()
    expect_answers(modes, f"the index of {cfg.corpus}")
    return {
        "surface": "in-process",
        "backend": status["embedding_backend"],
        "chunks": status["chunks"],
        "top_k": 10,
        "queries_per_mode": len(timed["lexical"]),
        "modes": modes,
        "sample_queries": {m: qs[:5] for m, qs in timed.items()},
    }
