from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import settings

from rifflux.location import DatabaseUrl
from rifflux.store.postgres.connection import close, connect
from rifflux.store.postgres.history_schema import HISTORY_BM25
from rifflux.store.postgres.schema import BM25_INDEX, ensure_schema

from .helpers import (
    ACCOUNT_HELP,
    SEARCH_DOCS,
    TOPICS,
    CountingEmbedder,
    Location,
    NewIndex,
    write_all,
    write_note,
    write_vault,
)
from .postgres import PostgresServer, PostgresUnavailable, postgres_server

# Hypothesis draws new examples at every run (to find what nobody thought of); CI
# (``.ci/run`` sets RIFFLUX_HYPOTHESIS=ci) draws the same ones every time, so that a gate
# never fails on an example no run has met before. What a run finds is kept as an
# ``@example`` of its property.
settings.register_profile("ci", derandomize=True)
if os.environ.get("RIFFLUX_HYPOTHESIS") == "ci":
    settings.load_profile("ci")

# A shell runs a command started with `&` with SIGINT ignored, and an ignored signal is
# inherited across exec: the servers these tests start and stop with Ctrl-C would ignore
# it too. The tests need Ctrl-C to work as it does at a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """The root logger as before each test: a command run in the test's process
    (``cli.main``) points the logs at the test's captured stderr, which is closed after
    it, and every later log would fail to write there ("--- Logging error ---")."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in root.handlers[:]:  # (pytest's own are its subclasses, its to remove)
        if type(handler) is logging.StreamHandler and handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


# ---------------------------------------------------------------- pytest-xdist (-n)

#: Test modules run whole on one pytest-xdist worker: their module-scoped fixtures (a
#: browser and servers, the bundled model's vectors of the README) are made once, not once
#: on each worker that runs one of their tests. (Not ``xdist_group`` marks and ``--dist
#: loadgroup``: with pytest 9.2 those group nothing, pytest-xdist issue 1386.)
ONE_WORKER = frozenset({
    "tests/http/test_page.py", "tests/http/test_api.py", "tests/http/test_security.py",
    "tests/test_mcp_bridge.py", "tests/core/test_vectors.py",
})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n``'s distribution, ``--dist load`` (each test to a worker that is free), but the
    tests of a module in ``ONE_WORKER`` to one worker together (and first: the largest
    units of work go out first)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):  # type: ignore[misc]  # (xdist has no types)
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in ONE_WORKER else nodeid

    return Scheduling(config, log)


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


# ---------------------------------------------------------------- where the index is

#: The database every test database is a copy of: the schema made once.
_TEMPLATE = "rifflux_template"
_NAMES = itertools.count(1)



def _unavailable(reason: str) -> None:
    """No PostgreSQL here: the PostgreSQL tests fail when RIFFLUX_REQUIRE_POSTGRES=1 (as
    in CI), else they are skipped, saying why."""
    message = f"PostgreSQL cannot be started here: {reason}"
    if os.environ.get("RIFFLUX_REQUIRE_POSTGRES") == "1":
        pytest.fail(message + " (RIFFLUX_REQUIRE_POSTGRES=1)")
    pytest.skip(message + " (set RIFFLUX_REQUIRE_POSTGRES=1 to fail instead)")


async def _make_schema(url: str) -> None:
    """The schema, without its BM25 indexes (the chunks' and the commits'): each copy
    makes its own when it is opened.
    (pg_textsearch 0.6.1 keeps a BM25 index's memory by the index's OID, and a copy of a
    database has its indexes' OIDs: copies of one BM25 index would mix their words.)"""
    where = DatabaseUrl(url)
    conn = await connect(where, seconds=30, vectors=False)
    try:
        await ensure_schema(conn, where)
        await conn.execute(f"DROP INDEX {BM25_INDEX}, {HISTORY_BM25}")
    finally:
        await close(conn)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session (pgvector, pg_textsearch preloaded), with a
    template database holding the schema."""
    stack = contextlib.ExitStack()
    try:
        server = stack.enter_context(postgres_server())
        anyio.run(_make_schema, server.create_database(_TEMPLATE))
    except PostgresUnavailable as exc:
        stack.close()
        _unavailable(str(exc))
    with stack:
        yield server


@pytest.fixture(scope="session")
def postgres_without_textsearch() -> Iterator[PostgresServer]:
    """A PostgreSQL server without pg_textsearch preloaded (its extension cannot be made:
    the lexical branch falls back to ts_rank_cd)."""
    stack = contextlib.ExitStack()
    try:
        server = stack.enter_context(postgres_server(preload=False))
    except PostgresUnavailable as exc:
        stack.close()
        _unavailable(str(exc))
    with stack:
        yield server


@pytest.fixture
def postgres_of_its_own() -> Iterator[PostgresServer]:
    """A PostgreSQL server for one test only (which may stop and start it again)."""
    stack = contextlib.ExitStack()
    try:
        server = stack.enter_context(postgres_server())
    except PostgresUnavailable as exc:
        stack.close()
        _unavailable(str(exc))
    with stack:
        yield server


@pytest.fixture
def durable_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for one test, whose commits survive a crash of the server."""
    stack = contextlib.ExitStack()
    try:
        server = stack.enter_context(postgres_server(durable=True))
    except PostgresUnavailable as exc:
        stack.close()
        _unavailable(str(exc))
    with stack:
        yield server


@pytest.fixture
def new_postgres_index(postgres: PostgresServer) -> Iterator[Callable[[], str]]:
    """Makes a new database holding an empty index (a copy of the template), dropped
    after the test; its URL."""
    made: list[str] = []

    def make() -> str:
        name = f"rifflux_test_{os.getpid()}_{next(_NAMES)}"
        made.append(name)
        return postgres.create_database(name, template=_TEMPLATE)

    yield make
    for name in made:
        postgres.drop_database(name)


@pytest.fixture(params=["sqlite", "postgres"])
def new_index(request: pytest.FixtureRequest, tmp_path: Path) -> NewIndex:
    """The contract's tests run on both stores: a new index location each call, an
    SQLite file in ``tmp_path`` or a PostgreSQL database."""
    if request.param == "sqlite":
        def file(name: str = "i") -> Location:
            return tmp_path / f"{name}.db"

        return file
    make: Callable[[], str] = request.getfixturevalue("new_postgres_index")

    def database(name: str = "i") -> Location:
        return make()

    return database


@pytest.fixture
def db(new_index: NewIndex) -> Location:
    """Where the test's index is: an SQLite file, or a PostgreSQL database (each test
    that takes it runs on both)."""
    return new_index("i")
