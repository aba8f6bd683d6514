from __future__ import annotations

import pytest

from .helpers import CountingEmbedder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite is asyncio-only


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()
