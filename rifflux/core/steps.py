"""Where a search's time goes, step by step, for the benchmarks: off (and free) unless a
caller records (``recording``), as the ``scale`` section's serving process does.

A search takes one ``Steps`` (``begin``); each part of it marks the end of a step
(``lap``) on a clock of its own (``clock``: a branch of a hybrid search runs beside
the other, so each branch times its own steps), and ``Steps.times`` holds each step's
milliseconds. Not recording, ``begin`` gives ``OFF``, whose laps do nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

#: The searches being recorded (None: not recording).
_recorded: list[dict[str, float]] | None = None


class Clock:
    """One line of work's steps: each ``lap`` ends a step begun at the previous one."""

    __slots__ = ("_last", "_times")

    def __init__(self, times: dict[str, float]) -> None:
        self._times = times
        self._last = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self._times[step] = self._times.get(step, 0.0) + (now - self._last) * 1000.0
        self._last = now


class _Off(Clock):
    __slots__ = ()

    def __init__(self) -> None:  # (nothing to keep)
        pass

    def lap(self, step: str) -> None:
        return None


class Steps:
    """One search's steps (milliseconds by name)."""

    __slots__ = ("times",)

    def __init__(self) -> None:
        self.times: dict[str, float] = {}

    def clock(self) -> Clock:
        return Clock(self.times)


class _OffSteps(Steps):
    __slots__ = ()

    def clock(self) -> Clock:
        return OFF_CLOCK


OFF_CLOCK: Clock = _Off()
OFF: Steps = _OffSteps()


def begin() -> Steps:
    """A search's steps: recorded while ``recording``, else ``OFF``."""
    if _recorded is None:
        return OFF
    steps = Steps()
    _recorded.append(steps.times)
    return steps


@contextmanager
def recording() -> Iterator[list[dict[str, float]]]:
    """Every search begun inside, as its steps' milliseconds, in the order begun."""
    global _recorded
    before, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        _recorded = before
