"""A Rifflux process driven over stdin/stdout, for the tests of several processes on one
index: ``python -m tests.process_driver DB [--watch DIR] [--read-only] [--slow S]
[--follow-every S]``.

Each line in is a JSON command (``{"op": "reindex", ...}``); each line out is its JSON
answer (``{"ok": ...}`` or ``{"error": "..."}``). The first line out is ``{"ready":
pid}``, once the index is open. It embeds with the hash embedder's vectors and label
(so every process makes the same vectors), counting the texts it embeds, ``--slow``
seconds each. ``--follow-every`` sets how often it looks at other processes' commits on
its own (``Settings.follow_seconds``): a test makes it rare to see what a
reindex brings in by itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import anyio

from rifflux import Rifflux, Settings
from rifflux.core.embedders import HashEmbedder
from rifflux.core.vectors import F32

from .helpers import CountingEmbedder


class Counting(CountingEmbedder):
    """The hash embedder under its own label (as the CLI's hash backend has it), counting,
    and ``slow`` seconds a text."""

    def __init__(self, slow: float) -> None:
        super().__init__(label=HashEmbedder().label)
        self.slow = slow

    def embed_documents(self, texts: list[str]) -> F32:
        if self.slow:
            time.sleep(self.slow * len(texts))
        return super().embed_documents(texts)


async def serve(rf: Rifflux, embedder: Counting) -> None:
    stdin = anyio.wrap_file(sys.stdin)
    async for line in stdin:
        command: dict[str, Any] = json.loads(line)
        op = command.pop("op")
        try:
            answer: Any
            if op == "quit":
                return
            if op == "reindex":
                answer = await rf.reindex(**command)
            elif op == "search":
                answer = [{"path": h["path"], "chunk_id": h["chunk_id"], "lang": h.get("lang")}
                          for h in await rf.search(**command)]
            elif op == "languages_pending":
                answer = rf.languages_pending()
            elif op == "status":
                answer = await rf.status()
            elif op == "embedded":
                answer = len(embedder.embedded)
            elif op == "history":  # (the titles of the hits)
                answer = [h["title"] for h in (await rf.search_history(**command))["results"]]
            elif op == "wait_for_history":
                await rf.wait_for_history()
                answer = None
            elif op in ("links", "neighbors"):
                answer = await getattr(rf, op)(**command)
            else:
                raise ValueError(f"unknown op {op!r}")
            reply = {"ok": answer}
        except Exception as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply, default=str) + "\n")
        sys.stdout.flush()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("--watch", action="append", default=[])
    parser.add_argument("--read-only", action="store_true")
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--follow-every", type=float, default=Settings().follow_seconds)
    args = parser.parse_args()
    embedder = Counting(args.slow)
    settings = Settings(db_path=args.db, read_only=args.read_only,
                        watch_paths=tuple(args.watch), debounce_seconds=0.05,
                        follow_seconds=args.follow_every)
    async with Rifflux(settings=settings, embedder=embedder) as rf:
        sys.stdout.write(json.dumps({"ready": os.getpid()}) + "\n")
        sys.stdout.flush()
        await serve(rf, embedder)


if __name__ == "__main__":
    anyio.run(main)
