"""Opt-in reindex-on-search for the MCP server, where a watcher cannot run."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api import Rifflux
from ..errors import JobNotFoundError, RiffluxError
from ..types import FINISHED

logger = logging.getLogger(__name__)



@dataclass(slots=True)
class AutoReindex:
    """Opt-in reindex-on-search, for places where a watcher cannot run.

    A search starts a background reindex of the configured roots (the watch
    paths, else every root already in the index) at most once per
    ``min_interval`` seconds and never while the previous one is unfinished.
    Starting one only queues a job, so the search answer is never delayed.
    """

    rf: Rifflux
    enabled: bool
    min_interval: float
    watch_paths: tuple[Path, ...]
    last_started: float | None = None  # time.monotonic()
    last_job: str | None = None

    async def after_search(self) -> dict[str, Any] | None:
        """What this search started, or why nothing was started; None when disabled."""
        if not self.enabled:
            return None
        if self.last_job is not None:
            status = await self._job_status(self.last_job)
            if status not in FINISHED:
                return {"started": False, "job_id": self.last_job,
                        "reason": f"the previous automatic reindex is still {status}"}
        now = time.monotonic()
        if self.last_started is not None and now - self.last_started < self.min_interval:
            wait = self.min_interval - (now - self.last_started)
            return {"started": False, "job_id": self.last_job,
                    "reason": f"throttled: one automatic reindex per {self.min_interval:g}s; "
                              f"the next can start in {wait:.0f}s"}
        # Claim the slot before awaiting, so concurrent searches do not start a second job.
        previous, self.last_started = self.last_started, now
        try:
            roots = [str(p) for p in self.watch_paths] or await self.rf.roots()
            if not roots:
                self.last_started = previous
                return {"started": False,
                        "reason": "nothing to reindex: no watch paths are configured and the "
                                  "index is empty; call reindex with a folder first"}
            out = await self.rf.reindex(paths=roots, background=True)
        except RiffluxError as exc:
            self.last_started = previous
            logger.warning("automatic reindex not started: %s", exc)
            return {"started": False, "reason": f"could not start: {exc}"}
        self.last_job = str(out["job"]["id"])
        logger.info("automatic reindex %s of %s", self.last_job, ", ".join(roots))
        return {"started": True, "job_id": self.last_job, "paths": roots}

    async def _job_status(self, job_id: str) -> str:
        try:
            return str((await self.rf.job(job_id))["status"])
        except JobNotFoundError:
            return "completed"  # aged out of the bounded job history

    def snapshot(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "min_interval_seconds": self.min_interval,
                "last_job": self.last_job}
