from __future__ import annotations

import signal
from pathlib import Path

import pytest

from .helpers import (
    ACCOUNT_HELP,
    SEARCH_DOCS,
    TOPICS,
    CountingEmbedder,
    write_all,
    write_note,
    write_vault,
)

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


# ---------------------------------------------------------------- folders of notes


@pytest.fixture
def topics(tmp_path: Path) -> Path:
    """``kb/``: three notes on unrelated topics (gardening, travel, baking)."""
    return write_all(tmp_path / "kb", TOPICS)


@pytest.fixture
def topics_and_account(topics: Path) -> Path:
    """``kb/``: the three topics and a note on account help, which a paraphrase finds."""
    return write_all(topics, ACCOUNT_HELP)


@pytest.fixture
def search_docs(tmp_path: Path) -> Path:
    """``docs/``: notes on installing, on hybrid search and on pancakes."""
    return write_all(tmp_path / "docs", SEARCH_DOCS)


@pytest.fixture
def linked_vault(tmp_path: Path) -> Path:
    """``vault/`` (resolved): notes linked in every form Obsidian reads (``VAULT``)."""
    return write_vault(tmp_path / "vault").resolve()


@pytest.fixture
def tagged_vault(tmp_path: Path) -> Path:
    """``vault/`` (resolved): four notes about otters with tags (front matter and inline),
    front matter fields and ages, for the filters."""
    root = tmp_path / "vault"
    write_note(root, "projects/alpha.md",
               "Otters build dams in the river. #idea #area/river/north",
               tags="project, Active", extra="status: draft\nowners: [ann, bo]\npriority: 2\n",
               age_days=1)
    write_note(root, "projects/beta.md", "Otters sleep holding hands.", tags="project",
               extra="status: done\ndraft: true\n", age_days=40)
    write_note(root, "journal/2026-11-01.md", "Saw otters near the old mill. #area/river",
               age_days=400)
    write_note(root, "journal/2026-11-02.md", "Otters again, and a heron.", age_days=3)
    return root.resolve()
