"""Section 3: a single-file edit to searchable, through the watcher.

A temp copy of the corpus is watched (``Rifflux(..., watch_paths=[copy])``).
The database starts as a copy of the already indexed corpus database when there
is one, so the start-up index of the copy reuses the vectors (they are keyed by
content) instead of embedding the corpus again (the original root stays in it,
which does not matter here). Once the start-up index is complete, each
repetition appends a new section to a different file: a heading with a unique
token and a paragraph of words drawn from a fixed list foreign to technical
docs. The clock starts when the write is closed. Measured, by polling every 10 ms:

- lexical: a lexical search for the token returns the chunk;
- semantic: a hybrid search for the paragraph (without the token) returns the
  chunk with a ``semantic_rank``, i.e. its vector is in the matrix;
- delete: the file is removed and a lexical search for the token comes back empty.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux

from ._common import median, poll_until
from ._context import State
from ._corpus import copy_corpus, markdown_files

_STEP_TIMEOUT = 60.0
_VOCAB = (
    "orchard lantern pebble walrus meadow violin saffron glacier harbour tulip "
    "cinnamon falcon lagoon marble pumpkin sparrow thistle velvet willow canyon "
    "biscuit coral dolphin emerald fjord gondola hazel igloo jasmine kettle lemur "
    "mango nutmeg otter parsley quartz raven sesame tortoise umbrella vanilla "
    "wombat yarrow zebra apricot bramble chestnut daisy ember fennel garnet"
).split()


def _marker(rng: random.Random) -> tuple[str, str]:
    token = f"zqxbench{rng.getrandbits(48):012x}"
    sentences = [
        " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(8, 11))).capitalize() + "."
        for _ in range(3)
    ]
    return token, " ".join(sentences)


async def _idle(rf: Rifflux) -> bool:
    """The start-up index is written and every chunk has its vector.

    Judged from the counts and job phases the status reports.
    """
    status = await rf.status()
    jobs = status["jobs"]
    busy = any(j["status"] in ("queued", "retry_wait")
               or (j["status"] == "running" and j["phase"] == "indexing") for j in jobs)
    indexed = any(j["source"] == "startup" and j["phase"] in ("embedding", "completed")
                  for j in jobs)
    return (
        indexed and not busy and status["pending_embeddings"] == 0
        and bool(status["embedding_model_ready"]) and bool(status["watcher"]["running"])
    )


async def _time(rf: Rifflux, check_query: str, mode: str, predicate: Any) -> float | None:
    async def found() -> bool:
        return bool(predicate(await rf.search(check_query, top_k=10, mode=mode)))

    try:
        return await poll_until(found, within=_STEP_TIMEOUT, interval=0.01)
    except TimeoutError:
        return None


async def _one_edit(rf: Rifflux, path: Path, rng: random.Random) -> dict[str, Any]:
    token, paragraph = _marker(rng)

    def has_token(results: list[dict[str, Any]]) -> bool:
        return any(token in r["content"] for r in results)

    def has_vector(results: list[dict[str, Any]]) -> bool:
        return any(
            token in r["content"] and r["score_breakdown"].get("semantic_rank") is not None
            for r in results
        )

    async with await anyio.open_file(path, "a", encoding="utf-8") as fh:
        await fh.write(f"\n\n## Benchmark marker {token}\n\n{paragraph}\n")
    t0 = time.perf_counter()
    lexical = await _time(rf, token, "lexical", has_token)
    semantic = await _time(rf, paragraph, "hybrid", has_vector)
    sem_total = None if semantic is None else time.perf_counter() - t0  # since the write
    await anyio.Path(path).unlink()
    t1 = time.perf_counter()
    gone = await _time(rf, token, "lexical", lambda rs: not has_token(rs))
    return {
        "file": path.name,
        "lexical_s": None if lexical is None else round(lexical, 3),
        "semantic_s": None if sem_total is None else round(sem_total, 3),
        "delete_gone_s": None if gone is None else round(gone, 3),
        "delete_started_after_s": round(t1 - t0, 3),
    }


def _seed_db(source: Path | None, dest: Path) -> bool:
    """Copy a closed database (and any WAL left beside it) to start from its vectors."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source is None or not source.exists():
        return False
    for suffix in ("", "-wal"):
        src = source.with_name(source.name + suffix)
        if src.exists():
            shutil.copy2(src, dest.with_name(dest.name + suffix))
    return True


def _median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return round(median(values), 3) if values else None


async def watch_edit(state: State) -> dict[str, Any]:
    cfg = state.config
    copy = cfg.work / "watched"
    copy_corpus(cfg.corpus, copy)
    rng = random.Random(cfg.seed + 3)
    files = rng.sample(markdown_files(copy), min(cfg.edit_repeats, len(markdown_files(copy))))
    db = cfg.work / "watched-db" / "index.db"
    seeded = _seed_db(state.corpus_db, db)
    async with Rifflux(db, embedding_backend=cfg.backend, watch_paths=[copy]) as rf:
        start = time.perf_counter()
        await poll_until(lambda: _idle(rf), within=3600.0, interval=0.1)
        startup_s = time.perf_counter() - start
        runs = [await _one_edit(rf, path, rng) for path in files]
        backend = (await rf.status())["embedding_backend"]
    timeouts = sum(1 for r in runs for k in ("lexical_s", "semantic_s", "delete_gone_s")
                   if r[k] is None)
    return {
        "backend": backend,
        "repetitions": len(runs),
        "startup_index_s": round(startup_s, 3),
        "startup_reused_vectors": seeded,
        "lexical_median_s": _median_of(runs, "lexical_s"),
        "semantic_median_s": _median_of(runs, "semantic_s"),
        "delete_median_s": _median_of(runs, "delete_gone_s"),
        "timeouts": timeouts,
        "runs": runs,
    }
