"""``Notes``: the note operations ``Rifflux`` hands its note methods to. Each one checks the
path, holds this process's locks on the paths it changes (``NoteDesk.holding``), runs the
operation on disk in a worker thread (``ops``), then hands what changed to the indexer
as an urgent job and answers once it is committed (see the package's words)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..actors.jobs import JobHandle, Target
from ..actors.service import Service
from ..config import Settings
from ..core.filters import make_filters
from ..core.note_paths import note_path
from ..errors import InvalidArgumentError, NotWritableError, RiffluxError
from ..limits import MAX_LIMIT
from ..note_types import NoteChange, RecentNote
from .desk import OFF, NoteDesk

if TYPE_CHECKING:  # (what writes notes, yaml with it, loads with the first note written)
    from ..core.note_text import Edit, NoteText
    from . import ops

__all__ = ["Notes"]


def _edits(append: str | None, prepend: str | None,
           replace_section: tuple[str, str] | None, find: str | None, replace: str | None,
           replace_all: bool, name: str) -> Callable[[NoteText], list[Edit]]:
    """The one edit asked for, as a function of the note's text."""
    from ..core import note_edits

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


class Notes:
    """The note operations of one ``Rifflux``: ``desk`` its writable folders and locks,
    ``service`` its open handle (raising ``ClosedError`` when it is not open)."""

    def __init__(self, desk: NoteDesk, service: Callable[[], Service]) -> None:
        self._desk = desk
        self._service = service

    @property
    def _settings(self) -> Settings:
        return self._desk.settings

    def _rel(self, path: str | os.PathLike[str], folder: str | os.PathLike[str] | None
             ) -> tuple[str, str | os.PathLike[str] | None]:
        """The note's path in its writable folder, and the folder: ``folder``, unless
        ``path`` is absolute (or ``~/``) inside a writable folder, which names both."""
        self._service()  # (closed: ClosedError first)
        if not self._desk.folders:
            raise NotWritableError(OFF)
        given = os.fspath(path)
        if isinstance(given, str) and given.startswith(("/", "~")):
            full = Path(os.path.realpath(os.path.dirname(os.path.expanduser(given))))
            for holder in self._desk.folders:
                if full == holder or full.is_relative_to(holder):
                    if folder is not None and self._desk.folder(folder) != holder:
                        raise NotWritableError(f"{given!r} is in the writable folder "
                                               f"{holder}, not in {folder}")
                    inside = (full / os.path.basename(given)).relative_to(holder)
                    return note_path(inside.as_posix(), self._desk.globs), holder
        return note_path(given, self._desk.globs), folder

    async def write(
        self, path: str | os.PathLike[str], content: str, *, title: str | None = None,
        tags: Sequence[str] | None = None, if_match: str | None = None,
        overwrite: bool = False, folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """``Rifflux.write_note`` (its words say what it does)."""
        from . import ops

        if not isinstance(content, str):
            raise InvalidArgumentError("content must be the note's text")
        rel, folder = self._rel(path, folder)
        where = self._desk.folder(folder)
        return await self._change(where, [rel], lambda: ops.write(
            where, rel, content, title=title,
            tags=None if tags is None else [tags] if isinstance(tags, str) else list(tags),
            if_match=if_match, overwrite=bool(overwrite),
            use_ignore_files=self._settings.use_ignore_files))

    async def edit(
        self, path: str | os.PathLike[str], *, append: str | None = None,
        prepend: str | None = None, replace_section: tuple[str, str] | None = None,
        find: str | None = None, replace: str | None = None, replace_all: bool = False,
        if_match: str | None = None, folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """``Rifflux.edit_note`` (its words say what it does)."""
        from . import ops

        rel, folder = self._rel(path, folder)
        make = _edits(append, prepend, replace_section, find, replace, replace_all, rel)
        where = await self._desk.holder(rel, folder)
        return await self._change(where, [rel], lambda: ops.edit(
            where, rel, make, if_match=if_match,
            use_ignore_files=self._settings.use_ignore_files))

    async def move(
        self, src: str | os.PathLike[str], dst: str | os.PathLike[str], *,
        update_links: bool = True, if_match: str | None = None,
        folder: str | os.PathLike[str] | None = None,
    ) -> NoteChange:
        """``Rifflux.move_note`` (its words say what it does)."""
        from . import ops

        old, folder = self._rel(src, folder)
        new, folder = self._rel(dst, folder)  # (within the folder: named by ``src``)
        where = await self._desk.holder(old, folder)
        return await self._change(where, [old, new], lambda: ops.move(
            where, old, new, if_match=if_match, update_links=bool(update_links),
            globs=self._desk.globs, use_ignore_files=self._settings.use_ignore_files))

    async def delete(self, path: str | os.PathLike[str], *, if_match: str | None = None,
                          folder: str | os.PathLike[str] | None = None) -> NoteChange:
        """``Rifflux.delete_note`` (its words say what it does)."""
        from . import ops

        rel, folder = self._rel(path, folder)
        where = await self._desk.holder(rel, folder)
        return await self._change(where, [rel], lambda: ops.delete(
            where, rel, if_match=if_match, use_ignore_files=self._settings.use_ignore_files))

    async def restore(self, path: str | os.PathLike[str], *,
                           folder: str | os.PathLike[str] | None = None) -> NoteChange:
        """``Rifflux.restore_note`` (its words say what it does)."""
        from . import ops

        rel, folder = self._rel(path, folder)
        where = await self._desk.holder(rel, folder, trashed=True)
        return await self._change(where, [rel], lambda: ops.restore(
            where, rel, use_ignore_files=self._settings.use_ignore_files))

    async def recent(self, limit: int = 20, since: str | date | None = None, *,
                     root: str | os.PathLike[str] | None = None) -> list[RecentNote]:
        """``Rifflux.recent`` (its words say what it does)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be a whole number from 1 to {MAX_LIMIT}, "
                                       f"not {limit!r}")
        filters = make_filters(root=None if root is None else os.fspath(root),
                               modified_after=since)
        return await self._service().recent(limit, filters)

    async def _change(self, where: Path, rels: Sequence[str],
                      op: Callable[[], ops.Done]) -> NoteChange:
        """Run ``op`` with this process's locks on its paths, then index what it changed;
        the answer once the index holds it."""
        service = self._service()
        async with self._desk.holding([where / rel for rel in rels]):
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


def _answer(where: Path, done: ops.Done, job: JobHandle) -> NoteChange:
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
