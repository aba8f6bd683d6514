"""Section 9: links between notes on a generated 2,000-note vault, in process.

The vault is written in the work folder with a fixed seed: notes in folders of
100, each linking by ``[[wikilink]]`` to 2-5 notes near it (by number), to one
note anywhere, and one note in three also to one of 20 hubs, so that a few notes
have hundreds of backlinks and a depth-2 neighbourhood ranges from a few notes
to most of the vault. Indexed with hash vectors (the links do not depend on
them). Then, after a few throwaway calls, ``neighbors(path, depth=2)`` for 200
notes drawn at random (hubs included when drawn), each timed once around the
awaited call; ``links(path)`` for the same notes, the same way. The target is
the neighbors p50.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

from rifflux import Rifflux

from ._common import ENOUGH, Incomplete, summary_ms
from ._context import State

NOTES = 2000
HUBS = 20
CALLS = 200
WARMUP = 10
DEPTH = 2


def note_path(i: int) -> str:
    return f"area-{i // 100:02d}/note-{i:04d}.md"


def write_vault(root: Path, seed: int, notes: int = NOTES) -> int:
    """The vault; returns the number of links written."""
    rng = random.Random(seed)
    written = 0
    for i in range(notes):
        targets = {min(notes - 1, max(0, i + rng.randint(-20, 20)))
                   for _ in range(rng.randint(2, 5))}
        targets.add(rng.randrange(notes))
        if rng.random() < 1 / 3:
            targets.add(rng.randrange(HUBS))
        targets.discard(i)
        links = " ".join(f"[[note-{t:04d}]]" for t in sorted(targets))
        path = root / note_path(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\nA note about topic {i % 37} and item {i}.\n\n"
                        f"## Related\n\nSee {links}.\n", encoding="utf-8")
        written += len(targets)
    return written


async def links_section(state: State) -> dict[str, Any]:
    cfg = state.config
    root = cfg.work / "links-vault"
    written = write_vault(root, cfg.seed)
    rng = random.Random(cfg.seed + 1)
    sample = [note_path(rng.randrange(NOTES)) for _ in range(CALLS + WARMUP)]
    async with Rifflux(cfg.work / "links.db", embedding_backend="hash") as rf:
        started = time.perf_counter()
        await rf.reindex(root)
        index_s = time.perf_counter() - started
        status = await rf.status()
        print(f"[bench] links: {status['files']} notes, {status['links']} links indexed in "
              f"{index_s:.1f} s", file=sys.stderr, flush=True)
        if status["files"] < ENOUGH * NOTES or status["links"] < ENOUGH * written:
            raise Incomplete(f"the vault's index holds {status['files']} of its {NOTES} notes "
                             f"and {status['links']} of its {written} links: neighbors() "
                             "would walk a graph that is not there")
        for path in sample[:WARMUP]:
            await rf.neighbors(path, depth=DEPTH)
            await rf.links(path)
        neighbor_s: list[float] = []
        sizes: list[int] = []
        for path in sample[WARMUP:]:
            start = time.perf_counter()
            found = await rf.neighbors(path, depth=DEPTH)
            neighbor_s.append(time.perf_counter() - start)
            sizes.append(len(found))
        links_s: list[float] = []
        for path in sample[WARMUP:]:
            start = time.perf_counter()
            await rf.links(path)
            links_s.append(time.perf_counter() - start)
    sizes.sort()
    return {
        "surface": "in-process",
        "notes": status["files"],
        "links": status["links"],
        "links_written": written,
        "unresolved_links": status["unresolved_links"],
        "index_s": round(index_s, 2),
        "depth": DEPTH,
        "calls": CALLS,
        "neighbors": summary_ms(neighbor_s),
        "neighbors_found": {"min": sizes[0], "median": sizes[len(sizes) // 2],
                            "max": sizes[-1]},
        "links_read": summary_ms(links_s),
    }
