"""``rifflux search``: the library's answer (``rifflux.answers``) in the command line's
words, the hits drawn for a terminal or written as plain lines, what the answer says of
itself on stderr, and the exit code (1: no results)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..answers import Words, search_answer
from ..api import Rifflux
from ..config import Settings
from ..core.filters import make_filters
from ..exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .common import count, note_path, require_index, write_json
from .entry import CommandError
from .remote import frontmatter_pairs
from .results import print_search

__all__ = ["search"]


async def search(args: argparse.Namespace, settings: Settings) -> int:
    query = " ".join(args.query).strip()
    if not query:
        raise CommandError("the query is empty: give words to search for, e.g. "
                           "`rifflux search configure the watcher`", EXIT_USAGE)
    await require_index(settings)
    filters: dict[str, Any] = {"paths": args.path_globs, "root": args.root, "tags": args.tags,
                               "frontmatter": frontmatter_pairs(args.frontmatter),
                               "modified_after": args.since, "modified_before": args.before,
                               "near": args.near, "depth": args.depth, "kinds": args.kinds,
                               "lang": args.lang}
    async with Rifflux(settings=settings) as rf:
        if args.near:
            filters["near"] = await note_path(rf, args.near, args.root)
        applied = make_filters(**filters)  # (once: for the search and its explain)
        results = await rf.search_filtered(query, applied, args.top_k, args.mode,
                                           max_per_file=args.max_per_file, explain=args.explain,
                                           content="snippet" if args.snippets else "full",
                                           duplicates=args.duplicates)
        embedding = rf.pending_embeddings() and next(
            (p["pid"] for p in (await rf.status())["processes"] if "embedder" in p["roles"]),
            None)
        answered = await search_answer(rf, query, args.mode, results, filters,
                                       words=_words(embedding), explain=args.explain,
                                       applied=applied)
    answer = answered.answer
    if args.json:
        write_json(answer)
    else:
        print_search(results, answer.get("explain"))
    if answered.pending is not None:
        sys.stderr.write(f"rifflux: {answered.pending}\n")
    if answered.condition is not None:
        sys.stderr.write(f"rifflux: {answered.condition}\n")
    if answered.reason is not None:
        sys.stderr.write(f"rifflux: {'no results: ' if not results else ''}{answered.reason}\n")
    return EXIT_OK if results else EXIT_FAILURE


def _words(embedding: int | None) -> Words:
    """What ``rifflux search`` says (on stderr, and as the answer's ``hint``); ``embedding``:
    the process embedding the texts still without a vector, if another one is."""
    return Words(
        why={
            "no files": "the index holds no files yet: `rifflux index PATH` first",
            "rebuilt": "the index was damaged and has started anew (`rifflux status` says "
                       "when and what it held): its folders are being indexed again, or "
                       "`rifflux index PATH`",
            "filters": "nothing matched within these filters: relax them, or search without "
                       "them",
            "no words": "the query has no searchable word: give words",
            "no match": "nothing matched: try other words or --mode semantic; if the files "
                        "changed, `rifflux index` their folder",
            "meaning only": "no chunk contains these words: every hit is only close in "
                            "meaning (semantic); check the spelling, or try the words the "
                            "notes would use",
            "meaning only, sentence": "no chunk contains the words of this sentence: every "
                                      "hit is only close in meaning (semantic); try its key "
                                      "words on their own, separated by spaces",
        },
        pending=lambda n: (
            f"{count(n, 'chunk')} without a vector yet: semantic results cover part of the "
            "index (" + (f"process {embedding} is embedding them now" if embedding else
                         "`rifflux index` on their folder, or a running `rifflux watch` or "
                         "MCP server, embeds them") + ")"),
        read_hit="`rifflux show CHUNK_ID`",
        names={"top_k": "--top-k", "max_per_file": "--max-per-file",
               "max_chars": "max_chars", "snippet": "--snippets"},
    )
