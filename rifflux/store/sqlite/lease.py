"""The embedding lease: of all the processes on one index, one embeds.

It is an exclusive ``flock`` on a sidecar file next to the index
(``index.db.embedding.lock``). The kernel releases it when its holder's file is
closed, and so when the holder dies, even by SIGKILL: another process takes it
at its next try. Nothing is written to the file. Where ``fcntl`` does not exist
(Windows) every process holds it: they may then embed the same texts, as before.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - not on this platform
    fcntl = None  # type: ignore[assignment]


class Lease:
    def __init__(self, db_path: Path, name: str = "embedding") -> None:
        self.path = db_path.with_name(f"{db_path.name}.{name}.lock")
        self._file: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def try_acquire(self) -> bool:
        """Take the lease if no other process holds it (never waits)."""
        if self._file is not None:
            return True
        if fcntl is None:
            self._file = open(os.devnull, "rb")  # noqa: SIM115 - held until release
            return True
        try:
            f = open(self.path, "ab")  # noqa: SIM115 - held until release
        except OSError:
            return False  # a folder we cannot write: then the writer cannot either
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            return False
        self._file = f
        return True

    def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()  # closing the file releases the lock
            self._file = None

    # ``store.protocols.LeaseStore``: the same, for the embedder (a flock never waits)

    @property
    def where(self) -> str:
        return str(self.path)

    async def try_take(self) -> bool:
        return self.try_acquire()

    @property
    def token(self) -> str | None:
        return None  # (its holder's file stays open, and the lock with it)

    async def confirm(self) -> bool:
        return self.held  # (a flock is kept while its file is open: never lost unseen)

    async def give_back(self) -> None:
        self.release()
