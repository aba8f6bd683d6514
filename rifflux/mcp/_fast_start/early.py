"""Searches answered before the MCP SDK has loaded.

The front answers the handshake from a snapshot within milliseconds, but the SDK
takes half a second or more to import, and an agent's first question usually
comes right after ``initialize``. So the front also takes plain ``search_rifflux``
calls (``front.early_search``: a string ``query`` and, of the others, ``top_k``,
``mode``, ``content``, ``max_per_file``, ``explain`` and ``max_chars`` of their
exact JSON types and within their bounds) until the hand-off, while ``rifflux
mcp`` opens the index (the library alone: no SDK, no pydantic) and imports the SDK
in a worker thread. ``EarlySearches`` answers them exactly as the tool does
(``mcp.tools.search_rifflux``: the same library calls and answer, ``answers`` and
``budget``, the same ``AutoReindex``), formatted as the SDK formats a tool's result.
Anything else (filters, ``db_path``, a value the SDK would convert or refuse) waits
for the SDK, as every call did before; if the index cannot open, the calls taken go
to the SDK, whose server says why.
"""

from __future__ import annotations

import json
import logging
from contextlib import AsyncExitStack
from importlib import import_module
from typing import Any

import anyio
import anyio.to_thread

from ...api import Rifflux
from ...config import Settings
from ...core.filters import make_filters
from ...errors import RiffluxError
from ...loading import in_daemon_thread
from ...types import Mode
from ..answers import search_answer
from ..auto_reindex import AutoReindex
from ..budget import DEFAULT_MAX_CHARS, answer_text
from .front import Front, Inbound

__all__ = ["EarlySearches", "serve_with_early_searches"]

logger = logging.getLogger(__name__)

#: How long the model's warm-up and the SDK's import wait for a first search to answer.
_FIRST_CALL_WAIT = 0.05
#: How long the SDK's import waits for the model's warm-up (which goes on after that).
_SDK_WAITS_FOR_MODEL = 1.5


class EarlySearches:
    """Answers the calls the front took (``Front.early``) until it has handed off."""

    def __init__(self, front: Front, rf: Rifflux, auto: AutoReindex) -> None:
        self._front, self._rf, self._auto = front, rf, auto
        #: Set once every call taken has been answered (or abandoned).
        self.done = anyio.Event()
        #: Set once the first call taken has been answered.
        self.answered_first = anyio.Event()

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                while (item := await anyio.to_thread.run_sync(
                        self._front.early.get, abandon_on_cancel=True)) is not None:
                    tg.start_soon(self._answer, item)
        finally:
            self.done.set()

    async def _answer(self, item: Inbound) -> None:
        args = json.loads(item.line)["params"]["arguments"]
        logger.debug("answering search_rifflux %r before the MCP SDK", item.request_id)
        result: dict[str, Any]
        try:
            text = answer_text(await self._search(**args))
            # (as the SDK writes a tool's dict: its text twin, then the object itself)
            result = {"content": [{"text": text, "type": "text"}], "isError": False,
                      "structuredContent": json.loads(text)}
        except RiffluxError as exc:  # as the tool's error result (tools._tool_errors)
            result = {"content": [{"text": str(exc), "type": "text"}], "isError": True}
        line = json.dumps({"jsonrpc": "2.0", "id": item.request_id, "result": result},
                          ensure_ascii=False, separators=(",", ":"))
        try:
            await anyio.to_thread.run_sync(self._front.wire.send, line)
        except (BrokenPipeError, ConnectionResetError, ValueError):
            logger.info("the MCP client went away before an answer")
        finally:
            self.answered_first.set()

    async def _search(self, query: str, top_k: int = 10, mode: Mode = "hybrid",
                      content: str = "full", max_per_file: int | None = None,
                      explain: bool = False, max_chars: int = DEFAULT_MAX_CHARS) -> Any:
        """``mcp.tools.search_rifflux`` without filters or ``db_path``."""
        filters: dict[str, Any] = {
            "paths": None, "root": None, "tags": None, "frontmatter": None,
            "modified_after": None, "modified_before": None, "near": None, "depth": None}
        applied = make_filters(**filters)
        results = await self._rf.search_filtered(query, applied, top_k, mode,
                                                 max_per_file=max_per_file, content="full",
                                                 explain=explain)
        auto = await self._auto.after_search()
        return await search_answer(self._rf, query, mode, results, filters, explain=explain,
                                   max_chars=max_chars, content=content, applied=applied,
                                   auto_reindex=auto)


def _import_handoff() -> Any:
    return import_module("rifflux.mcp._fast_start.handoff")


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def serve_with_early_searches(settings: Settings, front: Front) -> None:
    """``rifflux mcp``'s server: the index opened first and searches answered from then
    on; once the first is answered, the model warms up, then the SDK imports (in a daemon
    thread) and serves behind the front (started with ``take_early``)."""
    async with AsyncExitStack() as stack:
        try:  # (the model warms up below, once the first search has had the cores)
            rf = await stack.enter_async_context(
                Rifflux(settings=settings.with_overrides(model_warmup=False)))
        except RiffluxError:  # the SDK's server opens it again, and says why to every tool
            front.give_back_early()
            await _import_handoff().serve_after_front(settings, front)
            return
        logger.debug("index open; answering searches until the MCP SDK has loaded")
        auto = AutoReindex(rf=rf, enabled=settings.auto_reindex_on_search,
                           min_interval=settings.auto_reindex_min_interval,
                           watch_paths=settings.watch_paths)
        early = EarlySearches(front, rf, auto)
        async with anyio.create_task_group() as tg:
            tg.start_soon(early.run, name="rifflux.mcp.early")
            handoff: Any = None
            with anyio.CancelScope() as loads:  # (ended when the client leaves meanwhile)
                tg.start_soon(_cancel_when, early.done, loads)
                # The first question (usually in the queue already) is answered before
                # the model's warm-up and the SDK's import take the cores.
                with anyio.move_on_after(_FIRST_CALL_WAIT):
                    await early.answered_first.wait()
                if settings.model_warmup:
                    # The model first: searches need it and not the SDK (both at once slow
                    # each other down, and the searches answered meanwhile).
                    with anyio.move_on_after(_SDK_WAITS_FOR_MODEL):
                        await rf.wait_for_model()
                handoff = await in_daemon_thread(_import_handoff, "rifflux-mcp-sdk-import")
            try:
                if handoff is None:  # the client has gone: no SDK to wait for, no model
                    front.close()
                    return
                await handoff.serve_after_front(settings, front, rifflux=rf,
                                                auto_reindex=auto, early_done=early.done)
            finally:
                front.early.put(None)  # (ends early.run, if the hand-off did not)
                tg.cancel_scope.cancel()  # (a warm-up still running: nothing waits for it)
