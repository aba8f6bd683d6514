"""Sections 1 and 2: a cold full index, the raw model's own rate, and no-op reindexes.

Cold index: a fresh database in a temp folder, ``reindex(background=True)``,
then the job is polled every 5 ms. "Lexically searchable" is when the job's
phase leaves ``indexing`` (every file's transaction has committed; a lexical
search is run then to confirm it); "fully embedded" is when the job completes,
which it does only once every chunk it wrote has its vector.

Reference: the same embedder class, loaded fresh after rifflux has closed, on a
seeded random sample of the same chunk texts sorted by length, in batches of
32 (what the pipeline does within each window). Pipeline rate = texts embedded
/ (fully embedded - lexically searchable), since embedding is paused while a
bulk index is parsing; the end-to-end rate (texts / time to fully embedded) is
reported beside it.
"""

from __future__ import annotations

import random
import time
from typing import Any

from rifflux import Rifflux
from rifflux.core.embedders import HashEmbedder, OnnxEmbedder, locate_model

from ._common import Incomplete, expect_chunks, job_finished, job_left_indexing, median
from ._context import State

_BATCH = 32
_TIMEOUT = 3600.0


async def cold_index(state: State) -> dict[str, Any]:
    cfg = state.config
    db = cfg.work / "cold" / "index.db"
    probe = state.queries.take(1)[0]  # parse the corpus for queries before the clock starts
    opened = time.perf_counter()
    async with Rifflux(db, embedding_backend=cfg.backend) as rf:
        open_s = time.perf_counter() - opened
        t0 = time.perf_counter()
        job_id = (await rf.reindex(cfg.corpus, background=True))["job"]["id"]
        await job_left_indexing(rf, job_id, within=_TIMEOUT)
        t_lex = time.perf_counter() - t0
        lexical_hits = len(await rf.search(probe, mode="lexical"))
        snap = await job_finished(rf, job_id, within=_TIMEOUT, interval=0.01)
        t_full = time.perf_counter() - t0
        if snap["status"] != "completed":
            raise RuntimeError(f"cold index job ended {snap['status']}: {snap.get('error')}")
        status = await rf.status()
    chunks, embedded = int(status["chunks"]), int(status["embeddings"])
    expect_chunks(chunks, len(state.chunks), f"the cold index of {cfg.corpus}")
    state.corpus_db = db
    embed_s = max(t_full - t_lex, 1e-9)
    result: dict[str, Any] = {
        "backend": status["embedding_backend"],
        "model": status["embedding_model"],
        "files": status["files"],
        "chunks": chunks,
        "embedded_texts": embedded,
        "open_s": round(open_s, 3),
        "lexically_searchable_s": round(t_lex, 3),
        "lexical_probe_hits": lexical_hits,
        "fully_embedded_s": round(t_full, 3),
        "index_chunks_per_s": round(chunks / t_lex, 1),
        "embed_texts_per_s": round(embedded / embed_s, 2),
        "end_to_end_chunks_per_s": round(chunks / t_full, 2),
    }
    ref = reference_rate(state, str(status["embedding_backend"]))
    result["reference"] = ref
    result["pipeline_vs_raw"] = round(result["embed_texts_per_s"] / ref["texts_per_s"], 3)
    result["end_to_end_vs_raw"] = round(
        (embedded / t_full) / ref["texts_per_s"], 3
    )
    return result


async def noop_reindex(state: State) -> dict[str, Any]:
    """Reindex the unchanged corpus several times (after one untimed warm-up run),
    then once with ``force=True`` (every file re-read and re-chunked; vectors are
    reused by content hash)."""
    cfg = state.config
    db = await state.ensure_corpus_db()
    async with Rifflux(db, embedding_backend=cfg.backend) as rf:
        await rf.reindex(cfg.corpus)  # warm-up, untimed: caches are filled
        times: list[float] = []
        indexed = 0
        for _ in range(cfg.noop_repeats):
            start = time.perf_counter()
            out = await rf.reindex(cfg.corpus)
            times.append(time.perf_counter() - start)
            indexed += int(out.get("indexed_files", 0))
        start = time.perf_counter()
        forced = await rf.reindex(cfg.corpus, force=True)
        forced_s = time.perf_counter() - start
    if indexed:  # a run that re-indexed files is no no-op: its time measures other work
        raise Incomplete(f"the no-op reindexes of the unchanged {cfg.corpus} re-indexed "
                         f"{indexed} files")
    return {
        "median_s": round(median(times), 4),
        "min_s": round(min(times), 4),
        "runs_s": [round(t, 4) for t in times],
        "files_reindexed": indexed,  # should be 0: nothing changed
        "forced_reindex_s": round(forced_s, 3),
        "forced_indexed_files": forced.get("indexed_files"),
    }


def reference_rate(state: State, backend: str) -> dict[str, Any]:
    """The raw embedder's own rate on a random sample of the same chunk texts."""
    cfg = state.config
    texts = [c.embedded for c in state.chunks]
    rng = random.Random(cfg.seed)
    sample = rng.sample(texts, min(cfg.reference_sample, len(texts)))
    warm = rng.sample(texts, min(_BATCH, len(texts)))
    embedder: OnnxEmbedder | HashEmbedder
    embedder = OnnxEmbedder(locate_model()) if backend == "onnx" else HashEmbedder()
    embedder.embed_documents(sorted(warm, key=len))  # first batch allocates; untimed
    sample.sort(key=len)
    start = time.perf_counter()
    for i in range(0, len(sample), _BATCH):
        embedder.embed_documents(sample[i : i + _BATCH])
    seconds = time.perf_counter() - start
    return {
        "backend": backend,
        "sample": len(sample),
        "batch": _BATCH,
        "seconds": round(seconds, 3),
        "texts_per_s": round(len(sample) / seconds, 2),
    }
