"""``rifflux history``: the commits of the indexed folders' repositories that match a
query (``--path``, ``--author``, ``--since``, ``--before``), or the commits that changed
a file or a range of its lines (``--of PATH[:START[-END]]``); and ``rifflux show
COMMIT``'s commit. Each reads what is new in the history first (only that)."""

from __future__ import annotations

import argparse
import re
import sys

from ..api import Rifflux
from ..config import Settings
from ..errors import NotFoundError
from ..exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from ..history_types import CommitDetail, CommitHit, PathCommit
from .common import require_index, write_json
from .entry import CommandError
from .results import out

__all__ = ["history", "show_commit"]

_RANGE = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")


async def history(args: argparse.Namespace, settings: Settings) -> int:
    query = " ".join(args.query).strip()
    if not query and not args.of:
        raise CommandError("give words to search the history for (`rifflux history retry "
                           "policy`), or --of PATH for a file's commits", EXIT_USAGE)
    await require_index(settings)
    async with Rifflux(settings=settings) as rf:
        await rf.wait_for_history()
        if args.of:
            m = _RANGE.match(args.of)
            path, start, end = args.of, None, None
            if m:
                path, start = m["path"], int(m["start"])
                end = int(m["end"]) if m["end"] else start
            found = await rf.history(path, start, end)
            listed, problems = len(found["commits"]), found["problems"]
            if args.json:
                write_json(found)
            else:
                _print_path_commits(found["commits"])
        else:
            answer = await rf.search_history(
                query, top_k=args.top_k, mode=args.mode, paths=args.paths,
                author=args.author, since=args.since, before=args.before, repo=args.repo)
            listed, problems = len(answer["results"]), answer["problems"]
            if args.json:
                write_json(answer)
            else:
                _print_hits(answer["results"])
            if answer["pending_embeddings"]:
                problems = [*problems, f"{answer['pending_embeddings']:,} commits without a "
                            "vector yet: semantic results cover part of the history (a "
                            "running `rifflux watch` or server embeds them)"]
    for problem in problems:
        sys.stderr.write(f"rifflux: {problem}\n")
    return EXIT_OK if listed else EXIT_FAILURE


async def show_commit(commit: str, settings: Settings, *, as_json: bool,
                      missing_ok: bool = False) -> int | None:
    """Print the commit; None when no indexed commit starts so and ``missing_ok`` (the
    hash-like word may name a file or a chunk instead)."""
    async with Rifflux(settings=settings) as rf:
        await rf.wait_for_history()
        try:
            found = await rf.show_commit(commit)
        except NotFoundError:
            if missing_ok:
                return None
            raise
    if as_json:
        write_json(found)
    else:
        _print_commit(found)
    return EXIT_OK


def _head(c: CommitHit | PathCommit | CommitDetail) -> str:
    return f"{c['short']}  {c['date'][:10]}  {c['author']}  {c['title']}"


def _print_hits(hits: list[CommitHit]) -> None:
    lines = out()
    for hit in hits:
        lines.print(_head(hit), style="bold cyan", markup=False)
        for p in hit["paths"][:5]:
            lines.print(f"    {_changed(p['path'], p['change'], p['old_path'])} "
                        f"(+{p['added']} -{p['removed']})", markup=False)
        if hit["paths_total"] > 5:
            lines.print(f"    ... {hit['paths_total'] - 5} more paths", markup=False)
        match = hit["match"]
        if match is not None:
            lines.print(f"    {match['path']} {match['hunk'] or ''}".rstrip(), markup=False)
            for line in match["text"].split("\n"):
                lines.print(f"      {line}", markup=False)


def _print_path_commits(commits: list[PathCommit]) -> None:
    lines = out()
    for c in commits:
        where = _changed(c["path"], c["change"], c["old_path"])
        said = f"  lines {', '.join(map(str, c['lines']))}" if c["lines"] else f"  {where}"
        lines.print(_head(c) + said, markup=False)


def _print_commit(c: CommitDetail) -> None:
    lines = out()
    lines.print(f"commit {c['hash']}", style="bold cyan", markup=False)
    lines.print(f"Author: {c['author']} <{c['author_email']}>  {c['date']}", markup=False)
    lines.print(f"\n    {c['title']}\n", markup=False)
    for line in c["body"].split("\n") if c["body"] else []:
        lines.print(f"    {line}", markup=False)
    for p in c["paths"]:
        lines.print(f"  {_changed(p['path'], p['change'], p['old_path'])} "
                    f"(+{p['added']} -{p['removed']}{', binary' if p['binary'] else ''})",
                    markup=False)
    if c["change"]:
        lines.print("", markup=False)
        lines.print(c["change"], markup=False)
    if c["cut"]:
        lines.print("(the change is longer: the index keeps its beginning; `git show` "
                    "prints it all)", markup=False)


def _changed(path: str, change: str, old: str | None) -> str:
    return f"{old} -> {path} ({change})" if old else f"{path} ({change})"
