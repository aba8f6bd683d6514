"""One markdown run of the formats section, as a script on the ``rifflux`` of
``PYTHONPATH`` (this checkout's or the base's): ``python PATH/_formats_md_child.py DB
CORPUS QUERIES_JSON``.

A fresh index of CORPUS (hash vectors): ``reindex(background=True)``, the job polled
until its files are committed (lexically searchable), then until it completes. Then the
index opened again (what was left to do after the job is done, as a search of an index
built before it meets it): 5 throwaway lexical searches, then each other query of
QUERIES_JSON searched once, ``top_k=10``, timed around the awaited call (wall, and the
process's CPU: every thread). Prints ``{"rifflux": where it was imported from,
"lexically_searchable_s", "files", "chunks", "lexical_s": [...], "lexical_cpu_s":
[...], "empty": n}``. Only the library's oldest calls are used, so that both checkouts answer.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio

_WARMUP = 5


async def _poll(rf: Any, job_id: str, done: Any) -> None:
    with anyio.fail_after(3600):
        while not done(await rf.job(job_id)):  # noqa: ASYNC110 - observing from outside
            await anyio.sleep(0.005)


async def main(db: Path, corpus: Path, queries: list[str]) -> dict[str, Any]:
    import rifflux
    from rifflux import Rifflux

    async with Rifflux(db, embedding_backend="hash") as rf:
        started = time.perf_counter()
        job_id = (await rf.reindex(corpus, background=True))["job"]["id"]
        await _poll(rf, job_id, lambda s: s["phase"] not in ("queued", "indexing", "retry_wait"))
        lexical = time.perf_counter() - started
        await _poll(rf, job_id, lambda s: s["status"] in ("completed", "failed", "cancelled"))
        status = await rf.status()
    async with Rifflux(db, embedding_backend="hash") as rf:  # searched as built, anew
        for query in queries[:_WARMUP]:
            await rf.search(query, mode="lexical", top_k=10)
        seconds: list[float] = []
        cpu: list[float] = []
        empty = 0
        for query in queries[_WARMUP:]:
            start, start_cpu = time.perf_counter(), time.process_time()
            hits = await rf.search(query, mode="lexical", top_k=10)
            seconds.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            empty += not hits
    return {"rifflux": str(Path(rifflux.__file__).parent), "lexically_searchable_s": lexical,
            "files": status["files"], "chunks": status["chunks"], "lexical_s": seconds,
            "lexical_cpu_s": cpu, "empty": empty}


if __name__ == "__main__":
    here = Path(__file__).resolve().parent  # (sys.path[0]: the harness is not imported)
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]
    args = sys.argv[1:]
    found = anyio.run(main, Path(args[0]), Path(args[1]), json.loads(Path(args[2]).read_text()))
    sys.stdout.write(json.dumps(found) + "\n")
