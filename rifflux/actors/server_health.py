"""Whether the embedding server answers (``ServerHealth``: what status and the answers'
hints say), and how long to wait before asking it again (``backoff``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

__all__ = ["ServerHealth", "backoff", "wait_or_answer"]

logger = logging.getLogger(__name__)

#: A query does not ask a server that let a request time out this recently (each search
#: would wait for it): its semantic branch says why instead.
_HANG_SECONDS = 10.0
#: The longest wait between two tries of the embedder's.
_MAX_WAIT = 60.0
#: The longest ``Retry-After`` the embedder honours (a longer one: asked again then).
_MOST_ASKED = 600.0


@dataclass(slots=True)
class ServerHealth:
    """Whether the server answered the last request (None: nothing asked yet), what went
    wrong, and since when (Unix time) it has not answered."""

    reachable: bool | None = None
    error: str | None = None
    since: float | None = None
    checked: float | None = None  # (monotonic) when it last answered or failed
    #: (monotonic) when a request last went unanswered within its timeout (None: since
    #: it answered)
    timed_out: float | None = None
    #: Called when it answers again after failing (the model loader waiting to connect,
    #: the embedder waiting to ask again: neither waits out its backoff then).
    listeners: list[Callable[[], None]] = field(default_factory=list)

    def answered(self) -> None:
        if self.reachable is False:
            logger.warning("the embedding server answers again")
            for listener in list(self.listeners):
                listener()
        self.reachable, self.error, self.since, self.timed_out = True, None, None, None
        self.checked = time.monotonic()

    def failed(self, why: str, *, timeout: bool = False) -> None:
        if self.reachable is not False:
            self.since = time.time()
            logger.warning("the embedding server %s", why)
        self.reachable, self.error = False, why
        self.checked = time.monotonic()
        if timeout:
            self.timed_out = self.checked

    def hangs(self) -> bool:
        """Whether a request went unanswered within its timeout in the last
        ``_HANG_SECONDS`` (and none was answered since): a query does not wait for it."""
        return self.timed_out is not None and time.monotonic() - self.timed_out < _HANG_SECONDS


async def wait_or_answer(health: ServerHealth, delay: float) -> None:
    """Until ``delay`` seconds have passed, or the server answers again (found by another
    request: a query, status's check)."""
    back = anyio.Event()
    health.listeners.append(back.set)
    try:
        with anyio.move_on_after(delay):
            await back.wait()
    finally:
        health.listeners.remove(back.set)


def backoff(failures: int, asked: float | None = None) -> float:
    """How long to wait after ``failures`` failed tries in a row before asking the server
    again: 0.5 s, doubled each time, at most a minute; or as long as it asked
    (``Retry-After``), at most ``_MOST_ASKED``."""
    mine = min(_MAX_WAIT, 0.5 * 2 ** max(0, failures - 1)) if failures else 0.0
    return mine if asked is None else max(mine, min(asked, _MOST_ASKED))

