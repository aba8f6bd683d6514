"""Agents keep notes: ``Rifflux``'s note operations (a mixin of the facade).

Writing is off unless folders are named writable (``Rifflux(writable=...)``,
``--writable``, ``RIFFLUX_WRITABLE``). Each operation:

1. checks the path (``core.note_paths``, then the disk in a worker thread:
   ``notefiles.note_file``);
2. holds this process's lock on each path it changes (``NoteDesk.holding``: two calls
   on one note run one after the other, index included);
3. reads, checks ``if_match``, writes and renames in a worker thread under the
   folder's lock, which other processes take too (``note_ops``, ``notefiles``);
4. hands the paths to the indexer as an urgent job (``Service.submit_note``: it runs
   before queued jobs, and between two transactions of a running one) and returns once
   it is committed. So the note's text is found by a lexical search as soon as the call
   returns, its links and backlinks are current, and the answer says whether its
   vectors are stored yet (``vector_stored``; ``wait_for_job(job_id)`` waits for them).
   The watcher's event for the same bytes finds them indexed already: a no-op.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from .actors.jobs import JobHandle, Target
from .actors.service import Service
from .config import Settings
from .core.filters import make_filters
from .core.note_paths import note_path
from .core.scan import Globs
from .errors import InvalidArgumentError, NotWritableError, RiffluxError
from .limits import MAX_LIMIT
from .note_types import NoteChange, RecentNote

if TYPE_CHECKING:  # (what writes notes, yaml with it, loads with the first note written)
    from . import note_ops
    from .core.note_text import Edit, NoteText

__all__ = ["NoteDesk", "NoteMethods"]

_OFF = ("writing notes is off: name a writable folder (Rifflux(writable=[DIR]), "
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
        from . import notefiles

        def prepare() -> list[Path]:
            folders = []
            for given in self.settings.writable:
                folder = Path(given).expanduser().resolve()
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                    notefiles.sweep(folder, self.globs)
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
            raise NotWritableError(_OFF)
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
        from . import notefiles

        def look() -> Path:
            for folder in self.folders:
                if (notefiles.trashed(folder, rel) if trashed
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


def _edits(append: str | None, prepend: str | None,
           replace_section: tuple[str, str] | None, find: str | None, replace: str | None,
           replace_all: bool, name: str) -> Callable[[NoteText], list[Edit]]:
    """The one edit asked for, as a function of the note's text."""
    from .core import note_edits

    asked = [k for k, v in (("append", append), ("prepend", prepend),
                            ("replace_section", replace_section), ("find", find)) if v is not None]
    if len(asked) != 1:
        raise InvalidArgumentError(
            "edit_note makes one edit per call: give exactly one of append, prepend, "
            f"replace_section or find (with replace); got {', '.join(asked) or 'none'}")
    if append is not None:
        return lambda note: [note_edits.append(note, append)]
    if prepend is not None:
        return lambda note: [note_edits.prepend(note, prepend)]
    if replace_section is not None:
        if (not isinstance(replace_section, tuple | list) or len(replace_section) != 2
                or not all(isinstance(p, str) for p in replace_section)):
            raise InvalidArgumentError("replace_section is (heading, text): the heading's "
                                       "text or breadcrumb, and the section's new text")
        heading, text = replace_section
        return lambda note: [note_edits.replace_section(note, heading, text, name)]
    if replace is None:
        raise InvalidArgumentError("find needs replace: the text to put in its place ('' to "
                                   "delete it)")
    assert find is not None
    return lambda note: note_edits.find_replace(note, find, replace, name,
                                                replace_all=replace_all)


class NoteMethods:
    """The note operations of ``Rifflux`` (see the module's words)."""

    settings: Settings
    _notes: NoteDesk

    def _open(self) -> Service:
        raise NotImplementedError  # (Rifflux's)

    def _rel(self, path: str | os.PathLike[str], folder: str | os.PathLike[str] | None
             ) -> tuple[str, str | os.PathLike[str] | None]:
        """The note's path in its writable folder, and the folder: ``folder``, unless
        ``path`` is absolute (or ``~/``) inside a writable folder, which names both."""
        self._open()  # (closed: ClosedError first)
        if not self._notes.folders:
            raise NotWritableError(_OFF)
        given = os.fspath(path)
        if isinstance(given, str) and given.startswith(("/", "~")):
            full = Path(os.path.realpath(os.path.dirname(os.path.expanduser(given))))
            for holder in self._notes.folders:
                if full == holder or full.is_relative_to(holder):
                    if folder is not None and self._notes.folder(folder) != holder:
                        raise NotWritableError(f"{given!r} is in the writable folder "
                                               f"{holder}, not in {folder}")
                    inside = (full / os.path.basename(given)).relative_to(holder)
                    return note_path(inside.as_posix(), self._notes.globs), holder
        return note_path(given, self._notes.globs), folder

    async def write_note(
        self, path: str | os.PathLike[str], content: str, *, title: str | None = None,
        tags: Sequence[str] | None = None, if_match: str | None = None,
        overwrite: bool = False, folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """Create the note ``path`` (relative to a writable folder) holding ``content``,
        with ``title`` and ``tags`` in its front matter. An existing note is replaced only
        with ``overwrite`` or when ``if_match`` is its sha256 (``NoteConflictError``
        otherwise, and nothing is written)."""
        from . import note_ops

        if not isinstance(content, str):
            raise InvalidArgumentError("content must be the note's text")
        rel, folder = self._rel(path, folder)
        where = self._notes.folder(folder)
        return await self._change(where, [rel], lambda: note_ops.write(
            where, rel, content, title=title,
            tags=None if tags is None else [tags] if isinstance(tags, str) else list(tags),
            if_match=if_match, overwrite=bool(overwrite),
            use_ignore_files=self.settings.use_ignore_files))

    async def edit_note(
        self, path: str | os.PathLike[str], *, append: str | None = None,
        prepend: str | None = None, replace_section: tuple[str, str] | None = None,
        find: str | None = None, replace: str | None = None, replace_all: bool = False,
        if_match: str | None = None, folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """Edit one part of a note: ``append`` or ``prepend`` a block, replace the text of
        a section (``replace_section=(heading, text)``), or ``find`` text and ``replace``
        it (once; every time with ``replace_all``). Everything else keeps its bytes."""
        from . import note_ops

        rel, folder = self._rel(path, folder)
        make = _edits(append, prepend, replace_section, find, replace, replace_all, rel)
        where = await self._notes.holder(rel, folder)
        return await self._change(where, [rel], lambda: note_ops.edit(
            where, rel, make, if_match=if_match,
            use_ignore_files=self.settings.use_ignore_files))

    async def move_note(
        self, src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
        update_links: bool = True, if_match: str | None = None,
        folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """Move a note within its writable folder; with ``update_links``, the links to it
        in the folder's notes (and its own relative links) are rewritten to still find
        their notes (``links_updated`` lists them)."""
        from . import note_ops

        old, folder = self._rel(src, folder)
        new, folder = self._rel(dst, folder)  # (within the folder: named by ``src``)
        where = await self._notes.holder(old, folder)
        return await self._change(where, [old, new], lambda: note_ops.move(
            where, old, new, if_match=if_match, update_links=bool(update_links),
            globs=self._notes.globs, use_ignore_files=self.settings.use_ignore_files))

    async def delete_note(self, path: str | os.PathLike[str], *, if_match: str | None = None,
                          folder: str | os.PathLike[str] | None = None) -> NoteChange:
        """Move a note to ``.rifflux-trash/`` in its folder (never indexed); it leaves
        the index. ``restore_note`` brings it back."""
        from . import note_ops

        rel, folder = self._rel(path, folder)
        where = await self._notes.holder(rel, folder)
        return await self._change(where, [rel], lambda: note_ops.delete(
            where, rel, if_match=if_match, use_ignore_files=self.settings.use_ignore_files))

    async def restore_note(self, path: str | os.PathLike[str], *,
                           folder: str | os.PathLike[str] | None = None) -> NoteChange:
        """Bring the note last deleted at ``path`` back from the trash (refused when a
        note is there now)."""
        from . import note_ops

        rel, folder = self._rel(path, folder)
        where = await self._notes.holder(rel, folder, trashed=True)
        return await self._change(where, [rel], lambda: note_ops.restore(
            where, rel, use_ignore_files=self.settings.use_ignore_files))

    async def recent(self, limit: int = 20, since: str | date | None = None, *,
                     root: str | os.PathLike[str] | None = None) -> list[RecentNote]:
        """The notes changed most recently, by anyone (their modification time as
        indexed), newest first: path, root, title, modified, tags. ``since``: an ISO date
        or an age (``7d``); ``root``: one indexed folder."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be a whole number from 1 to {MAX_LIMIT}, "
                                       f"not {limit!r}")
        filters = make_filters(root=None if root is None else os.fspath(root),
                               modified_after=since)
        return await self._open().recent(limit, filters)

    async def _change(self, where: Path, rels: Sequence[str],
                      op: Callable[[], note_ops.Done]) -> NoteChange:
        """Run ``op`` with this process's locks on its paths, then index what it changed;
        the answer once the index holds it."""
        service = self._open()
        async with self._notes.holding([where / rel for rel in rels]):
            try:
                done = await anyio.to_thread.run_sync(op)
            except OSError as exc:  # a permission taken away, a full disk: nothing changed
                raise RiffluxError(f"cannot write {exc.filename or where}: "
                                   f"{exc.strerror or exc}; no file was half written (free "
                                   "space or fix the path or permission, then try "
                                   "again)") from exc
            job = service.submit_note(Target(where, paths=done.upserts, deletes=done.deletes,
                                             requested=str(where / done.path)))
            await job.written()
        return _answer(where, done, job)


def _answer(where: Path, done: note_ops.Done, job: JobHandle) -> NoteChange:
    info = job.info()
    if info["status"] in ("failed", "cancelled"):
        raise RiffluxError(f"{done.path} is written on disk (sha256 {done.after}) but the "
                           f"index could not take it: {info['error']}; the watcher or the "
                           "next reindex of the folder will")
    answer: NoteChange = {"path": done.path, "folder": str(where), "sha256": done.after,
                          "previous_sha256": done.before, "lines": done.lines,
                          "vector_stored": info["status"] == "completed", "job_id": job.id}
    if done.moved_from is not None:
        answer["moved_from"] = done.moved_from
        answer["links_updated"] = done.links_updated
        if done.links_not_updated:
            answer["links_not_updated"] = done.links_not_updated
    if done.trash_path is not None:
        answer["trash_path"] = done.trash_path
    return answer
