"""Rifflux: local, offline, asyncio-native hybrid search over folders of markdown.

Layers, imported in one direction only (as in anyio's ``_core`` and trio's
``__init__``): ``rifflux.core`` (pure functions) -> ``rifflux.store`` (SQLite)
-> ``rifflux.actors`` (anyio actors) -> surfaces (``rifflux.api``,
``rifflux.mcp``, ``rifflux.cli``). This module re-exports the public names.
"""

from .api import Rifflux
from .config import Settings
from .errors import (
    ClosedError,
    EmbeddingError,
    IndexBusyError,
    IndexDatabaseError,
    InvalidArgumentError,
    JobNotFoundError,
    RiffluxError,
    SchemaVersionError,
)

__all__ = [
    "ClosedError",
    "EmbeddingError",
    "IndexBusyError",
    "IndexDatabaseError",
    "InvalidArgumentError",
    "JobNotFoundError",
    "Rifflux",
    "RiffluxError",
    "SchemaVersionError",
    "Settings",
]
