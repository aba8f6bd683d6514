"""What the facade keeps for notes: the writable folders (made and swept at open), the
globs a note's path must pass, and this process's lock per path."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from ..config import Settings
from ..core.scan import Globs
from ..errors import InvalidArgumentError, NotWritableError

__all__ = ["OFF", "NoteDesk"]

OFF = ("writing notes is off: name a writable folder (Rifflux(writable=[DIR]), "
       "--writable DIR, or RIFFLUX_WRITABLE)")


class NoteDesk:
    """What the facade keeps for notes: the writable folders (resolved at open), the
    globs a note's path must pass, and this process's lock per path."""

    def __init__(self, settings: Settings, *, watch: bool = True) -> None:
        if settings.writable and settings.read_only:
            raise InvalidArgumentError("an index open read-only has no writable folders")
        if watch:  # (a writable folder is indexed and watched)
            settings = settings.with_overrides(watch_paths=tuple(dict.fromkeys(
                (*settings.watch_paths, *settings.writable))))
        self.settings = settings
        self.globs = Globs(settings.include, settings.exclude)
        self.folders: list[Path] = []
        self._locks: dict[str, tuple[anyio.Lock, int]] = {}

    async def open(self) -> None:
        """Make the writable folders that are missing, and sweep up the temporary files of
        writers that were killed midway."""
        if not self.settings.writable:
            return  # (no worker thread for nothing)
        from . import files

        def prepare() -> list[Path]:
            folders = []
            for given in self.settings.writable:
                folder = Path(given).expanduser().resolve()
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                    files.sweep(folder, self.globs)
                except OSError as exc:
                    raise NotWritableError(f"cannot use the writable folder {given}: "
                                           f"{exc.strerror or exc}; give a folder this user "
                                           "can write in") from exc
                folders.append(folder)
            return folders

        self.folders = await anyio.to_thread.run_sync(prepare)

    def folder(self, given: str | os.PathLike[str] | None) -> Path:
        """The writable folder named by its path or name (the first one when not given)."""
        if not self.folders:
            raise NotWritableError(OFF)
        if given is None:
            return self.folders[0]
        name = os.fspath(given)
        found = [f for f in self.folders if str(f) == name or f.name == name
                 or str(f) == os.path.abspath(os.path.expanduser(name))]
        if not found:
            raise NotWritableError(f"{name!r} is not a writable folder; they are "
                                   f"{', '.join(map(str, self.folders))}")
        return found[0]

    async def holder(self, rel: str, given: str | os.PathLike[str] | None,
                     trashed: bool = False) -> Path:
        """The writable folder holding the note ``rel`` (or its trash): ``given``, else
        the first that has it, else the first."""
        if given is not None or len(self.folders) < 2:
            return self.folder(given)
        from . import files

        def look() -> Path:
            for folder in self.folders:
                if (files.trashed(folder, rel) if trashed
                        else os.path.lexists(folder / rel)):
                    return folder
            return self.folders[0]

        return await anyio.to_thread.run_sync(look)

    @asynccontextmanager
    async def holding(self, paths: Sequence[Path]) -> AsyncIterator[None]:
        """This process's locks on ``paths`` (in one order: no two calls wait on each
        other); each is dropped when nobody holds or waits for it."""
        keys = sorted({str(p) for p in paths})
        for key in keys:
            lock, users = self._locks.get(key, (anyio.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        taken: list[anyio.Lock] = []
        try:
            for key in keys:
                await self._locks[key][0].acquire()
                taken.append(self._locks[key][0])
            yield
        finally:
            for lock in taken:
                lock.release()
            for key in keys:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)
