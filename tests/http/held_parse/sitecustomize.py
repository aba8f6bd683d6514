"""Test-only: a reindex that cannot end, however fast the machine (used by
``tests/http/test_service.py``).

Python imports ``sitecustomize`` as it starts, from the first folder on ``sys.path``
that has one. With this folder on ``PYTHONPATH`` and ``RIFFLUX_TEST_HOLD_PARSE`` naming
a file, ``rifflux serve`` and its parse workers (which start with the server's
``sys.path``) hold back the parsing of that file until the server lets go of the worker
parsing it (closes its pipe, or kills it at shutdown): every other file of the folder
is indexed, and the job stays in its indexing phase. With ``RIFFLUX_TEST_HOLD_UNTIL``
naming a path too, the file's parsing is held only until that path exists (the test
creates it when it has done what it does meanwhile). Without the variables, nothing
changes.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rifflux.core import document
from rifflux.core.chunker import ChunkLimits

_HELD = os.environ.get("RIFFLUX_TEST_HOLD_PARSE")
_UNTIL = os.environ.get("RIFFLUX_TEST_HOLD_UNTIL")
_prepare_file = document.prepare_file


def _held_back(root: Path, rel_path: str, known_sha: str | None, force: bool,
               limits: ChunkLimits) -> document.Prepared | document.Unreadable \
        | document.Skipped | None:
    if rel_path == _HELD and _UNTIL:
        for _ in range(2400):  # (two minutes at the most)
            if Path(_UNTIL).exists():
                break
            time.sleep(0.05)
    elif rel_path == _HELD:
        sys.stdin.buffer.read()  # (a worker's requests: they end when the server lets go)
    return _prepare_file(root, rel_path, known_sha, force, limits)


if _HELD:
    document.prepare_file = _held_back
