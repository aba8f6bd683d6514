"""Which repositories the ignore rules leave out of the history.

The rules are the ones that choose the files (``core.scan``, ``core.ignore``), asked of
a repository found for an indexed folder:

- a repository whose folder the exclude globs or the ignore files leave out (a
  submodule or a repository nested in an indexed folder, under ``vendor/`` in a
  ``.gitignore``, say) has none of its files indexed, and so none of its history;
- a repository whose ``.git`` an ignore file names (``/.git`` in a
  ``.riffluxignore``: that folder's repository; ``.git``: every repository at or below
  it, submodules included, as git reads a pattern without a slash; git never tracks
  ``.git``, so the pattern means nothing else) keeps its notes indexed and its history
  out. The ignore files asked are those of
  the indexed folder and of the folders between it and the ``.git``; for a repository
  holding the indexed folder (its ``.git`` above the folder) the folder's own ignore
  files are asked about ``.git``: a ``.riffluxignore`` with ``.git`` at the top of an
  indexed folder leaves its history out wherever the repository's top is.

``--no-ignore-files`` leaves only the globs' rule. Standard library and ``core`` only,
synchronous (run in a worker thread with the repositories' search).
"""

from __future__ import annotations

from pathlib import Path

from ..core.ignore import IgnoreFiles
from ..core.scan import Globs


def left_out(root: Path, worktree: Path, globs: Globs, *, use_ignore_files: bool) -> bool:
    """Whether the rules of the indexed folder ``root`` leave the history of the
    repository whose work tree is ``worktree`` out."""
    if worktree.is_relative_to(root) and worktree != root:
        rel = worktree.relative_to(root).as_posix()
        parts = rel.split("/")
        if any(globs.excluded_dir("/".join(parts[:i])) for i in range(1, len(parts) + 1)):
            return True  # (its files are not indexed: nor is its history)
        git = f"{rel}/.git"
    else:
        git = ".git"
    if not use_ignore_files:
        return False
    # (asked of a file inside it: a folder on the way that is ignored leaves everything
    # inside out, so both ``.git`` and ``.git/`` patterns, and an ignored folder, count)
    return IgnoreFiles(str(root)).ignored(f"{git}/HEAD")
