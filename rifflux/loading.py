"""The interpreter's thread switching while something loads in the background.

A load in a worker thread (the embedding model, the MCP SDK's import) runs Python
code for hundreds of milliseconds. Meanwhile a lexical search on the event loop
hops between threads a few times (its SQLite statements run on a connection's
thread), and at each hop waits for the interpreter's lock for up to the switch
interval, 5 ms by default: a 3 ms search would take several times as long. While
any load runs, the interval is 0.5 ms instead. Standard library only.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["loading"]

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


def _count(change: int) -> None:
    global _running, _default
    with _lock:
        if _running == 0 and change > 0:
            _default = sys.getswitchinterval()
        _running += change
        sys.setswitchinterval(LOADING_SWITCH_INTERVAL if _running else _default)
