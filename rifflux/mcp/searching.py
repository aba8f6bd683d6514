"""``search_rifflux``'s work, without the SDK: the SDK's tool (``tools.search_rifflux``)
and the searches the front takes before the SDK has loaded (``_fast_start.early``) both
call ``search``, with the server's state (``ServerState``), so that an early answer is
the tool's answer, errors included.

Failures are the library's errors (``RiffluxError``), whose messages say what to do;
each path makes them an error result (``results.tool_error``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from ..answers import search_answer
from ..api import Rifflux
from ..config import Settings
from ..core.filters import make_filters
from ..errors import ClosedError, InvalidArgumentError
from ..limits import DEFAULT_MAX_CHARS
from ..location import DatabaseUrl, IndexLocation, is_database_url
from ..types import Mode, SearchAnswer
from .answers import WORDS
from .auto_reindex import AutoReindex
from .other_indexes import OtherIndexes, file_id

__all__ = ["ServerState", "Subscriptions", "search"]


class Subscriptions(Protocol):
    """Who is told when a note changes (``subscriptions.NoteWatch``)."""

    async def subscribe(self, connection: Any, uri: str) -> None: ...

    def unsubscribe(self, connection: Any, uri: str) -> None: ...


@dataclass(slots=True)
class ServerState:
    """The server's one library instance and its helpers, or, when the index could not
    be opened, why (then every tool answers with that error, and the server stays up for
    the client to read it)."""

    opened: Rifflux | None
    settings: Settings
    auto_reindex: AutoReindex | None
    others: OtherIndexes  # the index files searched by db_path, open read-only
    open_error: str | None = None
    watch: Subscriptions | None = None  # the notes clients subscribed to (resources)

    @property
    def rf(self) -> Rifflux:
        if self.opened is None:
            raise self._not_open()
        return self.opened

    @property
    def auto(self) -> AutoReindex:
        if self.auto_reindex is None:
            raise self._not_open()
        return self.auto_reindex

    def _not_open(self) -> ClosedError:
        return ClosedError(self.open_error or "the index is not open")


async def search(
    state: ServerState, query: str, top_k: int = 10, mode: Mode = "hybrid", *,
    paths: Sequence[str] | None = None, root: str | None = None,
    tags: Sequence[str] | None = None, frontmatter: Mapping[str, Any] | None = None,
    modified_after: str | None = None, modified_before: str | None = None,
    near: str | None = None, depth: int | None = None, kinds: Sequence[str] | None = None,
    lang: Sequence[str] | None = None, max_per_file: int | None = None,
    content: str = "full", explain: bool = False, max_chars: int = DEFAULT_MAX_CHARS,
    db_path: str | None = None, duplicates: str = "collapse", hypothesis: str | None = None,
) -> dict[str, Any]:
    """A ``search_rifflux`` call's answer (its arguments as the tool's input schema
    declares them, checked already)."""
    filters: dict[str, Any] = {
        "paths": paths, "root": root, "tags": tags, "frontmatter": frontmatter,
        "modified_after": modified_after, "modified_before": modified_before,
        "near": near, "depth": depth, "kinds": kinds, "lang": lang}
    other = (await anyio.to_thread.run_sync(_other_db, db_path, state.settings.db_path)
             if db_path else None)
    if other is None:  # (what the search started, once it has answered: after_search)
        return dict(await _answer(state.rf, query, top_k, mode, filters, max_per_file,
                                  content, explain, max_chars, state.auto.after_search,
                                  duplicates, hypothesis))
    enabled = state.auto.enabled

    async def auto() -> dict[str, Any] | None:
        return ({"started": False, "reason": "automatic reindex only runs for the server's "
                                             "own index"} if enabled else None)

    # (a database has no file to name: its URL names it)
    file = (await anyio.to_thread.run_sync(file_id, other) if isinstance(other, Path)
            else (0, 0))
    if file is None:
        raise InvalidArgumentError(
            f"no index at db_path {db_path!r}: give the path of an existing Rifflux index "
            "file, or leave db_path out to search the server's own index")
    async with state.others.use(other, file) as rf:
        return dict(await _answer(rf, query, top_k, mode, filters, max_per_file, content,
                                  explain, max_chars, auto, duplicates, hypothesis))


async def _answer(rf: Rifflux, query: str, top_k: int, mode: Mode, filters: dict[str, Any],
                  max_per_file: int | None, content: str, explain: bool, max_chars: int,
                  auto: Callable[[], Awaitable[dict[str, Any] | None]],
                  duplicates: str, hypothesis: str | None) -> SearchAnswer:
    applied = make_filters(**filters)  # (once: for the search and its explain)
    # contents always: a first look's snippets are sized to its answer (search_answer)
    results = await rf.search_filtered(query, applied, top_k, mode, max_per_file=max_per_file,
                                       content="full", explain=explain, duplicates=duplicates,
                                       hypothesis=hypothesis)
    started = await auto()
    answered = await search_answer(
        rf, query, mode, results, filters, words=WORDS, explain=explain, applied=applied,
        max_chars=max_chars, first_look=content == "snippet",
        extra=None if started is None else {"auto_reindex": started}, hypothesis=hypothesis)
    return answered.answer


def _other_db(db_path: str, own: IndexLocation) -> IndexLocation | None:
    """``db_path`` resolved (a file) or as given (a PostgreSQL URL), unless it is the
    server's own index (None)."""
    other = DatabaseUrl(db_path.strip()) if is_database_url(db_path) else _resolved(db_path)
    if isinstance(own, Path):
        own = _resolved(own)
    return None if other == own else other


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(path).expanduser().resolve()
