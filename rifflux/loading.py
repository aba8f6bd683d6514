"""Loads in the background: a daemon thread whose end the event loop awaits, and the
interpreter's thread switching while it runs.

A process never waits at exit for a load that nothing used (the embedding model, the
MCP SDK's import): anyio's worker threads are joined at exit, a daemon thread is not.
Ending while the model loads must not abort the process either: the command line ends
with ``os._exit`` while a load runs (``running``; ``rifflux.exits.end``), and any other
process waits at most for the native step in flight (``rifflux.native``).

A load in a worker thread (the embedding model, the MCP SDK's import) runs Python
code for hundreds of milliseconds. Meanwhile a lexical search on the event loop
hops between threads a few times (its SQLite statements run on a connection's
thread), and at each hop waits for the interpreter's lock for up to the switch
interval, 5 ms by default: a 3 ms search would take several times as long. While
any load runs, the interval is 0.5 ms instead.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["in_daemon_thread", "loading", "running"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

#: The switch interval while a load runs.
LOADING_SWITCH_INTERVAL = 0.0005

_lock = threading.Lock()
_running = 0
_default = sys.getswitchinterval()


@contextmanager
def loading() -> Iterator[None]:
    """While the block runs (in any thread), threads switch every 0.5 ms."""
    _count(+1)
    try:
        yield
    finally:
        _count(-1)


def running() -> bool:
    """Whether a load runs now, in any thread."""
    with _lock:
        return _running > 0


def _count(change: int) -> None:
    global _running, _default
    with _lock:
        if _running == 0 and change > 0:
            _default = sys.getswitchinterval()
        _running += change
        sys.setswitchinterval(LOADING_SWITCH_INTERVAL if _running else _default)


async def in_daemon_thread(fn: Callable[[], _T], name: str) -> _T:
    """``fn()`` run in a daemon thread of its own, while the interpreter switches threads
    more often (``loading``); its result, or its exception.

    Cancelling the caller abandons the thread, which finishes alone; a process that
    exits meanwhile does not wait for it.
    """
    # (here, not at the top: rifflux.exits asks ``running`` with no event loop to import)
    import anyio
    import anyio.from_thread
    import anyio.lowlevel

    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            with loading():
                outcome.append((True, fn()))
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome.append((False, exc))
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except Exception:  # the event loop has ended: nobody waits for it any more
            logger.debug("%s finished after its event loop ended", name)

    threading.Thread(target=target, name=name, daemon=True).start()
    await done.wait()
    ok, value = outcome[0]
    if not ok:
        raise value
    result: _T = value
    return result
