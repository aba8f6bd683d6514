"""Reading an in-memory structure side by side with a change waiting its turn: searches
read the vector matrix each in a worker thread (the scan releases the GIL), and a change
waits for those in progress; searches begun meanwhile wait for it. A change runs on the
event loop and is over in milliseconds; so is a scan."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Concatenate, ParamSpec, Protocol, TypeVar


class Shared:
    """Readers side by side; a change once none is reading."""

    def __init__(self) -> None:
        self._state = threading.Condition()  # (an RLock: a change may call another)
        self._readers = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._state:
            self._readers += 1
        try:
            yield
        finally:
            with self._state:
                self._readers -= 1
                if not self._readers:
                    self._state.notify_all()

    @contextmanager
    def changing(self) -> Iterator[None]:
        with self._state:
            while self._readers:
                self._state.wait()
            yield


class Guarded(Protocol):
    """What ``changes`` guards: an object read through its ``Shared``."""

    @property
    def shared(self) -> Shared: ...


_P = ParamSpec("_P")
_R = TypeVar("_R")
_G = TypeVar("_G", bound=Guarded)


def changes(method: Callable[Concatenate[_G, _P], _R]) -> Callable[Concatenate[_G, _P], _R]:
    """A method that changes its object: once no one is reading it."""
    @wraps(method)
    def changing(self: _G, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.shared.changing():
            return method(self, *args, **kwargs)
    return changing
