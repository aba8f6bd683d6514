"""The store's own background work, beside the indexer's jobs: its ``upkeep`` (what only
makes searches faster: SQLite's lexicon, vectors' compact rows) after a job and once a
model is adopted, and its ``mend`` (what the database lost without a job noticing: the
PostgreSQL store's BM25 index, emptied by a server restart, a crash or a restore) at the
indexer's first tick and every ``MEND_EVERY`` seconds. Each runs in a task of its own,
on a connection of the store's own, one at a time; a failure is logged, never the end
of the indexer."""

from __future__ import annotations

import logging

import anyio
from anyio.abc import TaskGroup

from ..store.protocols import WriterStore

__all__ = ["MEND_EVERY", "StoreCare"]

logger = logging.getLogger(__name__)

#: How often the store is asked to mend what the database lost, in seconds.
MEND_EVERY = 30.0


class StoreCare:
    def __init__(self, writer: WriterStore, *, read_only: bool) -> None:
        self._writer = writer
        self._read_only = read_only
        self._mended: float | None = None  # when mend last began (None: never)
        self._mending = False

    def upkeep_soon(self, timers: TaskGroup) -> None:
        timers.start_soon(self._upkeep, name="rifflux.indexer.upkeep")

    def mend_when_due(self, timers: TaskGroup) -> None:
        now = anyio.current_time()
        if self._read_only or self._mending or (
                self._mended is not None and now - self._mended < MEND_EVERY):
            return
        self._mending, self._mended = True, now
        timers.start_soon(self._mend, name="rifflux.indexer.mend")

    async def _upkeep(self) -> None:
        try:
            await self._writer.upkeep()
        except Exception:  # the boundary: searches go on, exact, maybe slower
            logger.exception("the index's upkeep failed (the lexical lists or the vectors' "
                             "compact rows); searches stay exact, and may be slower")

    async def _mend(self) -> None:
        try:
            await self._writer.mend()
        except Exception:  # the boundary: searches stay exact meanwhile; tried again later
            logger.exception("could not mend the index (its BM25 index, emptied by a server "
                             "restart?); lexical searches rank every match meanwhile, and it "
                             "is tried again in %.0f s", MEND_EVERY)
        finally:
            self._mending = False
