"""Rifflux: local, offline, asyncio-native hybrid search over folders of markdown.

Layers, imported in one direction only (as in anyio's ``_core`` and trio's
``__init__``): ``rifflux.core`` (pure functions) -> ``rifflux.store`` (SQLite)
-> ``rifflux.actors`` (anyio actors) -> surfaces (``rifflux.api``,
``rifflux.mcp``, ``rifflux.cli``). This module re-exports the public names.

The names are imported on first use (PEP 562), so that ``rifflux mcp`` can
answer the MCP handshake before numpy, aiosqlite and the SDK are loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Rifflux
    from .config import Settings
    from .errors import (
        ClosedError,
        EmbeddingError,
        EmbeddingUnavailableError,
        HistoryOffError,
        IndexBusyError,
        IndexDamagedError,
        IndexDatabaseError,
        IndexUnreachableError,
        InternalError,
        InvalidArgumentError,
        JobNotFoundError,
        NotAnIndexError,
        NoteConflictError,
        NotFoundError,
        NotWritableError,
        ReadOnlyError,
        RerankError,
        RiffluxError,
        SchemaVersionError,
    )

__all__ = [
    "ClosedError",
    "EmbeddingError",
    "EmbeddingUnavailableError",
    "HistoryOffError",
    "IndexBusyError",
    "IndexDamagedError",
    "IndexDatabaseError",
    "IndexUnreachableError",
    "InternalError",
    "InvalidArgumentError",
    "JobNotFoundError",
    "NotAnIndexError",
    "NotFoundError",
    "NotWritableError",
    "NoteConflictError",
    "ReadOnlyError",
    "RerankError",
    "Rifflux",
    "RiffluxError",
    "SchemaVersionError",
    "Settings",
]

_HOMES = {"Rifflux": "api", "Settings": "config"}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'rifflux' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{_HOMES.get(name, 'errors')}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
