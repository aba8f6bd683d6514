"""The heartbeat: this process's row in ``processes`` kept fresh, and the change log
pruned once a minute, on a connection of its own.

Why its own connection. On the writer's, from a task beside the indexer's loop,
a beat could land inside a job's open transaction (and be committed or rolled
back with it): a second owner of that connection. As a message to the indexer it
would wait while a job runs, since the indexer reads its inbox only between jobs:
a long job would leave the row older than ``store.sqlite.presence.SEEN_WITHIN``, and the
process would vanish from every other process's list. Here a beat waits only for
the writer's lock, which every transaction holds for a few files at most. The
price: its commits change the writer connection's ``PRAGMA data_version``, so the
indexer reads the change log once per beat (one query over the rows since its
last look, which leaves this process's own out).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from anyio.abc import TaskStatus

from ..store.protocols import PresenceStore

logger = logging.getLogger(__name__)

#: How often this process's row in ``processes`` is refreshed, in seconds.
BEAT_EVERY = 5.0
#: The change log is pruned every this many beats (a minute).
PRUNE_EVERY_BEATS = 12


class Heartbeat:
    """Beats through ``presence``, whose connection is no one else's."""

    def __init__(self, *, presence: PresenceStore, roles: Callable[[], list[str]]) -> None:
        self._presence = presence
        self._roles = roles
        self.beats = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        presence = self._presence
        while True:
            try:
                await presence.beat(self._roles())
                self.beats += 1
                if self.beats % PRUNE_EVERY_BEATS == 0:
                    await presence.prune_changes()
            except Exception as exc:  # the boundary: busy, most likely; the next beat tries
                logger.debug("cannot refresh this process's row in the index: %s", exc)
            await anyio.sleep(BEAT_EVERY)
