"""The int8 scan of the compact matrix, split across the machine's cores: numkong's
``cdist`` of one query with a million rows runs on one core (it has no threads of its
own) and releases the GIL, so the rows are cut into as many parts as there are cores (up
to ``_MOST``) and the parts scanned at once, the first in the calling thread. The scores
are the same to the bit (each row's dot product is computed alone).

Rows fewer than ``_SPLIT`` are scanned in one call: a filtered search's few thousand rows
take less time than waking a thread.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from .codes import F32

#: At most this many parts (memory bandwidth, not cores, bounds a scan beyond).
_MOST = 4
#: Below this many rows, one call.
_SPLIT = 100_000

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


def parts_for(rows: int, threads: int | None = None) -> int:
    """How many parts ``dots`` cuts ``rows`` into (``threads``: the cores, by default)."""
    if rows < _SPLIT:
        return 1
    return max(1, min(_MOST, cores() if threads is None else threads))


def dots(q8: npt.NDArray[np.int8], codes: npt.NDArray[np.int8], out: F32,
         threads: int | None = None) -> None:
    """``out[i]`` = the int32 dot product of ``q8`` with row ``i`` of ``codes`` (as
    float32: exact), the rows scanned in parts at once (``parts_for``)."""
    import numkong  # (here: a lexical search never loads it)

    n = len(codes)
    parts = parts_for(n, threads)
    if parts == 1:
        numkong.cdist(q8[None, :], codes, metric="dot", out=out.reshape(1, -1))
        return
    bounds = np.linspace(0, n, parts + 1).astype(np.int64)

    def part(i: int) -> None:
        a, b = int(bounds[i]), int(bounds[i + 1])
        numkong.cdist(q8[None, :], codes[a:b], metric="dot", out=out[a:b].reshape(1, -1))

    pool = _executor()
    waiting: list[Future[None]] = [pool.submit(part, i) for i in range(1, parts)]
    try:
        part(0)
    finally:
        for future in waiting:  # (every part done before ``out`` is read or reused)
            future.result()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_MOST - 1, thread_name_prefix="rifflux-scan")
        return _pool
