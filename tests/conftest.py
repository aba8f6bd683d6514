from __future__ import annotations

import signal

import pytest

from .helpers import CountingEmbedder

# A shell runs a command started with `&` with SIGINT ignored, and an ignored signal is
# inherited across exec: the servers these tests start and stop with Ctrl-C would ignore
# it too. The tests need Ctrl-C to work as it does at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiosqlite is asyncio-only


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()
