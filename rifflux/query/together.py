"""Calls run side by side that fail as one of them alone would: a hybrid search's two
branches (chunks' and commits'), a history search's reads of its hits' rows and paths,
a search beside the list of repositories."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio

from ..errors import RiffluxError


async def together(*calls: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """The calls side by side (one alone: awaited). When some fail, one failure is
    raised as the call alone would raise it, the group it came in as its cause:
    Rifflux's own first (an index away, a query refused: what a caller can act on and
    a surface can word), else the first."""
    if len(calls) == 1:
        await calls[0]()
        return
    try:
        async with anyio.create_task_group() as tg:
            for call in calls:
                tg.start_soon(call)
    except ExceptionGroup as group:
        leaves = _leaves(group)
        own = [e for e in leaves if isinstance(e, RiffluxError)]
        raise (own or leaves)[0] from group


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The exceptions of a group and of the groups inside it."""
    return [leaf for e in group.exceptions
            for leaf in (_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])]
