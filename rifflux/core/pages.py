"""Memory faulted in ahead of its first writes: a load of the vector matrix writes 0.4 GB
of rows that were never touched, and the kernel zeroes each 4 KiB page on its first write,
a trap each (100,000 at a million rows: 2.8 s of the load's own thread, measured with the
machine loaded). ``populate`` asks the kernel to do it for a range in one call
(``MADV_POPULATE_WRITE``, Linux 5.14), from a worker thread beside the load: what is in
the memory is left as it is, so the load may write the same pages meanwhile.

Mapping the matrix with ``MAP_POPULATE`` or huge pages did the same work faster, but the
scan over those pages was 25-50% slower (measured alternately, on this machine's VM); pages
faulted in as the load would fault them scan as fast as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from collections.abc import Callable
from functools import cache
from typing import cast

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

_MADV_POPULATE_WRITE = 23
_PAGE = 4096
#: Bytes per call: the thread can be told apart from the kernel's work in a profile.
_STEP = 16 << 20


@cache
def _madvise() -> Callable[[int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    call = libc.madvise
    call.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    call.restype = ctypes.c_int
    return cast("Callable[[int, int, int], int]", call)


def populate(array: npt.NDArray[np.generic], nbytes: int) -> bool:
    """Fault in the pages of the first ``nbytes`` of ``array`` (whole pages inside it),
    without changing what they hold; False where the system cannot (then the writes fault
    them in as before). The GIL is released meanwhile."""
    call = _madvise()
    if call is None:
        return False
    start = array.ctypes.data
    end = start + min(nbytes, array.nbytes)
    at = (start + _PAGE - 1) // _PAGE * _PAGE
    end = end // _PAGE * _PAGE
    while at < end:
        size = min(_STEP, end - at)
        if call(at, size, _MADV_POPULATE_WRITE) != 0:  # (EINVAL: a kernel before 5.14)
            logger.debug("MADV_POPULATE_WRITE failed (errno %d): pages fault in as written",
                         ctypes.get_errno())
            return False
        at += size
    return True
