"""A section's worker process: ``python -m benchmarks.<module>`` run apart from the
harness, so that what it measures (its RSS above all) is its own, and the one JSON
object it prints last read back.

Kept out of ``_common``, which the workers import themselves: this module's imports
(``_corpus``, and with it rifflux's chunker) would count in every worker's RSS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from ._common import Incomplete
from ._corpus import REPO_ROOT


def run_worker(module: str, args: Sequence[str], *, what: str,
               timeout: float | None = None) -> dict[str, Any]:
    """The last line ``python -m benchmarks.<module> ARGS`` prints, as JSON. A worker that
    fails raises ``Incomplete`` naming ``what`` failed, with the end of its stderr: its
    work was not done."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args],
                          capture_output=True, text=True, env=env, timeout=timeout,
                          check=False)
    if proc.returncode != 0:
        raise Incomplete(f"{what} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result
