"""The index's upkeep after jobs: vectors no chunk uses are dropped, the full-text index
is merged.

Kept apart from ``index_job`` (the parse and the writes, imported with the first job
the indexer runs), since the indexer asks it at every tick.
"""

from __future__ import annotations

import logging
import time

from ..errors import IndexDatabaseError
from ..store.protocols import WriterStore
from .jobs import Job

logger = logging.getLogger(__name__)


class Tidying:
    """After a job's writes, the vectors no chunk uses any more are dropped and the
    full-text index is merged when writes left it in pieces (also after a job that wrote
    nothing: an index left unmerged gets merged). A note's job leaves this undone (a
    caller waits on it, and merging the index costs 0.1 s per 10,000 chunks): it is done
    at the indexer's first tick once no note was written for ``quiet`` seconds, or by the
    next job that writes."""

    def __init__(self, quiet: float = 0.5) -> None:
        self._quiet = quiet
        self._since: float | None = None  # the last note's job that left it undone

    async def after(self, job: Job, writer: WriterStore) -> None:
        wrote = bool(job.progress.removed or job.progress.indexed)
        if job.source == "note":
            self._since = time.monotonic()
        elif wrote or self._since is None:  # (a no-op job amid notes leaves it too)
            self._since = None
            await self._tidy(writer, prune=wrote)

    async def when_quiet(self, writer: WriterStore) -> None:
        if self._since is not None and time.monotonic() - self._since >= self._quiet:
            self._since = None
            await self._tidy(writer, prune=True)

    async def _tidy(self, writer: WriterStore, *, prune: bool) -> None:
        try:
            if prune:
                await writer.prune_orphan_vectors()
            await writer.merge_fts()
        except IndexDatabaseError as exc:  # maintenance: the writes themselves are done
            logger.warning("could not prune vectors or merge the full-text index (%s); "
                           "searches stay correct, a little slower; the next job tries "
                           "again", exc)
