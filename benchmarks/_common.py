"""Small shared helpers: percentiles, clocks, polling under a deadline, process RSS."""

from __future__ import annotations

import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio


class Skipped(Exception):
    """A section cannot run here (say, a tool is missing); the message says why."""


class Incomplete(Exception):
    """A section's work was not done as it aimed (its corpus is missing, its index came
    out short): the section fails, and no target over its figures may pass. ``partial``
    holds what it did measure, for the report."""

    def __init__(self, reason: str, partial: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.partial = partial


#: The share of the chunks it aimed for below which an index counts as not done.
ENOUGH = 0.95


def expect_answers(modes: dict[str, dict[str, Any]], what: str) -> None:
    """Raise ``Incomplete`` when a mode answered nothing for more than half of its queries
    (all drawn from the corpus): its latency would be the time to find nothing."""
    for mode, figures in modes.items():
        if figures["empty_results"] * 2 > figures["n"]:
            raise Incomplete(f"{mode} search of {what} answered nothing for "
                             f"{figures['empty_results']} of its {figures['n']} queries: "
                             "its latency measures no work")


def expect_chunks(got: int, aimed: int, what: str) -> None:
    """Raise ``Incomplete`` when an index holds fewer than 95% of the chunks it aimed for
    (an index that came out empty measures nothing)."""
    if aimed <= 0 or got < ENOUGH * aimed:
        raise Incomplete(f"{what} holds {got:,} chunks of the {aimed:,} it aimed for "
                         f"(fewer than {ENOUGH:.0%}): its figures measure work not done")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation, like numpy's default."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summary_ms(seconds: Sequence[float]) -> dict[str, Any]:
    """p50/p95/mean/max in milliseconds of a list of durations in seconds."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p95_ms": round(percentile(ms, 95), 3),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else float("nan"),
        "max_ms": round(max(ms), 3) if ms else float("nan"),
    }


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def poll_until(
    check: Callable[[], Awaitable[bool]],
    *,
    within: float,
    interval: float = 0.005,
) -> float:
    """Await ``check()`` until it is true; the seconds that took. Raises TimeoutError.

    Polling is the point here: the benchmarks measure what a client observes
    through the public API, which offers no event for "now searchable".
    """
    start = time.perf_counter()
    with anyio.fail_after(within):
        while not await check():  # noqa: ASYNC110 - observing from outside, see above
            await anyio.sleep(interval)
    return time.perf_counter() - start


async def job_left_indexing(rf: Any, job_id: str, *, within: float,
                            interval: float = 0.005) -> dict[str, Any]:
    """Poll a background job until its files are committed (lexically searchable)."""
    snap: dict[str, Any] = {}

    async def check() -> bool:
        snap.update(await rf.job(job_id))
        return snap["phase"] not in ("queued", "indexing", "retry_wait")

    await poll_until(check, within=within, interval=interval)
    return snap


async def job_finished(rf: Any, job_id: str, *, within: float,
                       interval: float = 0.005) -> dict[str, Any]:
    """Poll a background job until it ends (completed once every chunk has a vector)."""
    snap: dict[str, Any] = {}

    async def check() -> bool:
        snap.update(await rf.job(job_id))
        return snap["status"] in ("completed", "failed", "cancelled")

    await poll_until(check, within=within, interval=interval)
    return snap


@dataclass(frozen=True, slots=True)
class Rss:
    """Resident set size now and the high-water mark, in MiB (Linux /proc, else rusage)."""

    current_mib: float
    peak_mib: float


def _proc_status_kib(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def rss() -> Rss:
    cur = _proc_status_kib("VmRSS")
    hwm = _proc_status_kib("VmHWM")
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is KiB on Linux, bytes on macOS
    maxrss_kib = maxrss / 1024 if sys.platform == "darwin" else float(maxrss)
    return Rss(
        current_mib=round((cur if cur is not None else maxrss_kib) / 1024, 1),
        peak_mib=round((hwm if hwm is not None else maxrss_kib) / 1024, 1),
    )


def reset_peak_rss() -> bool:
    """Reset the kernel's VmHWM to the current RSS (Linux >= 4.0); False if unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def ru_maxrss_mib() -> float:
    """The process's lifetime peak RSS from getrusage (cannot be reset)."""
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round((maxrss / 1024 / 1024) if sys.platform == "darwin" else maxrss / 1024, 1)
