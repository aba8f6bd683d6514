"""Processes the note tests start (``python -m tests.note_children KIND ...``):

- ``killed FOLDER REL NEW_FILE STEP``: writes the bytes of NEW_FILE over the note REL as
  Rifflux does, and stops at STEP of the write (``notefiles``' steps): it prints the
  step's name and waits there to be killed.
- ``looping FOLDER REL A_FILE B_FILE``: writes the bytes of A_FILE, then of B_FILE, over
  the note REL as Rifflux does, again and again; prints ``looping`` after the first
  write, and goes on until it is killed.
- ``editor DB FOLDER REL TAG N``: a Rifflux process that, once it reads ``go`` on stdin,
  appends ``TAG-i`` to the note N times, each with ``if_match`` set to the sha256 it read
  just before (``get_file``), then prints ``{"accepted": [i...], "conflicts": n}``.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path


def killed(folder: Path, rel: str, new: Path, step: str) -> None:
    from rifflux.notes import files as notefiles

    def stop(name: str) -> None:
        if name == step:
            sys.stdout.write(name + "\n")
            sys.stdout.flush()
            threading.Event().wait()  # until the test kills this process

    notefiles._at_step = stop
    with notefiles.folder_lock(folder):
        notefiles.write_atomically(folder / rel, new.read_bytes(), folder)
    sys.stdout.write("finished\n")


def looping(folder: Path, rel: str, a: Path, b: Path) -> None:
    from rifflux.notes import files as notefiles

    versions = [a.read_bytes(), b.read_bytes()]
    for i in range(1 << 62):
        with notefiles.folder_lock(folder):
            notefiles.write_atomically(folder / rel, versions[i % 2], folder)
        if i == 0:
            sys.stdout.write("looping\n")
            sys.stdout.flush()


async def editor(db: Path, folder: Path, rel: str, tag: str, n: int) -> None:
    import anyio

    from rifflux import NoteConflictError, Rifflux

    from .helpers import CountingEmbedder

    async with Rifflux(db, embedder=CountingEmbedder(), writable=[folder],
                       watch_writable=False) as rf:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        await anyio.to_thread.run_sync(sys.stdin.readline)
        accepted: list[int] = []
        conflicts = 0
        for i in range(n):
            read = await rf.get_file(rel, root=str(folder), start_line=1)
            assert read is not None and "sha256" in read
            try:
                await rf.edit_note(rel, append=f"{tag}-{i}", if_match=read["sha256"])
                accepted.append(i)
            except NoteConflictError:
                conflicts += 1
        sys.stdout.write(json.dumps({"accepted": accepted, "conflicts": conflicts}) + "\n")


if __name__ == "__main__":
    kind, *args = sys.argv[1:]
    if kind == "killed":
        killed(Path(args[0]), args[1], Path(args[2]), args[3])
    elif kind == "looping":
        looping(Path(args[0]), args[1], Path(args[2]), Path(args[3]))
    else:
        import anyio

        anyio.run(editor, Path(args[0]), Path(args[1]), args[2], args[3], int(args[4]))
