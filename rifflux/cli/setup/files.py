"""A configuration file read and written safely: its bytes as they are (a BOM and its line
ends kept), a symbolic link followed to the file it names (the link stays), a write
that is atomic (a temporary file beside the target, flushed to disk, renamed over it)
with the previous content kept beside it (``NAME.rifflux.bak``), and a file that is
read-only or not readable refused before anything is changed.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BACKUP_SUFFIX", "Loaded", "SetupError", "diff", "load", "save", "writable_or_why"]

#: The previous content of a file ``setup`` changed is kept as ``NAME`` + this.
BACKUP_SUFFIX = ".rifflux.bak"
_BOM = "\ufeff"


class SetupError(Exception):
    """Nothing was changed, and why: one line, saying what to do."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """A configuration file as read: ``path`` as named, ``target`` the file it is (a
    symbolic link followed), its ``text`` (without a BOM) or "" when it does not exist."""

    path: Path
    target: Path
    text: str
    exists: bool
    bom: bool = False


def load(path: Path) -> Loaded:
    """The file at ``path`` (not there: empty, to be made). Raises SetupError when it
    cannot be read as text."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if path.is_symlink() and not target.exists():
        raise SetupError(f"{path} is a symbolic link to {target}, which does not exist: "
                         "make that file (or fix the link), or pass --config with another file")
    if target.exists() and not target.is_file():
        raise SetupError(f"{target} is not a file: pass --config with the client's "
                         "configuration file")
    if not target.exists():
        return Loaded(path, target, "", exists=False)
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise SetupError(f"cannot read {target}: {exc.strerror or exc}; nothing was changed "
                         "(check its permissions)") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SetupError(f"{target} is not UTF-8 text (byte {exc.start}): nothing was "
                         "changed; the clients write their configuration as UTF-8") from exc
    bom = text.startswith(_BOM)
    return Loaded(path, target, text.removeprefix(_BOM), exists=True, bom=bom)


def writable_or_why(loaded: Loaded) -> str | None:
    """Why the file cannot be written (a read-only file, a folder that cannot be written),
    or None. A file without any write permission is taken as meant to stay as it is, for
    root too."""
    target = loaded.target
    if loaded.exists:
        mode = target.stat().st_mode
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
                target, os.W_OK):
            return (f"{target} is read-only (mode {stat.filemode(mode)}): make it writable "
                    f"(chmod u+w {target}) and run this again, or pass --config with "
                    "another file")
    folder = _existing_parent(target.parent)
    if not os.access(folder, os.W_OK | os.X_OK):
        return (f"cannot write in {folder} (its permissions): the new file and its backup "
                "are made beside the old one")
    return None


def _existing_parent(folder: Path) -> Path:
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


def save(loaded: Loaded, text: str, *, new_mode: int = 0o600) -> Path | None:
    """Write ``text`` in place of the file, atomically, its previous content kept as the
    backup (returned; None for a new file). The file keeps its mode; a new one gets
    ``new_mode`` (by default readable by its owner only: a client's configuration may
    hold tokens)."""
    why = writable_or_why(loaded)
    if why is not None:
        raise SetupError(why)
    target = loaded.target
    target.parent.mkdir(parents=True, exist_ok=True)
    backup: Path | None = None
    if loaded.exists:
        backup = target.with_name(target.name + BACKUP_SUFFIX)
        shutil.copy2(target, backup)
    data = ((_BOM if loaded.bom else "") + text).encode("utf-8")
    mode = stat.S_IMODE(target.stat().st_mode) if loaded.exists else new_mode
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".rifflux-tmp",
                               dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # (the rename itself, on disk)
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return backup


def diff(loaded: Loaded, text: str) -> str:
    """What writing ``text`` would change, as a unified diff ("" for nothing)."""
    name = str(loaded.path)
    return "".join(difflib.unified_diff(
        loaded.text.splitlines(keepends=True), text.splitlines(keepends=True),
        fromfile=name if loaded.exists else "/dev/null", tofile=name))
