"""Every section's targets checked against a run's results (the formats section's targets
are its own module's, built on ``_targets.Target``)."""

from __future__ import annotations

from typing import Any

from ._formats_report import FORMATS_TARGETS
from ._startup_targets import STARTUP_TARGETS
from ._targets import TARGETS, Results


def check_all(results: Results, errors: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every target against the run's results; ``errors``: the sections that failed."""
    return [t.check(results, errors) for t in (*TARGETS, *STARTUP_TARGETS, *FORMATS_TARGETS)]
