"""``rifflux search``: the library's answer (``rifflux.answers``) in the command line's
words, the hits drawn for a terminal or written as plain lines, what the answer says of
itself on stderr, and the exit code (1: no results).

A search by words alone, near no note, on an SQLite index is answered directly
(``search_directly``: ``rifflux.direct``, no actors, no event loop); every other one
opens ``Rifflux`` (``search``). Both ask, answer and print with the same functions."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..answers import Searched, Words, search_answer
from ..core.filters import make_filters
from ..exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from .common import check_index, count, note_path, require_index, write_json
from .entry import CommandError
from .remote import frontmatter_pairs
from .results import print_search

if TYPE_CHECKING:
    from ..answers import Answered
    from ..api import Rifflux
    from ..config import Settings
    from ..direct import DirectIndex
    from ..types import SearchResult

__all__ = ["search", "search_directly", "takes_directly"]


async def search(args: argparse.Namespace, settings: Settings) -> int:
    from ..api import Rifflux  # (the actors: a search answered directly goes without them)

    query = _query(args)
    await require_index(settings)
    filters = _filters(args)
    async with Rifflux(settings=settings) as rf:
        if args.near:
            filters["near"] = await note_path(rf, args.near, args.root)
        results, answered = await _answered(rf, query, args, filters,
                                            embedding=lambda: _embedding(rf))
    return _said(args, results, answered)


def takes_directly(args: argparse.Namespace) -> bool:
    """Whether ``search_directly`` can answer these arguments: by words alone, near no
    note (which the library finds as a reading command names it), without a hypothesis
    (which the library refuses for a search by words, saying why)."""
    return args.mode == "lexical" and not args.near and args.hypothesis is None


async def search_directly(args: argparse.Namespace, settings: Settings,
                          index: DirectIndex) -> int:
    """``search``, answered by ``index`` (``takes_directly``): the same checks in the same
    order, the same answer."""
    query = _query(args)
    check_index(settings)
    results, answered = await _answered(index, query, args, _filters(args),
                                        embedding=_no_embedding)
    return _said(args, results, answered)


def _query(args: argparse.Namespace) -> str:
    query = " ".join(args.query).strip()
    if not query:
        raise CommandError("the query is empty: give words to search for, e.g. "
                           "`rifflux search configure the watcher`", EXIT_USAGE)
    return query


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    return {"paths": args.path_globs, "root": args.root, "tags": args.tags,
            "frontmatter": frontmatter_pairs(args.frontmatter),
            "modified_after": args.since, "modified_before": args.before,
            "near": args.near, "depth": args.depth, "kinds": args.kinds, "lang": args.lang}


async def _answered(index: Searched, query: str, args: argparse.Namespace,
                    filters: dict[str, Any], *,
                    embedding: Callable[[], Awaitable[int | None]],
                    ) -> tuple[list[SearchResult], Answered]:
    """The hits, and the answer the command prints (``embedding``: the process embedding
    the texts still without a vector, asked only when there are some)."""
    applied = make_filters(**filters)  # (once: for the search and its explain)
    results = await index.search_filtered(query, applied, args.top_k, args.mode,
                                          max_per_file=args.max_per_file, explain=args.explain,
                                          content="snippet" if args.snippets else "full",
                                          duplicates=args.duplicates,
                                          hypothesis=args.hypothesis,
                                          rerank=args.rerank_search)
    embedder = await embedding() if index.pending_embeddings() else None
    answered = await search_answer(index, query, args.mode, results, filters,
                                   words=_words(embedder), explain=args.explain,
                                   applied=applied, hypothesis=args.hypothesis,
                                   rerank=args.rerank_search)
    return results, answered


async def _embedding(rf: Rifflux) -> int | None:
    """The process embedding the texts without a vector, if another one is."""
    return next((p["pid"] for p in (await rf.status())["processes"]
                 if "embedder" in p["roles"]), None)


async def _no_embedding() -> int | None:
    return None  # (a direct read loads no model: it never says texts lack vectors)


def _said(args: argparse.Namespace, results: list[SearchResult], answered: Answered) -> int:
    """The answer on stdout (JSON, or the hits), what it says of itself on stderr, and the
    exit code."""
    answer = answered.answer
    if args.json:
        write_json(answer)
    else:
        print_search(results, answer.get("explain"))
    if answered.pending is not None:
        sys.stderr.write(f"rifflux: {answered.pending}\n")
    if answered.languages is not None:
        sys.stderr.write(f"rifflux: {answered.languages}\n")
    if answered.condition is not None:
        sys.stderr.write(f"rifflux: {answered.condition}\n")
    if answered.semantic is not None:
        sys.stderr.write(f"rifflux: {answered.semantic}\n")
    if answered.reason is not None:
        sys.stderr.write(f"rifflux: {'no results: ' if not results else ''}{answered.reason}\n")
    if answered.rerank is not None:
        sys.stderr.write(f"rifflux: {answered.rerank}\n")
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
