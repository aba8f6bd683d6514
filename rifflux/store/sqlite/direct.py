"""An SQLite index read directly: in the calling thread, with sqlite3 alone (no aiosqlite,
no anyio, no event loop), for a one-shot command that only reads.

The store's reads are coroutines written for aiosqlite (``Reader``, ``Records``,
``LinkRecords``, ``Lexical``); here they run on ``Immediate``, sqlite3's connection as
``sql.Connection`` asks for it, whose every await is answered at once. Such a coroutine
never suspends, so ``run_now`` runs it to its end without a loop: the same statements
and the same ranking as the query actor's, and none of its imports or threads.

``open_direct`` opens the index read-only as the store's opening would (the file
refused when it is someone else's or cannot be shared, checked first when it may be
damaged, a reader's connection set up by ``schema.prepare``), or says None where the
full opening would do something first that a reader cannot: move a damaged file
aside, upgrade the schema, make missing tables, fill the full-text index; or where
a reader here cannot rank as the query actor does (a lexicon, on a large index: its
ranking runs in worker threads). The caller then takes the full path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ...errors import RiffluxError
from ..copies import Copies
from ..records import Records
from .lexical import Lexical
from .lexicon_schema import lexicon_built
from .reader import Reader
from .recovery import damage, needs_check, refuse_unreadable
from .schema import database, prepare, settled
from .sql import OnConnection

if TYPE_CHECKING:
    from ...config import Settings
    from ...types import NoteLinks
    from ..link_records import LinkRecords
    from ..protocols import LinkStore

__all__ = ["DirectStore", "Immediate", "open_direct", "run_now"]

T = TypeVar("T")


def run_now(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` to its end in the calling thread, with no event loop: each of its
    awaits must be answered at once (as ``Immediate``'s are). One that would wait for
    something is a mistake of the caller's (what it runs needs an event loop): it is
    closed, and RuntimeError says so."""
    try:
        work.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    work.close()
    raise RuntimeError("a direct read waited for something: it needs an event loop "
                       "(open the index with Rifflux instead)")


class _Rows:
    """A statement's rows, as ``sql.Cursor`` asks for them."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def fetchmany(self, size: int, /) -> list[Any]:
        return self._cursor.fetchmany(size)

    async def close(self) -> None:
        self._cursor.close()


class Immediate:
    """sqlite3's connection as the store's statements ask for it (``sql.Connection``):
    each statement runs when it is awaited, in the calling thread, and is answered at
    once (aiosqlite runs it on the connection's thread, and the event loop waits)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, parameters: Any = None, /) -> _Rows:
        return _Rows(self._conn.execute(sql, () if parameters is None else parameters))

    async def execute_fetchall(self, sql: str, parameters: Any = None, /) -> list[Any]:
        return self._conn.execute(sql, () if parameters is None else parameters).fetchall()

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]], /) -> _Rows:
        return _Rows(self._conn.executemany(sql, cast(Any, parameters)))

    async def executescript(self, sql_script: str, /) -> _Rows:
        return _Rows(self._conn.executescript(sql_script))

    async def close(self) -> None:
        self._conn.close()


@dataclass(frozen=True, slots=True)
class DirectStore:
    """An index open in this thread: the query actor's reads of it, on one connection
    (``run_now`` runs their coroutines)."""

    #: Where the index is (the resolved file), as messages name it.
    where: str
    reads: Reader
    records: Records
    links: LinkStore
    copies: Copies
    lexical: Lexical


class _Links:
    """``LinkRecords``, made when first read: its module (and the link syntax it
    compiles) is imported by the commands that read links alone."""

    def __init__(self, statements: OnConnection) -> None:
        self._statements = statements
        self._records: LinkRecords | None = None

    def _made(self) -> LinkRecords:
        if self._records is None:
            from ..link_records import LinkRecords

            self._records = LinkRecords(self._statements)
        return self._records

    async def of(self, file_id: int, path: str, root: str) -> NoteLinks:
        return await self._made().of(file_id, path, root)

    async def notes(self, file_ids: Collection[int]) -> dict[int, tuple[str, str]]:
        return await self._made().notes(file_ids)


@contextmanager
def open_direct(settings: Settings, db: Path) -> Iterator[DirectStore | None]:
    """The index file ``db`` (resolved) open read-only in this thread and closed on the
    way out; None: no index there yet, or one to open with the full path (see the
    module's docstring), which also says what it cannot open and why, at the moment
    the command would (someone else's file, one it cannot share, a locked one)."""
    conn = _connect(settings, db)
    if conn is None:
        yield None
        return
    try:
        immediate = Immediate(conn)
        reader = Reader(immediate, db)
        statements = OnConnection(immediate, db)
        yield DirectStore(where=str(db), reads=reader, records=Records(statements),
                          links=_Links(statements), copies=Copies(statements),
                          lexical=Lexical(reader))
    finally:
        conn.close()


def _connect(settings: Settings, db: Path) -> sqlite3.Connection | None:
    """A reader's connection to ``db``, set up as the store sets one up, once the file
    is known to be one a reader here can read as the full opening would leave it."""
    if not db.is_file():
        return None  # (a command that reads one says there is none: the full path's words)
    try:
        refuse_unreadable(db, read_only=settings.read_only,
                          read_snapshot=settings.read_snapshot)
        if needs_check(db) == "now" and damage(db) is not None:
            return None  # (moved aside by the full opening, or reported when read-only)
        conn = sqlite3.connect(database(db, readonly=True, snapshot=settings.read_snapshot),
                               uri=True, isolation_level=None)
    except (RiffluxError, sqlite3.Error):
        return None  # (the full path says it, after what a command checks before opening)
    try:
        readable = run_now(_readable(Immediate(conn), db, settings))
    except (RiffluxError, sqlite3.Error):
        readable = False  # (an older schema is upgraded by the full opening; others, said)
    except BaseException:
        conn.close()
        raise
    if not readable:
        conn.close()
        return None
    return conn


async def _readable(conn: Immediate, db: Path, settings: Settings) -> bool:
    """The reader's connection set up (``schema.prepare``); whether the index is this
    version's, settled, and ranked by FTS5 alone (no lexicon)."""
    await prepare(conn, db, busy_timeout_ms=settings.busy_timeout_ms, readonly=True)
    return await settled(conn) and not await lexicon_built(conn)
