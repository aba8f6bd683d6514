"""Which paths an agent may write a note at: a pure policy (the file system's part, links
and ignore files, is ``rifflux.notes.files``').

A note's path is relative to a writable folder, uses ``/`` between folders and ends in
``.md``. Refused, each with what to give instead: an empty path, an absolute one
(``/x``, ``~/x``, ``C:\\x``), ``..`` anywhere, a backslash, control characters, a path in
the trash, and a path the include and exclude
globs leave out (the index would never show the note).
"""

from __future__ import annotations

import posixpath
import unicodedata

from ..config import TRASH_DIR
from ..errors import NotWritableError
from .scan import Globs


def note_path(path: str, globs: Globs) -> str:
    """``path`` checked and made plain (``./a//b.md`` -> ``a/b.md``)."""
    if not isinstance(path, str) or not path.strip():
        raise NotWritableError("the note's path is empty: give a path relative to the "
                               "writable folder, such as 'decisions/2026-11-22.md'")
    if path.startswith(("/", "~")) or (len(path) > 1 and path[1] == ":"):
        raise NotWritableError(f"{path!r} is absolute: give the note's path relative to "
                               "the writable folder, such as 'notes/idea.md'")
    if "\\" in path:
        raise NotWritableError(f"{path!r} has a backslash: separate folders with '/'")
    if any(unicodedata.category(c) == "Cc" for c in path):
        raise NotWritableError(f"{path!r} has control characters: give a plain file name")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise NotWritableError(f"{path!r} goes up out of the folder ('..'): give a path "
                               "inside the writable folder")
    rel = posixpath.join(*parts) if parts else ""
    if not rel.endswith(".md") or rel.rsplit("/", 1)[-1] == ".md":
        raise NotWritableError(f"{path!r} is not a markdown note: its name must end in "
                               "'.md'")
    if TRASH_DIR in parts:
        raise NotWritableError(f"{path!r} is in Rifflux's trash ({TRASH_DIR}/): give "
                               "another path (restore_note brings a deleted note back)")
    if not globs.wanted(rel):
        raise NotWritableError(f"{path!r} would not be indexed ({globs.why_excluded(rel)}); "
                               "give a path the index takes, so the note can be found")
    return rel
