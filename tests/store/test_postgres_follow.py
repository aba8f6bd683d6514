"""Following another process's commits on PostgreSQL: a notification tells of them
without asking for the log's sequence, and a follower whose connection was cut (so
that the notifications sent meanwhile were lost) catches up from the sequence."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import asyncpg
import pytest

from rifflux import Settings
from rifflux.location import DatabaseUrl
from rifflux.store.postgres import changes
from rifflux.store.postgres.history_changes import KIND, HistoryFollow
from rifflux.store.postgres.open import open_postgres
from rifflux.store.protocols import OpenStore

from ..helpers import afile, eventually, index_rows

pytestmark = pytest.mark.anyio


@pytest.fixture
async def pair(new_postgres_index: Callable[[], str]) -> AsyncIterator[tuple[OpenStore, ...]]:
    where = DatabaseUrl(new_postgres_index())
    async with AsyncExitStack() as stack:
        yield tuple([await stack.enter_async_context(
            open_postgres(Settings(db_path=where), where, origin)) for origin in "ab"])


async def test_a_notification_tells_of_another_process_commit_without_polling(
    pair: tuple[OpenStore, OpenStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = pair
    monkeypatch.setattr(changes, "SAFETY_POLL", 3600.0)  # no look at the sequence now
    assert isinstance(b.follow, changes.Follow) and b.follow.listening
    for follow in (a.follow, b.follow):
        assert await follow.others_wrote() is False  # (the look that polls, at first)
    root = await a.writer.roots.root_id(tmp_path / "docs")
    assert root is not None
    await a.writer.write_files(root, [afile("one.md", "the first text")])
    assert await a.follow.others_wrote() is False  # its own commit: not notified to it
    await eventually(b.follow.others_wrote)
    foreign = await b.follow.read(None, b.writer.roots)
    assert foreign is not None and [f.rel_path for f in foreign.written.files] == ["one.md"]
    b.follow.done(foreign.upto)
    assert await b.follow.others_wrote() is False


async def test_a_follower_whose_connection_was_cut_catches_up_from_the_sequence(
    pair: tuple[OpenStore, OpenStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = pair
    monkeypatch.setattr(changes, "SAFETY_POLL", 3600.0)
    assert isinstance(b.follow, changes.Follow)
    assert await b.follow.others_wrote() is False
    url = b.follow.where.url
    await index_rows(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "application_name = 'rifflux' AND pid != pg_backend_pid()")
    root = await a.writer.roots.root_id(tmp_path / "docs")  # (a's session reconnects)
    assert root is not None
    await a.writer.write_files(root, [afile("two.md", "written while b was cut off")])

    async def b_sees_it() -> bool:  # each look may reconnect; then it reads the log
        try:
            return await b.follow.others_wrote()
        except Exception:
            return False

    await eventually(b_sees_it)
    foreign = await b.follow.read(None, b.writer.roots)
    assert foreign is not None and [f.rel_path for f in foreign.written.files] == ["two.md"]


async def test_the_history_follower_tells_a_gap_in_the_log_from_rows_pruned_past_it(
    new_postgres_index: Callable[[], str],
) -> None:
    # PostgreSQL's sequence skips the numbers of rolled-back writes: such a gap is not
    # another process's history written (which would load the commit matrix again)
    url = new_postgres_index()
    follow = HistoryFollow(DatabaseUrl(url), "mine", seconds=5)
    await follow.open()
    conn = await asyncpg.connect(url, ssl=False)

    async def log(kind: str, *, kept: bool = True) -> None:
        tr = conn.transaction()
        await tr.start()
        await conn.execute("INSERT INTO changes(origin, kind) VALUES ('theirs', $1)", kind)
        await (tr.commit() if kept else tr.rollback())

    async def wrote() -> bool:
        follow._follow.look_again()  # (asked now, not at the next notification or poll)
        return await follow.others_wrote()

    try:
        assert await wrote() is False  # (the first look starts following)
        await log("file")
        assert await wrote() is False  # (not the history's)
        await log(KIND, kept=False)
        await log("file")
        assert await wrote() is False  # (a gap, rolled back: not theirs)
        await log(KIND)
        assert await wrote() is True
        assert await wrote() is False
        await log(KIND)
        await log("file")
        await conn.execute("DELETE FROM changes WHERE seq < (SELECT max(seq) FROM changes)")
        assert await wrote() is True  # (pruned past the last seen: theirs may be gone)
    finally:
        await conn.close()
        await follow.close()
