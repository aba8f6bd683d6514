"""Statements written once for both stores, and what each store supplies to run them:
its spellings of what the two SQLs say differently (``Dialect``), and its connection
or pool (``Statements``: the rows of a statement; ``Writing``: on the writer's
connection, also its transactions and its units of work). Each store's errors are
translated inside (its ``mapped_errors``): what reaches the shared code, and its
callers, is a :mod:`rifflux.errors` class.

A shared statement has ``?`` placeholders, one per parameter, in order, and no ``?``
inside a string literal or a quoted name: the PostgreSQL store numbers them (``$1``,
``$2``, ...) as asyncpg wants them (``postgres.connection.numbered``). A statement
that only one store runs is written in that store's module, in its own form.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from .written import Row

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """How a store spells the few things the shared statements say differently; each
    piece is put in a statement as it is."""

    #: The function that finds a text in another, ``(text, wanted)``: where it starts
    #: (from 1), 0 when it is not there (SQLite's ``instr``, PostgreSQL's ``strpos``).
    position: str
    #: The collation that orders text by its bytes (UTF-8: by code point), so that both
    #: stores order paths alike (SQLite's ``BINARY``, its default; PostgreSQL's ``"C"``).
    bytewise: str
    #: After a column: it is one of a list of values given as one parameter (``listed``).
    among: str
    #: That parameter, made from the values, numbers or texts (a JSON array for SQLite's
    #: ``json_each``, a list for PostgreSQL's ``ANY``).
    listed: Callable[[Collection[int] | Collection[str]], object]
    #: After a column: it starts with the ``like_prefix`` pattern given as one parameter.
    like: str


def like_prefix(prefix: str) -> str:
    """A ``LIKE`` pattern for the paths that start with ``prefix``: ``\\`` escapes
    (``Dialect.like`` says so to SQLite; it is PostgreSQL's default)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


class Statements(Protocol):
    """A store's connection, or its pool, as the shared statements run on it."""

    @property
    def dialect(self) -> Dialect: ...
    async def fetch(self, sql: str, *args: object) -> Sequence[Row]:
        """The rows of ``sql`` (``?`` placeholders) with these parameters."""
        ...


class Writing(Statements, Protocol):
    """The writer's connection, as shared code writes on it."""

    async def execute(self, sql: str, *args: object) -> None: ...
    def transaction(self) -> AbstractAsyncContextManager[None]:
        """One write transaction (the store's: SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's
        with the writers' lock), its errors translated too, ``COMMIT``'s included; any
        exception rolls it back."""
        ...
    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``work``, one unit of work on this connection: the PostgreSQL store runs it
        again whole on a new connection when the connection was lost (its
        ``session``); SQLite's simply runs it."""
        ...
