"""The store for an index's location: an SQLite file, or a PostgreSQL database (whose
driver, asyncpg, is imported only then)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from ..config import Settings
from ..location import DatabaseUrl
from .protocols import OpenStore
from .sqlite.open import open_sqlite


@asynccontextmanager
async def open_store(settings: Settings, origin: str) -> AsyncIterator[OpenStore]:
    """The index ``settings.db_path`` open for a process known to the others on it as
    ``origin``; everything it opened is closed on the way out."""
    where = settings.db_path
    if isinstance(where, DatabaseUrl):
        from .postgres.open import open_postgres  # (asyncpg only for a PostgreSQL URL)

        async with open_postgres(settings, where, origin) as store:
            yield store
        return
    db = await anyio.to_thread.run_sync(where.expanduser().resolve)
    async with open_sqlite(settings, db, origin) as store:
        yield store
