"""One writer of the ``memory`` section's concurrent run: ``python -m
benchmarks._memory_child DB FOLDER WRITER EDITS NOTES SEED``.

It opens Rifflux on DB with FOLDER writable (hash vectors), prints ``ready``, waits for a
line on stdin, then makes EDITS appends ``w{WRITER}-e{k}`` to random notes ``n{i}.md``,
each with ``if_match`` set to the sha256 ``get_file`` read just before, and prints
``{"accepted": [[edit, note], ...], "conflicted": [edit, ...], "conflicts": n,
"errors": n, "span": [start, end]}`` (wall-clock seconds of its edits).
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import anyio

from rifflux import NoteConflictError, Rifflux, RiffluxError


async def main(db: Path, folder: Path, writer: int, edits: int, notes: int,
               seed: int) -> None:
    rng = random.Random(seed)
    async with Rifflux(db, embedding_backend="hash", writable=[folder],
                       watch_writable=False) as rf:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await anyio.to_thread.run_sync(sys.stdin.readline)
        started = time.time()
        accepted: list[tuple[str, int]] = []
        conflicted: list[str] = []
        errors = 0
        for k in range(edits):
            n = rng.randrange(notes)
            mark = f"w{writer}-e{k}"
            try:
                read = await rf.get_file(f"n{n}.md", root=str(folder), start_line=1)
                assert read is not None and "sha256" in read
                await rf.edit_note(f"n{n}.md", append=mark, if_match=read["sha256"])
                accepted.append((mark, n))
            except NoteConflictError:
                conflicted.append(mark)
            except RiffluxError as exc:
                errors += 1
                sys.stderr.write(f"writer {writer}: {exc}\n")
        sys.stdout.write(json.dumps({"accepted": accepted, "conflicted": conflicted,
                                     "conflicts": len(conflicted), "errors": errors,
                                     "span": [started, time.time()]}) + "\n")


if __name__ == "__main__":
    a = sys.argv[1:]
    anyio.run(main, Path(a[0]), Path(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]))
