"""The note operations on disk, each whole under its folder's lock: read, check, write.

Synchronous (the facade runs each in a worker thread): the texts are made by
``core.note_edits`` and ``core.relink``, the bytes written by ``files``. Each
returns a ``Done``: what changed, for the answer, and which paths the index must
read again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from ..core.decode import Binary, decode
from ..core.note_edits import with_front_matter
from ..core.note_text import Edit, NoteText, encode, line_ranges, sha256, whole_lines
from ..core.relink import Notes, relink
from ..core.scan import Globs
from ..errors import InvalidArgumentError, NoteConflictError, NotWritableError
from ..note_types import LinkUpdate
from . import files

#: An edit: the note's text -> the edits to make.
MakeEdits = Callable[[NoteText], list[Edit]]


@dataclass(frozen=True, slots=True)
class Done:
    path: str
    before: str | None  # sha256
    after: str | None
    lines: list[list[int]]
    upserts: frozenset[str]  # for the index
    deletes: frozenset[str] = frozenset()
    moved_from: str | None = None
    trash_path: str | None = None
    links_updated: list[LinkUpdate] = field(default_factory=list)
    links_not_updated: list[dict[str, str]] = field(default_factory=list)


def _check(rel: str, current: bytes | None, if_match: str | None, *,
           new: bool = False, overwrite: bool = False) -> str | None:
    """The note's sha256 now, once it is what the caller expects (``NoteConflictError``
    otherwise: nothing is written)."""
    sha = None if current is None else sha256(current)
    if if_match is not None and sha != if_match.strip().lower():
        if sha is None:
            raise NoteConflictError(f"{rel} does not exist (any more), but if_match named a "
                                    "version of it; nothing was written. Leave if_match out "
                                    "to create it", path=rel, current_sha256=None)
        raise NoteConflictError(
            f"{rel} changed since it was read: its sha256 is now {sha}, not {if_match}; "
            "nothing was written. Read it again (get_file), make the change to what it "
            f"says now and pass if_match={sha}", path=rel, current_sha256=sha)
    if new and sha is not None and if_match is None and not overwrite:
        raise NoteConflictError(
            f"{rel} already exists (sha256 {sha}); nothing was written. Edit it with "
            f"edit_note, or replace it with overwrite=true or if_match={sha}",
            path=rel, current_sha256=sha)
    if not new and sha is None:
        raise NotWritableError(f"there is no note {rel!r} to change (write_note creates one; "
                               "recent lists the notes changed lately)")
    return sha


def write(folder: Path, rel: str, content: str, *, title: str | None,
          tags: list[str] | None, if_match: str | None, overwrite: bool,
          use_ignore_files: bool) -> Done:
    text = with_front_matter(content, title, tags)
    if text and not text.endswith(("\n", "\r")):  # (its last line ends, as editors end it)
        text += "\r\n" if "\r\n" in text else "\n"
    path = files.note_file(folder, rel, use_ignore_files=use_ignore_files)
    with files.folder_lock(folder):
        current = files.read(path)
        before = _check(rel, current, if_match, new=True, overwrite=overwrite)
        data = text.encode("utf-8")
        if current is not None:  # kept in the note's encoding when it can hold the text
            decoded = decode(current)
            if not isinstance(decoded, Binary) and decoded.encoding != "utf-8":
                try:
                    data = encode(text, decoded.encoding, NoteText.of(current, rel).bom)
                except InvalidArgumentError:
                    pass
        if data != current:
            files.write_atomically(path, data, folder)
    return Done(rel, before, sha256(data), whole_lines(text), frozenset({rel}))


def edit(folder: Path, rel: str, make: MakeEdits, *, if_match: str | None,
         use_ignore_files: bool) -> Done:
    path = files.note_file(folder, rel, use_ignore_files=use_ignore_files, exists=True)
    with files.folder_lock(folder):
        current = files.read(path)
        before = _check(rel, current, if_match)
        assert current is not None
        note = NoteText.of(current, rel)
        data, _, lines = note.apply(make(note))
        if data != current:
            files.write_atomically(path, data, folder)
    return Done(rel, before, sha256(data), line_ranges(lines) if data != current else [],
                frozenset({rel}))


def delete(folder: Path, rel: str, *, if_match: str | None, use_ignore_files: bool) -> Done:
    path = files.note_file(folder, rel, use_ignore_files=use_ignore_files, exists=True)
    with files.folder_lock(folder):
        before = _check(rel, files.read(path), if_match)
        place = files.trash(folder, rel)
    return Done(rel, before, None, [], frozenset(), frozenset({rel}), trash_path=place)


def restore(folder: Path, rel: str, *, use_ignore_files: bool) -> Done:
    path = files.note_file(folder, rel, use_ignore_files=use_ignore_files)
    with files.folder_lock(folder):
        place = files.trashed(folder, rel)
        if place is None:
            raise NotWritableError(f"the trash of {folder} holds no {rel!r} (give the path "
                                   "the note had, as delete_note answered it)")
        _check(rel, files.read(path), None, new=True)
        files.restore(folder, rel, place)
        data = files.read(path) or b""
    text = decode(data)
    lines = whole_lines(text.text) if not isinstance(text, Binary) else []
    return Done(rel, None, sha256(data), lines, frozenset({rel}))


def move(folder: Path, src: str, dst: str, *, if_match: str | None, update_links: bool,
         globs: Globs, use_ignore_files: bool) -> Done:
    if src == dst:
        raise InvalidArgumentError(f"{src!r} is already there: give another destination")
    src_path = files.note_file(folder, src, use_ignore_files=use_ignore_files, exists=True)
    dst_path = files.note_file(folder, dst, use_ignore_files=use_ignore_files)
    with files.folder_lock(folder):
        current = files.read(src_path)
        before = _check(src, current, if_match)
        taken = files.read(dst_path)
        if taken is not None:
            raise NoteConflictError(f"{dst} already exists (sha256 {sha256(taken)}); nothing "
                                    "was moved: give another destination, or delete it first",
                                    path=dst, current_sha256=sha256(taken))
        assert current is not None
        plan = _Relinking(folder, src, dst, globs, use_ignore_files) if update_links else None
        own = plan.own(current) if plan else None
        files.move(folder, src, dst)
        data, lines = current, list[list[int]]()
        if own is not None:
            data, lines = own
            files.write_atomically(dst_path, data, folder)
        upserts = {dst, *(plan.write() if plan else ())}
    return Done(dst, before, sha256(data), lines, frozenset(upserts), frozenset({src}),
                moved_from=src, links_updated=plan.updated if plan else [],
                links_not_updated=plan.not_updated if plan else [])


class _Relinking:
    """The links of a folder's notes to keep when ``src`` moves to ``dst``: worked out
    before the move, written after it."""

    def __init__(self, folder: Path, src: str, dst: str, globs: Globs,
                 use_ignore_files: bool) -> None:
        self.folder, self.src, self.dst = folder, src, dst
        notes = files.list_notes(folder, globs, use_ignore_files=use_ignore_files)
        self.before = Notes(notes)
        self.after = Notes([dst if n == src else n for n in notes]
                           + ([dst] if src not in notes else []))
        self.updated: list[LinkUpdate] = []
        self.not_updated: list[dict[str, str]] = []
        names = {_stem(src), _stem(dst)}
        keys = {k for n in names for k in (n.casefold(), quote(n).casefold())}
        self._writes: list[tuple[str, bytes, bytes]] = []  # (path, bytes read, new bytes)
        for rel in notes:
            if rel == src:
                continue
            data = files.read(folder / rel)
            decoded = decode(data) if data is not None else None
            if decoded is None or isinstance(decoded, Binary) or \
                    not any(k in decoded.text.casefold() for k in keys):
                continue
            made = self._relinked(rel, rel, data or b"")
            if made is not None:
                self._writes.append((rel, data or b"", made[0]))

    def _relinked(self, was: str, now: str, data: bytes) -> tuple[bytes, list[list[int]]] | None:
        try:
            note = NoteText.of(data, was)
        except InvalidArgumentError as exc:
            self.not_updated.append({"path": now, "reason": str(exc)})
            return None
        edits, done = relink(note.text, was=was, now=now, before=self.before,
                             after=self.after, moved=(self.src, self.dst))
        if not edits:
            return None
        self.updated += [{"path": now, "line": d.line, "before": d.before, "after": d.after}
                         for d in done]
        new, _, lines = note.apply(edits)
        return new, line_ranges(lines)

    def own(self, data: bytes) -> tuple[bytes, list[list[int]]] | None:
        """The moved note's own links, kept from its new place."""
        return self._relinked(self.src, self.dst, data)

    def write(self) -> list[str]:
        """Write the notes whose links changed; those changed meanwhile are left as they are
        (and said so). The paths written."""
        written: list[str] = []
        for rel, read_then, new in self._writes:
            if files.read(self.folder / rel) != read_then:
                self.not_updated.append({"path": rel, "reason": "it changed while the note "
                                                                "moved; its links are as written"})
                self.updated = [u for u in self.updated if u["path"] != rel]
                continue
            files.write_atomically(self.folder / rel, new, self.folder)
            written.append(rel)
        return written


def _stem(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].removesuffix(".md")
