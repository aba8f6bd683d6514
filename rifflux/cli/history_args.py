"""``rifflux history``'s arguments (beside ``arguments``, which calls ``add_history``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ..limits import MODES


def add_history(sub: Any, common: argparse.ArgumentParser,
                positive: Callable[[str], int]) -> None:
    p = sub.add_parser("history", parents=[common], help="search the git history",
                       description="Print the commits of the git repositories holding the "
                                   "indexed folders that match the query (their message, "
                                   "the paths they changed, their change): hash, date, "
                                   "author, title, paths and the hunk that matches best. "
                                   "With --of PATH: the commits that changed that file "
                                   "(following renames); PATH:START-END: the commits that "
                                   "last changed those lines (as git blame).")
    p.add_argument("query", nargs="*", help="words to search for (no quotes needed)")
    p.add_argument("--mode", choices=MODES, default="hybrid",
                   help="hybrid (default), lexical (exact words) or semantic (meaning)")
    p.add_argument("--top-k", type=positive, default=10, metavar="N",
                   help="number of commits (default 10)")
    p.add_argument("--path", action="append", metavar="PATH", dest="paths",
                   help="only commits that changed this file or something under this folder "
                        "(relative to an indexed folder, or absolute); repeatable")
    p.add_argument("--author", metavar="WHO",
                   help="only commits whose author's name or email holds WHO (any case)")
    p.add_argument("--since", metavar="WHEN",
                   help="only commits made at or after WHEN: 2026-11-01, 2026-11-01T09:30, "
                        "or an age: 7d, 2w, 3m, 1y")
    p.add_argument("--before", metavar="WHEN", help="only commits made before WHEN")
    p.add_argument("--repo", metavar="DIR",
                   help="only this repository (its work tree, or its folder's name)")
    p.add_argument("--of", metavar="PATH[:START[-END]]",
                   help="the commits that changed this file, or last changed these lines")
    p.add_argument("--json", action="store_true",
                   help="print the search_history JSON object (or the file's history)")
