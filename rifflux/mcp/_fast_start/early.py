"""Searches answered before the MCP SDK has loaded.

The front answers the handshake from a snapshot within milliseconds, but the SDK
takes half a second or more to import, and an agent's first question usually
comes right after ``initialize``. So the front also takes the ``search_rifflux``
calls whose arguments the tool's published schema accepts as they are
(``taken.early_search``), while ``rifflux mcp`` opens the index (the library alone: no
SDK, no pydantic) and imports the SDK in a worker thread. ``EarlySearches`` answers
them with the tool's own function (``mcp.searching.search``, on the server's own state:
the same instance, reindex throttle and other indexes the SDK's server goes on with),
and encodes the result or the error with the SDK path's own functions (``results``).
Any failure is that call's error: the server goes on. A ``notifications/cancelled``
for a call taken cancels it, and it is not answered (as the SDK does). If the index
cannot open, the calls taken go to the SDK, whose server says why.
"""

from __future__ import annotations

import json
import logging
from contextlib import AsyncExitStack
from importlib import import_module
from typing import Any

import anyio
import anyio.to_thread

from ...config import Settings
from ...errors import RiffluxError
from ...loading import in_daemon_thread
from ..results import tool_error, tool_result, unexpected
from ..searching import ServerState, search
from .front import CANCELLED, Front, Inbound

__all__ = ["EarlySearches", "serve_with_early_searches"]

logger = logging.getLogger(__name__)

#: How long the model's warm-up and the SDK's import wait for a first search to answer.
_FIRST_CALL_WAIT = 0.05
#: How long the SDK's import waits for the model's warm-up (which goes on after that).
_SDK_WAITS_FOR_MODEL = 1.5


class EarlySearches:
    """Answers the calls the front took (``Front.early``), and cancels those it is told to,
    until no more can come (None)."""

    def __init__(self, front: Front, state: ServerState) -> None:
        self._front, self._state = front, state
        #: The calls being answered, by request id.
        self._running: dict[Any, anyio.CancelScope] = {}
        #: Set once every call taken has been answered (or abandoned).
        self.done = anyio.Event()
        #: Set once the first call taken has been answered.
        self.answered_first = anyio.Event()

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                while (item := await anyio.to_thread.run_sync(
                        self._front.early.get, abandon_on_cancel=True)) is not None:
                    if item.answered == CANCELLED:
                        self._cancel(item.request_id)
                        continue
                    scope = anyio.CancelScope()
                    self._running[item.request_id] = scope
                    tg.start_soon(self._answer, item, scope)
        finally:
            self.done.set()

    def _cancel(self, request_id: Any) -> None:
        scope = self._running.get(request_id)
        if scope is not None:
            logger.debug("search_rifflux %r cancelled by the client", request_id)
            scope.cancel()

    async def _answer(self, item: Inbound, scope: anyio.CancelScope) -> None:
        result: dict[str, Any] | None = None
        try:
            with scope:
                result = await self._result(item)
        finally:
            del self._running[item.request_id]
            self._front.settle(item.request_id)
        if result is None:  # cancelled by the client: never answered (MCP's rule)
            return
        line = json.dumps({"jsonrpc": "2.0", "id": item.request_id, "result": result},
                          ensure_ascii=False, separators=(",", ":"))
        try:
            await anyio.to_thread.run_sync(self._front.wire.send, line)
        except (BrokenPipeError, ConnectionResetError, ValueError):
            logger.info("the MCP client went away before an answer")
        finally:
            self.answered_first.set()

    async def _result(self, item: Inbound) -> dict[str, Any]:
        """The call's result, or its error, as the SDK's server encodes them."""
        logger.debug("answering search_rifflux %r before the MCP SDK", item.request_id)
        try:
            args = json.loads(item.line)["params"].get("arguments", {})
            return tool_result(await search(self._state, **args))
        except RiffluxError as exc:
            return tool_error(str(exc))
        except Exception as exc:  # one bad call must not end the server: it is answered
            logger.exception("search_rifflux %r failed before the MCP SDK", item.request_id)
            return tool_error(unexpected("search_rifflux", exc))


def _import_handoff() -> Any:
    return import_module("rifflux.mcp._fast_start.handoff")


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def serve_with_early_searches(settings: Settings, front: Front) -> None:
    """``rifflux mcp``'s server: the index opened first and searches answered from then
    on; once the first is answered, the model warms up, then the SDK imports (in a daemon
    thread) and serves behind the front (started with ``take_early``)."""
    from ...api import Rifflux
    from ..auto_reindex import AutoReindex
    from ..other_indexes import OtherIndexes

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
        others = await stack.enter_async_context(OtherIndexes(settings))
        early = EarlySearches(front, ServerState(opened=rf, settings=settings,
                                                 auto_reindex=auto, others=others))
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
                                                auto_reindex=auto, others=others,
                                                early_done=early.done)
            finally:
                front.end_early()  # (ends early.run, if the hand-off did not)
                tg.cancel_scope.cancel()  # (a warm-up still running: nothing waits for it)
