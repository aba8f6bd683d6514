"""The postgres section's durability figures, on the server the section started (not on a
``--postgres-url`` server, which a benchmark must not restart: "not run" then).

- After a restart (``pg_ctl stop -m fast``, ``start``), after a crash (the postmaster
  killed with SIGKILL, then recovery) and after a restore (``pg_dump -Fc`` restored with
  ``pg_restore`` into a new database): how long a fresh process takes, from opening the
  index, to answer every lexical query; whether the top 10 are those before (they must
  be: never an empty list); and how long the BM25 index's rebuild takes
  (``store.postgres.bm25_index.rebuild``; the answers are the same meanwhile, slower).
- A streaming replica (``pg_basebackup -R``) searched by a read-only process: a note
  indexed through the primary, searchable there after how long (p50 of ten), and the
  cost of following it without ``LISTEN``: one lookup of the change log's last number
  per look, ``follow_seconds`` apart.
"""

from __future__ import annotations

import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux, Settings
from rifflux.location import DatabaseUrl
from rifflux.store.postgres.writer import hnsw_memory

#: Fresh notes indexed through the primary and looked for on the replica.
_FRESH = 10
#: Seconds a start after the crash may take (its recovery included).
_RECOVERY = 900


Top10 = list[list[tuple[str, int]]]


async def _top10(where: str | Path, queries: list[str]) -> tuple[Top10, float, float]:
    """Each lexical query's top 10 (path, chunk index) from a fresh read-only process's
    view, and the seconds from opening the index to the first answer and to the last."""
    started = time.perf_counter()
    location = where if isinstance(where, Path) else DatabaseUrl(where)
    settings = Settings(db_path=location, read_only=True, embedding_backend="hash",
                        model_warmup=False)
    answers: Top10 = []
    first = 0.0
    async with Rifflux(settings=settings) as rf:
        for q in queries:
            answers.append([(h["path"], h["chunk_index"])
                            for h in await rf.search(q, mode="lexical", top_k=10)])
            if len(answers) == 1:
                first = time.perf_counter() - started
    return answers, round(first, 3), round(time.perf_counter() - started, 3)


async def _rebuilt(url: str) -> float:
    from rifflux.store.postgres.bm25_index import rebuild

    started = time.perf_counter()
    await rebuild(DatabaseUrl(url), seconds=60.0)
    return round(time.perf_counter() - started, 2)


async def _after(what: str, url: str, queries: list[str], before: Top10,
                 fts5: Top10) -> dict[str, Any]:
    """The first answers after ``what``: beside the answers before it (ranked from the
    BM25 index's best, then by FTS5's bm25) and SQLite's FTS5 on the same files (whose
    exact ranking the answers without the BM25 index are)."""
    answers, first, last = await _top10(url, queries)
    rebuild_s = await _rebuilt(url)
    whole, _, _ = await _top10(url, queries)
    return {"what": what, "first_lexical_answer_s": first,
            "first_lexical_answers_s": last, "queries": len(queries),
            "same_top10": sum(a == b for a, b in zip(answers, before, strict=True)),
            "same_as_sqlite": sum(a == b for a, b in zip(answers, fts5, strict=True)),
            "before_as_sqlite": sum(a == b for a, b in zip(before, fts5, strict=True)),
            "rebuilt_as_before": sum(a == b for a, b in zip(whole, before, strict=True)),
            "empty": sum(not a for a in answers), "rebuild_s": rebuild_s}


def _crash(server: Any) -> None:
    from tests.postgres import PostgresUnavailable, postmaster_pid

    pid = postmaster_pid(server)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:  # (the recovery replays the WAL since the last checkpoint: at a million
            server.start(wait=_RECOVERY)  # chunks, up to max_wal_size of it)
            return
        except PostgresUnavailable:  # (its backends end on their own first)
            time.sleep(0.5)
    raise RuntimeError("the server did not start again after the crash")


def _restart(server: Any) -> None:
    server.stop("fast")
    server.start(wait=_RECOVERY)


def _restored(server: Any, name: str, into: str) -> tuple[str, float, float]:
    dump = server.folder / f"{name}.dump"
    args = ["-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres"]
    started = time.perf_counter()
    done = server._run(str(server.bin_dir / "pg_dump"), "-Fc", "-f", str(dump), *args, name)
    if done.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {done.stderr[-500:]}")
    dumped = time.perf_counter() - started
    url = server.create_database(into)
    started = time.perf_counter()
    # the HNSW index built with the memory its graph takes, as the README advises (with
    # the default 64 MB, a million vectors take the better part of an hour)
    memory = hnsw_memory(_vectors(server, name), 384)
    done = server._run(str(server.bin_dir / "pg_restore"), "-d", into, *args, str(dump),
                       env={"PGOPTIONS": f"-c maintenance_work_mem={memory}"})
    if done.returncode != 0:
        raise RuntimeError(f"pg_restore failed: {done.stderr[-500:]}")
    dump.unlink(missing_ok=True)
    return url, round(dumped, 2), round(time.perf_counter() - started, 2)


def _vectors(server: Any, name: str) -> int:
    """How many vectors the database ``name`` holds."""
    import asyncpg

    async def count() -> int:
        conn = await asyncpg.connect(server.database_url(name))
        try:
            return int(await conn.fetchval("SELECT count(*) FROM chunk_vectors"))
        finally:
            await conn.close()

    return anyio.run(count)


async def durability(server: Any, name: str, url: str, queries: list[str],
                     sqlite: Path) -> dict[str, Any]:
    """Restart, crash and restore of the database ``name`` (at ``url``) on ``server``;
    ``sqlite``: the same files' SQLite index."""
    before, _, _ = await _top10(url, queries)
    fts5, _, _ = await _top10(sqlite, queries)
    out: dict[str, Any] = {"before_empty": sum(not a for a in before)}
    await anyio.to_thread.run_sync(_restart, server)
    out["restart"] = await _after("restart", url, queries, before, fts5)
    await anyio.to_thread.run_sync(_crash, server)
    out["crash"] = await _after("crash", url, queries, before, fts5)
    restored_url, dump_s, restore_s = await anyio.to_thread.run_sync(
        _restored, server, name, f"{name}_restored")
    try:
        out["restore"] = {**await _after("restore", restored_url, queries, before, fts5),
                          "pg_dump_s": dump_s, "pg_restore_s": restore_s}
    finally:
        await anyio.to_thread.run_sync(server.drop_database, f"{name}_restored")
    return out


async def replica_freshness(server: Any, name: str, url: str, folder: Path) -> dict[str, Any]:
    """A note indexed through the primary, found by a read-only process on a streaming
    replica after how long; and what following the primary costs there."""
    from tests.postgres import streaming_replica

    await anyio.Path(folder).mkdir(parents=True, exist_ok=True)
    with streaming_replica(server) as replica:  # (pg_basebackup: the loop waits for it)
        on_replica = replica.database_url(name)
        reader_settings = Settings(db_path=DatabaseUrl(on_replica), read_only=True,
                                   embedding_backend="hash")
        async with Rifflux(settings=reader_settings) as reader, \
                Rifflux(url, embedding_backend="hash") as writer:
            waits = []
            for i in range(_FRESH):
                word = f"replicafresh{i}zq"
                await anyio.Path(folder / f"fresh-{i}.md").write_text(
                    f"# Fresh {i}\n\nThe word {word}.\n", encoding="utf-8")
                await writer.reindex(folder)  # (committed through the primary when it returns)
                committed = time.perf_counter()
                while not await reader.search(word, mode="lexical", top_k=1):
                    if time.perf_counter() - committed > 60:
                        raise RuntimeError(f"{word} was not found on the replica in 60 s")
                    await anyio.sleep(0.01)
                waits.append(time.perf_counter() - committed)
            status = await reader.status()
        look = await _lookup_ms(on_replica)
    follow = Settings().follow_seconds
    return {"notes": _FRESH, "found_p50_s": round(statistics.median(waits), 3),
            "found_max_s": round(max(waits), 3), "follow_seconds": follow,
            "looks_per_s": round(1 / follow, 1), "one_look_ms": look,
            "replica": status["replica"], "replication_lag_s": status["replication_lag_s"],
            "lexical_condition": status["lexical_condition"]}


async def _lookup_ms(url: str) -> float:
    """What one look costs on the replica: the change log's last number, p50 of 200."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        took = []
        for _ in range(200):
            started = time.perf_counter()
            await conn.fetchval("SELECT COALESCE(max(seq), 0) FROM changes")
            took.append(time.perf_counter() - started)
    finally:
        await conn.close()
    return round(statistics.median(took) * 1000, 3)


def report(p: dict[str, Any]) -> list[str]:
    """The durability and replica tables of the postgres section."""
    d, r = p.get("durability"), p.get("replica")
    if not d:
        return [f"Durability and replicas: not run ({p.get('durability_not_run')}).", ""]
    out = ["| after | first lexical answer / all (fresh process) | top 10 as before | as SQLite's "
           "FTS5 (before: as SQLite's) | empty | BM25 index rebuild | after it, as before |",
           "|---|---|---|---|---|---|---|"]
    for key in ("restart", "crash", "restore"):
        x = d[key]
        extra = (f" (pg_dump {x['pg_dump_s']} s, pg_restore {x['pg_restore_s']} s)"
                 if key == "restore" else "")
        out.append(f"| {key}{extra} | {x.get('first_lexical_answer_s')} s / "
                   f"{x['first_lexical_answers_s']} s for {x['queries']} queries | "
                   f"{x['same_top10']} of {x['queries']} | {x['same_as_sqlite']} "
                   f"({x['before_as_sqlite']}) | {x['empty']} | {x['rebuild_s']} s | "
                   f"{x['rebuilt_as_before']} |")
    if r:
        out += ["", f"Streaming replica: a note indexed through the primary found on the "
                    f"replica after {r['found_p50_s']} s p50 ({r['found_max_s']} s at most, "
                    f"{r['notes']} notes); following costs {r['looks_per_s']} looks/s per "
                    f"process ({r['one_look_ms']} ms each); replication lag reported "
                    f"{r['replication_lag_s']} s."]
    return out + [""]
