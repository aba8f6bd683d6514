"""The native steps of the embedding model (onnxruntime's sessions and runs, the
tokenizer), and the interpreter's exit while one runs.

These steps run C++ (or Rust) with the interpreter's lock released. The model loads
in a daemon thread (``rifflux.loading``) that nothing waits for at exit, so a process
can end while such a step runs. The interpreter's exit then tears things down under it:
the thread is stopped, by unwinding its C++ frames, when it takes the lock back, and the
C++ runtime destroys onnxruntime's static objects; the process aborts ("terminate
called without an active exception", exit code 134) instead of exiting with its code.

So each such step runs inside ``step()``, and at exit, before the interpreter tears
anything down (an ``atexit`` hook), the step in flight is waited for: one step (making
an ONNX session takes a few hundred milliseconds), never the rest of the load. The
next step never starts: its daemon thread waits there until the process has gone. The
command line does not wait even for that step: it ends with ``os._exit`` while a load
runs (``rifflux.exits.end``).

Synchronous and standard library only (on the ground floor, beside ``loading``, so
that ``core.embedders`` may use it): the lock below is the process's, not a
scheduler's.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["step"]

#: A test's hook: called with the name of each native step before it starts (to end a
#: process there, or hold the load after it).
_before_step: Callable[[str], None] | None = None

#: The longest the exit waits for a step in flight (a step that never ends must not keep
#: the process alive).
SETTLE_LIMIT = 30.0

_cond = threading.Condition()
_in_flight = 0
_closing = False


@contextmanager
def step(name: str) -> Iterator[None]:
    """A native step (``name`` says which, for the test's hook): once the process has
    begun to exit, a thread other than the main one waits here for ever (the
    process ends around it)."""
    global _in_flight
    if _before_step is not None:
        _before_step(name)
    with _cond:
        while _closing and threading.current_thread() is not threading.main_thread():
            _cond.wait()  # (notified only by a step ending: the loop waits again)
        _in_flight += 1
    try:
        yield
    finally:
        with _cond:
            _in_flight -= 1
            _cond.notify_all()


def _settle() -> None:
    """At exit: no step starts any more, and the one in flight is waited for."""
    global _closing
    with _cond:
        _closing = True
        _cond.wait_for(lambda: not _in_flight, SETTLE_LIMIT)


def _forked() -> None:
    """In a forked child: the steps in flight were other threads', which it has not."""
    global _cond, _in_flight, _closing
    _cond, _in_flight, _closing = threading.Condition(), 0, False


atexit.register(_settle)
if hasattr(os, "register_at_fork"):  # (not on Windows)
    os.register_at_fork(after_in_child=_forked)
