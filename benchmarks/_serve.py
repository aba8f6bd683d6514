"""Section serve: one ``rifflux serve`` for every agent (issue 23).

1. *Latency*: ``rifflux serve --db DB`` as a subprocess on the corpus index; the
   benchmark process opens the same index in process. Each step times one
   in-process search, then one ``GET /api/search`` (an ``httpx2`` client with a
   kept-alive connection, the JSON answer decoded), modes taking turns, distinct
   queries per surface and mode, each timed once, after 5 throwaway queries per
   mode and surface. Concurrency 8: eight clients, each with its own connection,
   searching hybrid at once; per-request p50/p95 and requests per second.
2. *During a reindex*: ``POST /api/reindex`` with ``force`` (every file read and
   chunked again), then 8 clients x 50 hybrid searches; errors are non-200 answers
   or failed requests. The job is polled meanwhile, and only the searches that
   started before it ended count as "during": the figure is reported only when
   all of them did.
3. *Warm RSS*: the server's VmRSS after the warm-up searches (3 per mode), and
   its VmRSS and VmHWM at the end.
4. *Five agents*: five ``rifflux mcp`` stdio servers (SDK stdio clients, each
   initialised and warmed with three searches) against one fresh ``rifflux serve``
   plus five ``rifflux mcp --connect URL`` bridges, warmed the same way; the sum
   of the processes' VmRSS, read from /proc.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2

from rifflux import Rifflux, discovery

from ._common import Incomplete, Skipped, summary_ms
from ._context import State
from ._latency import MODES, WARMUP

_CLIENTS = 8
_PER_CLIENT = 50
_AGENTS = 5
_START_TIMEOUT = 180.0


def _rss_kib(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for pid {pid}")


def _mib(kib: float) -> float:
    return round(kib / 1024, 1)


@asynccontextmanager
async def _server(db: Path, backend: str, work: Path, name: str) -> Any:
    """``rifflux serve`` on a free port until the block ends; yields (url, process)."""
    log = work / f"{name}.stderr.log"
    with log.open("wb") as out:
        proc = await anyio.open_process(
            [sys.executable, "-m", "rifflux", "serve", "--db", str(db), "--backend", backend,
             "--port", "0", "--no-access-log"], stdout=out, stderr=out)
    try:
        with anyio.fail_after(_START_TIMEOUT):
            while (found := discovery.find(db)) is None or found.pid != proc.pid:
                if proc.returncode is not None:
                    raise RuntimeError(f"rifflux serve exited: {log.read_text()[-2000:]}")
                await anyio.sleep(0.05)
        yield found.url, proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with anyio.move_on_after(30):
                await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def serve_section(state: State) -> dict[str, Any]:
    if sys.platform != "linux":
        raise Skipped("reads process memory from /proc: Linux only")
    cfg = state.config
    db = await state.ensure_corpus_db()
    out: dict[str, Any] = {"backend": cfg.backend}
    async with _server(db, cfg.backend, cfg.work, "serve") as (url, proc), \
            Rifflux(db, embedding_backend=cfg.backend) as rf, \
            httpx2.AsyncClient(base_url=url, timeout=120) as http:
        status = await rf.status()
        if not status["chunks"]:
            raise RuntimeError("the corpus index is empty: nothing to measure")
        out["chunks"] = status["chunks"]

        async def over_http(query: str, mode: str) -> int:
            response = await http.get("/api/search", params={"q": query, "mode": mode,
                                                             "top_k": 10})
            response.raise_for_status()
            return int(response.json()["count"])

        async def in_process(query: str, mode: str) -> int:
            return len(await rf.search(query, top_k=10, mode=mode))

        n = cfg.latency_queries
        for surface in (in_process, over_http):  # (model, matrix, pages and connection warm)
            for mode in MODES:
                for query in state.queries.take(WARMUP):
                    await surface(query, mode)
        out["warm_rss_mib"] = _mib(_rss_kib(proc.pid))
        out["c1"] = await _interleaved(
            {"in_process": in_process, "http": over_http},
            {s: {m: state.queries.take(n) for m in MODES} for s in ("in_process", "http")})
        out["c8"] = await _concurrent(url, state.queries.take(_CLIENTS * n // 2))
        out["during_reindex"] = await _during_reindex(url, http, cfg.corpus,
                                                      state.queries.take(_CLIENTS * _PER_CLIENT))
        out["end_rss_mib"] = _mib(_rss_kib(proc.pid))
        out["peak_rss_mib"] = _mib(_rss_kib(proc.pid, "VmHWM"))
    out["exit_code"] = proc.returncode
    out["agents"] = await _five_agents(db, cfg.backend, cfg.work, state.queries.take(60))
    return out


async def _interleaved(surfaces: dict[str, Any],
                       queries: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    seconds: dict[str, dict[str, list[float]]] = {s: {m: [] for m in MODES} for s in surfaces}
    empty = {s: 0 for s in surfaces}
    n = min(len(q) for per in queries.values() for q in per.values())
    for i in range(n):
        for mode in MODES:
            for name, search in surfaces.items():
                started = time.perf_counter()
                count = await search(queries[name][mode][i], mode)
                seconds[name][mode].append(time.perf_counter() - started)
                empty[name] += count == 0
    for name in surfaces:  # (an answer of nothing is fast: it measures no work)
        if empty[name] * 2 > n * len(MODES):
            raise Incomplete(f"{name} answered nothing for {empty[name]} of its "
                             f"{n * len(MODES)} searches: its latency measures no work")
    return {name: {"modes": {m: summary_ms(seconds[name][m]) for m in MODES},
                   "empty_results": empty[name], "queries_per_mode": n}
            for name in surfaces}


async def _clients(url: str, queries: list[str], clients: int) -> dict[str, Any]:
    """``clients`` connections searching hybrid at once, queries dealt out in turn."""
    seconds: list[tuple[float, float]] = []  # (started, took)
    errors: list[str] = []

    async def client(mine: list[str]) -> None:
        async with httpx2.AsyncClient(base_url=url, timeout=120) as http:
            for query in mine:
                started = time.perf_counter()
                try:
                    response = await http.get("/api/search", params={"q": query, "top_k": 10})
                    if response.status_code != 200:
                        errors.append(f"{response.status_code}: {response.text[:200]}")
                    else:
                        response.json()
                except Exception as exc:  # a failed request is what is counted here
                    errors.append(f"{type(exc).__name__}: {exc}")
                seconds.append((started, time.perf_counter() - started))

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for k in range(clients):
            tg.start_soon(client, queries[k::clients])
    wall = time.perf_counter() - started
    return {"clients": clients, "requests": len(seconds), "errors": len(errors),
            "error_samples": errors[:5], "wall_s": round(wall, 3),
            "requests_per_s": round(len(seconds) / wall, 1),
            **summary_ms([took for _, took in seconds]), "_starts": [s for s, _ in seconds]}


async def _concurrent(url: str, queries: list[str]) -> dict[str, Any]:
    result = await _clients(url, queries, _CLIENTS)
    result.pop("_starts")
    return result


async def _during_reindex(url: str, http: httpx2.AsyncClient, corpus: Path,
                          queries: list[str]) -> dict[str, Any]:
    folder = str(await anyio.Path(corpus).resolve())
    started = await http.post("/api/reindex", json={"path": folder, "force": True})
    started.raise_for_status()
    job_id = started.json()["job"]["id"]
    ended: list[float] = []
    job: dict[str, Any] = {}

    async def watch() -> None:
        while True:
            job.update((await http.get(f"/api/jobs/{job_id}")).json())
            if job["status"] in ("completed", "failed", "cancelled"):
                ended.append(time.perf_counter())
                return
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        result = await _clients(url, queries, _CLIENTS)
    starts = result.pop("_starts")
    during = sum(s < ended[0] for s in starts) if ended else len(starts)
    return {**result, "reindex_status": job.get("status"), "reindex_files":
            (job.get("result") or {}).get("indexed_files"), "searches_during": during,
            "all_during": during == len(starts)}


async def _five_agents(db: Path, backend: str, work: Path, queries: list[str]) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "RIFFLUX_DB_PATH": str(db), "RIFFLUX_EMBEDDING_BACKEND": backend}

    async def agents(args: list[str], errlog: Any) -> list[tuple[int, int]]:
        """Five warmed stdio sessions; (pid, VmRSS KiB) of their processes."""
        async with AsyncExitStack() as stack:
            for k in range(_AGENTS):
                params = StdioServerParameters(command=sys.executable,
                                               args=["-m", "rifflux", "mcp", *args], env=env)
                read, write = await stack.enter_async_context(stdio_client(params,
                                                                           errlog=errlog))
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio.fail_after(_START_TIMEOUT):
                    await session.initialize()
                    for mode in MODES:
                        result = await session.call_tool("search_rifflux", {
                            "query": queries[k * 3 + MODES.index(mode)], "mode": mode})
                        if result.is_error:
                            raise RuntimeError(f"search_rifflux failed: {result.content!r}")
            return [(pid, _rss_kib(pid)) for pid in _children("rifflux", "mcp")]

    with (work / "agents.stderr.log").open("w") as errlog:
        stdio = await agents(["--db", str(db)], errlog)
        async with _server(db, backend, work, "serve-agents") as (url, proc):
            bridged = await agents(["--connect", url], errlog)
            server_kib = _rss_kib(proc.pid)
    if len(stdio) != _AGENTS or len(bridged) != _AGENTS:
        raise RuntimeError(f"expected {_AGENTS} processes each, found {len(stdio)} stdio "
                           f"servers and {len(bridged)} bridges")
    five = sum(k for _, k in stdio)
    shared = server_kib + sum(k for _, k in bridged)
    return {"five_stdio_mib": _mib(five), "stdio_each_mib": [_mib(k) for _, k in stdio],
            "serve_mib": _mib(server_kib), "bridges_each_mib": [_mib(k) for _, k in bridged],
            "shared_mib": _mib(shared), "ratio": round(shared / five, 3)}


def _children(*words: str) -> list[int]:
    """Our child processes whose command line holds every word (the SDK's stdio client
    spawns them and does not say their pids)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == me and all(w.encode() in command for w in words):
            found.append(int(entry.name))
    return found
