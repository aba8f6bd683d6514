"""``rifflux serve``'s heap settings: freed heap goes back to the system, but a search's
arrays (0.6-0.8 MB each on awesome-copilot) are reused from the heap, not mapped, unmapped
and faulted in again every time (that cost hybrid about 2 ms a search over HTTP)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

#: In a fresh process (the settings are the whole process's): the page faults of 50
#: searches' worth of arrays of the size a hybrid search makes, after the server's
#: settings and one warm-up round.
_PROBE = """
import resource
import numpy as np
from rifflux.http.serve import _keep_the_heap_small

_keep_the_heap_small()

def one_search():
    exact = np.ones((250, 384), dtype=np.float32)
    wide = exact.astype(np.float64)  # 768,000 bytes
    product = wide * 2.0  # and another
    return float(product[0, 0])

one_search()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    one_search()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
def test_a_search_sized_array_is_reused_from_the_heap_not_faulted_in_again() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          timeout=60, check=True)
    faults = int(done.stdout.strip())
    # mapped afresh, each round would fault in about 3 x 188 pages (9,000+ in all)
    assert faults < 50 * 20, f"{faults} page faults in 50 rounds: the arrays are not reused"
