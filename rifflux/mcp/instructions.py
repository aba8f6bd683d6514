"""What the server tells a client at ``initialize``: a few lines on how to use the tools,
and the indexed folders with their sizes as they were at start.

Standard library only: the front (``_fast_start.front``) answers ``initialize`` before
the SDK loads, with the snapshot's instructions and this process's ``folders`` line;
the SDK's server is built with the same line (``server.build_server(folders=...)``), so
that both answer alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["BASE", "NOTES", "folders_line", "folders_of", "joined"]

BASE = """\
Rifflux searches the user's local markdown (notes, docs, READMEs) offline.
Start with search_rifflux (content='snippet' for a first look); narrow it with paths,
root, tags, dates or near; read on with get_chunk or get_file (exact lines).
get_links and get_neighbors follow links between notes; recent lists what changed.
reindex (an absolute path) indexes a folder; index_status says what is indexed."""
NOTES = """
Notes: write_note records what you learned in the writable folder; edit_note changes
one part (pass if_match, the sha256 you last read); move_note renames it and fixes
the links to it; delete_note moves it to the trash. It is searchable on return."""

#: The folders named; past these, how many more.
_NAMED = 5


def folders_line(roots: Sequence[tuple[str, int]] | None) -> str:
    """The indexed folders and their files, in one line (None: they could not be read)."""
    if roots is None:
        return "index_status lists the indexed folders."
    if not roots:
        return "Nothing is indexed yet: call reindex with a folder's absolute path."
    named = ", ".join(f"{path} ({files:,} file{'' if files == 1 else 's'})"
                      for path, files in roots[:_NAMED])
    more = len(roots) - _NAMED
    return f"Indexed: {named}" + (f", and {more} more (index_status lists them)."
                                  if more > 0 else ".")


def folders_of(db_path: object) -> str:
    """``folders_line`` of an index, read with the standard library (an SQLite file; a
    PostgreSQL index is not read here: its folders are index_status's to say)."""
    if not isinstance(db_path, Path):
        return folders_line(None)
    from ..store.sqlite.glance import root_sizes

    return folders_line(root_sizes(db_path))


def joined(instructions: str, folders: str | None) -> str:
    """The instructions with the folders line (the way both the front and the SDK put it)."""
    return f"{instructions}\n{folders}" if folders else instructions
