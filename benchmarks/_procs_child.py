"""One of the ``processes`` section's Rifflux processes: it watches a folder and answers
JSON commands on stdin (``python -m benchmarks._procs_child DB FOLDER BACKEND``).

Out: ``{"ready": pid}`` once open, then one JSON line per command: ``status`` (a few
counts), ``search`` (each hit's content and score breakdown), ``quit``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio

from rifflux import Rifflux


async def main(db: str, folder: str, backend: str) -> None:
    async with Rifflux(db, embedding_backend=backend, watch_paths=[folder]) as rf:
        print(json.dumps({"ready": os.getpid()}), flush=True)
        async for line in anyio.wrap_file(sys.stdin):
            command: dict[str, Any] = json.loads(line)
            op = command.pop("op")
            if op == "quit":
                return
            if op == "status":
                st = await rf.status()
                answer: Any = {k: st[k] for k in ("files", "chunks", "embeddings",
                                                  "pending_embeddings", "vectors_in_memory",
                                                  "embedding_backend", "process")}
                answer["idle"] = not any(j["status"] in ("queued", "running", "retry_wait")
                                         for j in st["jobs"]) and bool(st["jobs"])
            else:
                answer = [{"content": h["content"], "score_breakdown": h["score_breakdown"]}
                          for h in await rf.search(**command)]
            print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    db, folder, backend = sys.argv[1:4]
    anyio.run(main, db, folder, backend)
