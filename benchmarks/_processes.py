"""Section ``processes``: several Rifflux processes on one index, as several agents' MCP
servers are.

A copy of 100 corpus files (30 with ``--quick``) is indexed cold twice, each time
into a fresh database by processes that all watch the copy: once by one process,
once by three started together. Measured:

- CPU: user + system seconds of every process (and the parse workers they ran),
  from ``RUSAGE_CHILDREN`` around each run; three should cost about one (one
  embeds, the others follow);
- freshness, with the three running: a new section appended to a file, found by a
  lexical search in every process (from the write), and by a hybrid search with a
  ``semantic_rank`` in every process (from the moment its vector is in the
  database, read by polling it), 5 repetitions; per repetition, the slowest process.
"""

from __future__ import annotations

import json
import random
import resource
import sqlite3
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from ._common import expect_chunks, median, poll_until
from ._context import State
from ._corpus import REPO_ROOT, chunk_texts, copy_corpus, markdown_files
from ._freshness import _marker

_EDITS = 5
_STEP_TIMEOUT = 60.0


class _Child:
    def __init__(self, process: Process) -> None:
        assert process.stdout is not None
        self.process = process
        self._out = BufferedByteReceiveStream(process.stdout)

    async def line(self) -> Any:
        with anyio.fail_after(600):
            return json.loads(await self._out.receive_until(b"\n", 1 << 26))

    async def ask(self, op: str, **args: Any) -> Any:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps({"op": op, **args}) + "\n").encode())
        return await self.line()


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


async def _settled(children: list[_Child]) -> bool:
    for child in children:
        st = await child.ask("status")
        if not (st["idle"] and st["pending_embeddings"] == 0 and st["embeddings"] > 0
                and st["vectors_in_memory"] == st["embeddings"]):
            return False
    return True


def _vector_stored(db: Path, token: str) -> bool:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        return conn.execute(
            "SELECT 1 FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash "
            "WHERE c.content LIKE ? LIMIT 1", (f"%{token}%",)).fetchone() is not None


async def _edit(children: list[_Child], db: Path, path: Path,
                rng: random.Random) -> dict[str, float | None]:
    token, paragraph = _marker(rng)
    lexical: list[float] = []
    semantic_at: list[float] = []

    async def watch(child: _Child) -> None:
        async def lexically() -> bool:
            hits = await child.ask("search", query=token, mode="lexical", top_k=5)
            return any(token in h["content"] for h in hits)

        async def semantically() -> bool:
            hits = await child.ask("search", query=paragraph, mode="hybrid", top_k=10)
            return any(token in h["content"] and h["score_breakdown"].get("semantic_rank")
                       is not None for h in hits)

        lexical.append(await poll_until(lexically, within=_STEP_TIMEOUT, interval=0.005))
        await poll_until(semantically, within=_STEP_TIMEOUT, interval=0.005)
        semantic_at.append(time.perf_counter())

    async def vector() -> float:
        await poll_until(lambda: anyio.to_thread.run_sync(_vector_stored, db, token),
                         within=_STEP_TIMEOUT, interval=0.005)
        return time.perf_counter()

    stored: list[float] = []
    async with await anyio.open_file(path, "a", encoding="utf-8") as fh:
        await fh.write(f"\n\n## Benchmark marker {token}\n\n{paragraph}\n")
    async with anyio.create_task_group() as tg:
        for child in children:
            tg.start_soon(watch, child)

        async def record() -> None:
            stored.append(await vector())

        tg.start_soon(record)
    return {"lexical_s": round(max(lexical), 3),
            "semantic_after_vector_s": round(max(semantic_at) - stored[0], 3)}


async def _run(state: State, source: Path, count: int, name: str,
               edits: int = 0) -> dict[str, Any]:
    cfg = state.config
    folder = cfg.work / f"procs-{name}" / "notes"
    copy_corpus(source, folder)
    db = cfg.work / f"procs-{name}" / "index.db"
    before = _cpu()
    started = time.perf_counter()
    async with AsyncExitStack() as stack:
        children: list[_Child] = []
        for _ in range(count):
            process = await stack.enter_async_context(await anyio.open_process(
                [sys.executable, "-m", "benchmarks._procs_child", str(db), str(folder),
                 cfg.backend], cwd=REPO_ROOT, stderr=None))
            children.append(_Child(process))
        pids = [(await c.line())["ready"] for c in children]
        await poll_until(lambda: _settled(children), within=3600.0, interval=0.2)
        indexed_s = time.perf_counter() - started
        statuses = [await c.ask("status") for c in children]
        rng = random.Random(cfg.seed + 14)
        files = rng.sample(markdown_files(folder), min(edits, len(markdown_files(folder))))
        runs = [await _edit(children, db, path, rng) for path in files]
        for c in children:
            assert c.process.stdin is not None
            await c.process.stdin.send(b'{"op": "quit"}\n')
        for c in children:
            await c.process.wait()
    cpu = _cpu() - before
    return {
        "processes": count, "pids": pids, "cpu_s": round(cpu, 2),
        "indexed_s": round(indexed_s, 2), "chunks": statuses[0]["chunks"],
        "embeddings": statuses[0]["embeddings"],
        "backend": statuses[0]["embedding_backend"],
        "roles": [s["process"]["roles"] for s in statuses],
        "edits": runs,
    }


async def processes(state: State) -> dict[str, Any]:
    cfg = state.config
    source = cfg.work / "procs-source"
    n = 30 if cfg.quick else 100
    copy_corpus(cfg.corpus, source, max_files=n, seed=cfg.seed)
    aimed = len(chunk_texts(source))
    one = await _run(state, source, 1, "one")
    expect_chunks(int(one["chunks"]), aimed, "the one process's index")
    three = await _run(state, source, 3, "three", edits=_EDITS)
    expect_chunks(int(three["chunks"]), aimed, "the three processes' index")
    edits = three["edits"]
    return {
        "files": len(markdown_files(source)),
        "backend": three["backend"],
        "one": one,
        "three": three,
        "cpu_ratio": round(three["cpu_s"] / one["cpu_s"], 3) if one["cpu_s"] else None,
        "lexical_median_s": round(median([e["lexical_s"] for e in edits]), 3),
        "semantic_after_vector_median_s": round(
            median([e["semantic_after_vector_s"] for e in edits]), 3),
    }
