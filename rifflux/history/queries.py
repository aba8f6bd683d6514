"""The history's answers, once for every surface: a search over commits with its
filters, a commit shown whole, and a file's history (every commit that changed it,
following renames, or the ones that last changed a range of its lines)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import anyio

from ..core.filters import bound_seconds
from ..errors import InvalidArgumentError, NotFoundError
from ..history_types import (
    SHORTEST_HASH,
    CommitDetail,
    CommitHit,
    FileHistory,
    HistoryAnswer,
    HistoryRepo,
    PathCommit,
)
from ..query.together import together
from .git import GitError
from .lines import Blames, where
from .rows import HistoryFilters, HistoryRows
from .search import HistorySearch, commit_path, iso, ref

#: The most commits a file's history lists.
MAX_FILE_COMMITS = 1_000


async def repositories(rows: HistoryRows) -> list[dict[str, Any]]:
    return await rows.repositories()


def _listed(repos: list[dict[str, Any]]) -> list[HistoryRepo]:
    return [{"path": r["path"], "git_dir": r["git_dir"], "commits": r["commits"],
             "shallow": r["shallow"], "problem": r["problem"]} for r in repos]


def _paths(given: Sequence[str] | str | None, repos: list[dict[str, Any]],
           roots: list[Path]) -> tuple[str, ...] | None:
    """Paths as commits name them (relative to a repository's top): an absolute path
    under a repository; a relative one as given and under each indexed folder."""
    if given is None:
        return None
    items = [given] if isinstance(given, str) else list(given)
    out: list[str] = []
    for item in items:
        text = os.fspath(item).strip()
        if not text:
            raise InvalidArgumentError("paths holds a blank path: give a file or folder "
                                       "(relative to an indexed folder) or leave it out")
        path = Path(text).expanduser()
        bases = [Path(r["path"]) for r in repos]
        if path.is_absolute():
            out += [path.resolve().relative_to(b).as_posix() for b in bases
                    if path.resolve().is_relative_to(b)]
            continue
        out.append(path.as_posix())
        for root in roots:
            full = (root / path).resolve()
            out += [full.relative_to(b).as_posix() for b in bases if full.is_relative_to(b)]
    return tuple(dict.fromkeys(p.strip("/") or "." for p in out)) if out else ()


def _repo_ids(repo: str | os.PathLike[str] | None,
              repos: list[dict[str, Any]]) -> tuple[int, ...] | None:
    if repo is None:
        return None
    text = os.fspath(repo)
    full = str(Path(text).expanduser().resolve())
    ids = tuple(r["id"] for r in repos if full in (r["path"], r["git_dir"])
                or Path(r["path"]).name == text)
    if not ids:
        known = ", ".join(r["path"] for r in repos) or "none yet"
        raise InvalidArgumentError(f"no indexed repository is {text!r}: give one of "
                                   f"{known} (a work tree, its git directory or its name)")
    return ids


async def search_history(search: HistorySearch, query: str, *, top_k: int, mode: str,
                         paths: Sequence[str] | str | None, author: str | None,
                         since: str | date | None, before: str | date | None,
                         repo: str | os.PathLike[str] | None,
                         problems: list[str]) -> HistoryAnswer:
    rows = search.rows
    lo, hi = bound_seconds("since", since), bound_seconds("before", before)
    author = author.strip() if author and author.strip() else None
    since_s = None if lo is None else int(lo)
    before_s = None if hi is None else int(hi + 0.999)
    found: tuple[list[CommitHit], list[str]] = ([], [])
    repos: list[dict[str, Any]] = []
    if repo is None and paths is None:  # the repositories not needed first: read beside
        filters = HistoryFilters(author=author, since=since_s, before=before_s)

        async def searched() -> None:
            nonlocal found
            if query.strip():
                found = await search.search(query, top_k, mode, filters)

        async def listed() -> None:
            repos.extend(await rows.repositories())

        await together(searched, listed)
    else:
        repos = await rows.repositories()
        roots = [] if paths is None else await rows.roots()  # (a path given: where it is)
        filters = HistoryFilters(repos=_repo_ids(repo, repos),
                                 paths=_paths(paths, repos, roots), author=author,
                                 since=since_s, before=before_s)
        if query.strip():
            found = await search.search(query, top_k, mode, filters)
    hits, notes = found
    said = [*problems, *notes]
    if not repos:
        said.append("no indexed folder is in a git repository: there is no history to search")
    said += [r["problem"] for r in repos if r["problem"] and r["problem"] not in said]
    said += [f"{r['path']} is a shallow clone: only the history it holds is searched"
             for r in repos if r["shallow"]]
    if not hits and query.strip() and not said:  # (an empty list says why)
        given = [name for name, value in (("repo", repo), ("paths", paths), ("author", author),
                                          ("since", since), ("before", before)) if value]
        said.append(f"no commit matched within these filters ({', '.join(given)}): relax "
                    "them, or search without them" if given else
                    "no commit matched: try other words")
    return {"results": hits, "mode": mode, "repositories": _listed(repos),
            "pending_embeddings": 0, "problems": said}


async def show_commit(rows: HistoryRows, commit: str, *, repo: str | None = None,
                      max_chars: int | None = None) -> CommitDetail:
    text = commit.strip().lower()
    if len(text) < SHORTEST_HASH or any(c not in "0123456789abcdef" for c in text):
        raise InvalidArgumentError(f"{commit!r} is not a commit hash: give at least its "
                                   f"first {SHORTEST_HASH} hexadecimal digits (as "
                                   "search_history's hits show them)")
    repos = await rows.repositories()
    ids = await rows.find(text, _repo_ids(repo, repos))
    if not ids:
        raise NotFoundError(f"no indexed commit starts with {text}: search_history finds "
                            "commits (is its repository's folder indexed, and the commit on "
                            "a branch?)")
    if len(ids) > 1:
        raise InvalidArgumentError(f"more than one commit starts with {text}: give more of "
                                   "its hash")
    row = (await rows.rows(ids))[ids[0]]
    changed = (await rows.paths(ids))[ids[0]]
    change = str(row[8])
    truncated = False
    if max_chars is not None and len(change) > max_chars:
        change, truncated = change[:max_chars], True
    return {**ref(row), "parents": str(row[10]).split(), "committer": str(row[11]),
            "committer_email": str(row[12]), "body": str(row[9]),
            "paths": [commit_path(p) for p in changed], "change": change,
            "cut": bool(row[13]), "truncated": truncated}


async def file_history(rows: HistoryRows, blames: Blames, path: str | os.PathLike[str],
                       start_line: int | None, end_line: int | None,
                       *, limit: int = MAX_FILE_COMMITS) -> FileHistory:
    full = await _file(rows, path)
    ranged = start_line is not None or end_line is not None
    if ranged:
        start = start_line or 1
        end = end_line or start
        if start < 1 or end < start:
            raise InvalidArgumentError(f"lines {start_line}..{end_line}: give 1 <= "
                                       "start_line <= end_line")
    try:
        top, rel = await anyio.to_thread.run_sync(where, full)
    except GitError:
        return {"path": str(full), "repo": None, "start_line": start_line,
                "end_line": end_line, "commits": [],
                "problems": [f"{full} is not in a git repository: it has no history"]}
    if ranged:
        try:
            blamed = await anyio.to_thread.run_sync(blames.range, top, rel, start, end)
        except GitError as exc:
            raise InvalidArgumentError(f"cannot read the history of lines {start}..{end} "
                                       f"of {full}: {exc}") from exc
        commits: list[PathCommit] = [{
            "hash": b.hash, "short": b.hash[:10], "repo": str(top), "title": b.title,
            "author": b.author, "author_email": b.author_email, "date": iso(b.author_time),
            "committed": iso(b.commit_time), "path": b.path or rel, "change": "modified",
            "old_path": None, "lines": sorted(b.lines)} for b in blamed]
        return {"path": str(full), "repo": str(top), "start_line": start, "end_line": end,
                "commits": commits, "problems": []}
    repos = await rows.repositories()
    repo = next((r for r in repos if Path(r["path"]) == top), None)
    if repo is None:  # (another work tree of a repository: the same commits)
        common = await anyio.to_thread.run_sync(_common_dir, top)
        repo = next((r for r in repos if r["git_dir"] == common), None)
    if repo is None:
        return {"path": str(full), "repo": str(top), "start_line": None, "end_line": None,
                "commits": [], "problems": [f"the history of {top} is not indexed (yet)"]}
    touched = await rows.touching(repo["id"], rel, limit)
    found = await rows.rows([t[0] for t in touched])
    out: list[PathCommit] = [
        {**ref(found[cid]), "path": p, "change": change, "old_path": old, "lines": None}
        for cid, p, change, old in touched if cid in found]
    return {"path": str(full), "repo": str(top), "start_line": None, "end_line": None,
            "commits": out, "problems": [repo["problem"]] if repo["problem"] else []}


def _common_dir(top: Path) -> str:
    from .git import git

    out = git(top, "rev-parse", "--path-format=absolute", "--git-common-dir")
    return str(Path(out.decode("utf-8", "replace").strip()).resolve())


async def _file(rows: HistoryRows, path: str | os.PathLike[str]) -> Path:
    """An indexed file's path on disk: absolute (in an indexed folder, or in a repository
    whose history is indexed), or relative to an indexed folder."""
    roots = await rows.roots()
    trees = [Path(r["path"]) for r in await rows.repositories()]
    found = await anyio.to_thread.run_sync(_locate, os.fspath(path), roots, trees)
    if found is None:
        raise NotFoundError(f"{os.fspath(path)} is not a file in an indexed folder or "
                            "repository: give its path as a search hit names it (relative "
                            "to its folder) or absolute")
    return found


def _locate(path: str, roots: list[Path], trees: list[Path]) -> Path | None:
    given = Path(path).expanduser()
    if given.is_absolute():  # (the history of any other file on the machine is not this
        # index's to tell, and a page's request may ask for it)
        inside = any(given.resolve().is_relative_to(top) for top in (*roots, *trees))
        return given if inside and given.exists() else None
    return next((root / given for root in roots if (root / given).exists()), None)
