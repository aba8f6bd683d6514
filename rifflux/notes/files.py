"""The file system under writable folders: the one place that writes notes.

Synchronous: the facade calls it in worker threads.

- A note is written atomically: its bytes go to a temporary file in the note's own
  folder (``.NAME.<random>.rifflux-tmp``, a name no include glob takes and the index
  never reads), which is flushed to disk (fsync) and renamed over the note; then the
  folder itself is fsynced. A process killed at any point leaves the old note or the
  new one, never a part of either (``sweep`` removes the temporary file it left).
- Every change under a writable folder (its read, its check against ``if_match``, its
  rename) holds the folder's lock: an ``flock`` on ``.rifflux-trash/.lock``, which
  other processes take too, so two of them cannot both pass the check and both write.
  (A person's editor takes no lock: a save in the same millisecond as Rifflux's
  rename can still be lost, as between any two programs that write one file.)
- A deleted note goes to ``.rifflux-trash/<UTC time>/<its path>`` in its folder, which
  is never indexed; restoring it moves it back.
- A path is checked on the disk too: no folder on its way may be a symbolic link that
  leads out of the writable folder, the note itself may not be a symbolic link, and the
  folder's ignore files may not leave it out.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from ..config import TEMP_SUFFIX, TRASH_DIR
from ..core.ignore import IgnoreFiles
from ..core.scan import Globs, scan_root
from ..errors import NotWritableError, RiffluxError

__all__ = ["folder_lock", "list_notes", "note_file", "read", "restore", "sweep", "trash",
           "write_atomically"]

#: A test's hook: called with the name of each step of a write (to stop a process there).
_at_step: Callable[[str], None] | None = None
#: How long a writer waits for another process's lock on the folder.
LOCK_WAIT = 10.0
_STAMP = "%Y%m%dT%H%M%S.%fZ"


def _step(name: str) -> None:
    if _at_step is not None:
        _at_step(name)


@contextlib.contextmanager
def folder_lock(folder: Path, wait: float = LOCK_WAIT) -> Iterator[None]:
    """The writable folder's lock, held by one writer at a time in any process."""
    trash_dir = folder / TRASH_DIR
    trash_dir.mkdir(exist_ok=True)
    fd = os.open(trash_dir / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RiffluxError(f"another process has held the write lock of {folder} "
                                       f"for {wait:.0f} s; try again later") from None
                time.sleep(0.002)  # (a lock wait in a worker thread, not a synchronisation)
        yield
    finally:
        os.close(fd)  # (releases the lock)


def note_file(folder: Path, rel: str, *, use_ignore_files: bool = True,
              exists: bool | None = None) -> Path:
    """Where the note ``rel`` (already checked by ``core.note_paths``) is in ``folder``
    (resolved), refused when a symbolic link would take it out of the folder, when it is
    a symbolic link itself or not a file, or when an ignore file leaves it out."""
    path = folder / rel
    parent = path.parent.resolve()
    if parent != folder and folder not in parent.parents:
        raise NotWritableError(f"{rel!r} leads out of the writable folder through a symbolic "
                               f"link (to {parent}); give a path inside {folder}")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        target = path.resolve()
        where = "out of the writable folder" if folder not in target.parents else "elsewhere"
        raise NotWritableError(f"{rel!r} is a symbolic link leading {where} ({target}); "
                               "write the note it points to instead")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NotWritableError(f"{rel!r} is not a file; give the path of a note")
    if exists is True and st is None:
        raise NotWritableError(f"there is no note {rel!r} in {folder} (recent lists the "
                               "notes changed lately)")
    if use_ignore_files and IgnoreFiles(str(folder)).ignored(rel):
        raise NotWritableError(f"{rel!r} is left out by an ignore file (.gitignore, .ignore "
                               "or .riffluxignore) of the folder; give a path the index takes")
    return path


def read(path: Path) -> bytes | None:
    """A note's bytes (None when there is no note)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _made_folders(path: Path, top: Path) -> None:
    """``path``'s folders, made (and the folders holding them synced) where missing."""
    missing = [p for p in [path, *path.parents] if p != top and top in p.parents
               and not p.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
        _sync_folder(folder.parent)


def write_atomically(path: Path, data: bytes, top: Path) -> None:
    """``path`` holds ``data``, whole, or what it held before (see the module's words)."""
    _made_folders(path.parent, top)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            _step("opened")
            half = len(data) // 2
            _write_all(fd, data[:half])
            _step("half-written")
            _write_all(fd, data[half:])
            _step("written")
            os.fsync(fd)
            _step("synced")
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _step("renamed")
    _sync_folder(path.parent)
    _step("folder-synced")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def trash(folder: Path, rel: str) -> str:
    """Move the note ``rel`` to the folder's trash; its path there (from the folder)."""
    stamp = datetime.now(UTC).strftime(_STAMP)
    place = Path(TRASH_DIR) / stamp / rel
    _made_folders((folder / place).parent, folder)
    os.rename(folder / rel, folder / place)
    _sync_folder((folder / place).parent)
    _sync_folder((folder / rel).parent)
    return place.as_posix()


def trashed(folder: Path, rel: str) -> Path | None:
    """The newest copy of ``rel`` in the folder's trash (None: none is there)."""
    with contextlib.suppress(FileNotFoundError):
        for stamp in sorted(os.listdir(folder / TRASH_DIR), reverse=True):
            candidate = folder / TRASH_DIR / stamp / rel
            if candidate.is_file():
                return candidate
    return None


def restore(folder: Path, rel: str, place: Path) -> None:
    """Move ``place`` (in the trash) back to ``rel``; empty trash folders go."""
    target = folder / rel
    _made_folders(target.parent, folder)
    os.rename(place, target)
    _sync_folder(target.parent)
    _sync_folder(place.parent)
    top = folder / TRASH_DIR
    for empty in [place.parent, *place.parent.parents]:
        if empty == top or top not in empty.parents:
            break
        try:
            empty.rmdir()
        except OSError as exc:  # not empty: the rest of that deletion is still there
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                break
            raise


def move(folder: Path, src: str, dst: str) -> None:
    _made_folders((folder / dst).parent, folder)
    os.rename(folder / src, folder / dst)
    _sync_folder((folder / dst).parent)
    _sync_folder((folder / src).parent)


def list_notes(folder: Path, globs: Globs, *, use_ignore_files: bool = True) -> list[str]:
    """Every note of the folder the index takes (paths relative to it)."""
    return [f.rel_path for f in scan_root(folder, globs,
                                          use_ignore_files=use_ignore_files).files]


def sweep(folder: Path, globs: Globs) -> int:
    """Remove the temporary files writers killed midway left in ``folder``; how many.
    Every writer holds the folder's lock while its temporary file exists, so under the
    lock every one found is stale. (Folders the globs exclude hold no notes: skipped.)"""
    found: list[Path] = []
    for directory, dirs, files in os.walk(folder):
        rel_dir = os.path.relpath(directory, folder)
        dirs[:] = [d for d in dirs
                   if not globs.excluded_dir(d if rel_dir == "." else f"{rel_dir}/{d}")]
        found += [Path(directory) / name for name in files
                  if name.endswith(TEMP_SUFFIX) and name.startswith(".")]
    if not found:
        return 0
    removed = 0
    with folder_lock(folder):
        for path in found:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
    return removed
