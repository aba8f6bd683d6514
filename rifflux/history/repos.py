"""Which git repositories hold the indexed folders, and where their refs are.

A folder's repository is found by walking up to its ``.git`` (a directory, or a file
naming the git directory of a worktree or a submodule), as git does; the submodules
inside an indexed folder are repositories of their own. A repository is known by its
common git directory, so that a worktree and its main tree are one history. A folder
outside any repository has no history. Standard library only, synchronous (run in a
worker thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .git import GitError, git


@dataclass(frozen=True, slots=True)
class Repository:
    #: The common git directory (shared by every worktree): the repository's name.
    git_dir: Path
    #: A work tree (the first indexed folder's): paths in commits are relative to it.
    worktree: Path
    shallow: bool


def find_repositories(roots: Iterable[Path], left_out: Callable[[Path, Path], bool] | None
                      = None) -> tuple[list[Repository], list[str]]:
    """The repositories holding ``roots`` and the submodules inside them, each once;
    and a problem line for each root whose repository git cannot read. ``left_out(root,
    worktree)``: whether the ignore rules leave a repository out (``history.ignored``)."""
    found: dict[Path, Repository] = {}
    problems: list[str] = []
    for root in roots:
        if _enclosing_git(root) is None:
            continue
        try:
            repo = _repository(root)
        except GitError as exc:
            problems.append(f"history of {root}: git cannot read its repository ({exc})")
            continue
        if left_out is None or not left_out(root, repo.worktree):
            found.setdefault(repo.git_dir, repo)
        for sub in _submodules(repo.worktree, root):
            if left_out is not None and left_out(root, sub):
                continue
            try:
                subrepo = _repository(sub)
            except GitError as exc:
                problems.append(f"history of the submodule {sub}: {exc}")
                continue
            found.setdefault(subrepo.git_dir, subrepo)
    return list(found.values()), problems


def _enclosing_git(path: Path) -> Path | None:
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _repository(folder: Path) -> Repository:
    out = git(folder, "rev-parse", "--path-format=absolute", "--show-toplevel",
              "--git-common-dir", "--is-shallow-repository").decode("utf-8", "replace")
    top, common, shallow = out.splitlines()[:3]
    return Repository(git_dir=Path(common).resolve(), worktree=Path(top).resolve(),
                      shallow=shallow.strip() == "true")


def _submodules(worktree: Path, root: Path) -> list[Path]:
    """The checked-out submodules inside ``root`` (``.gitmodules`` names them)."""
    if not (worktree / ".gitmodules").is_file():
        return []
    try:
        out = git(worktree, "submodule", "--quiet", "foreach", "--recursive",
                  "echo $toplevel/$sm_path").decode("utf-8", "replace")
    except GitError:
        return []
    subs = [Path(line).resolve() for line in out.splitlines() if line.strip()]
    return [s for s in subs if s.is_relative_to(root) and (s / ".git").exists()]


def tips(repo: Repository) -> list[str]:
    """The commits the branches point at (and HEAD, detached or not), each once."""
    out = git(repo.worktree, "for-each-ref", "--format=%(objectname)", "refs/heads")
    found = dict.fromkeys(out.decode("ascii", "replace").split())
    try:
        found.update(dict.fromkeys(git(repo.worktree, "rev-parse", "--verify", "-q",
                                       "HEAD^{commit}").decode("ascii").split()))
    except GitError:
        pass  # (an unborn branch: no commit yet)
    return list(found)


def ref_files(repo: Repository) -> list[Path]:
    """What moves when a ref does: HEAD (of every worktree), refs/, packed-refs."""
    files = [repo.git_dir / "HEAD", repo.git_dir / "refs", repo.git_dir / "packed-refs"]
    worktrees = repo.git_dir / "worktrees"
    if worktrees.is_dir():
        files += [w / "HEAD" for w in worktrees.iterdir()]
    return files
