"""Where an index is: an SQLite file (a path) or a PostgreSQL database (a URL).

``db_path`` (the library), ``--db`` and ``RIFFLUX_DB_PATH`` take either: a text
that starts with ``postgresql://`` or ``postgres://`` names a database, anything
else a file. A URL is shown without its password wherever Rifflux prints it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .errors import InvalidArgumentError

__all__ = ["DatabaseUrl", "IndexLocation", "index_location", "is_database_url"]

_SCHEMES = ("postgresql://", "postgres://")


def is_database_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database rather than a file."""
    return text.strip().lower().startswith(_SCHEMES)


@dataclass(frozen=True, slots=True)
class DatabaseUrl:
    """A PostgreSQL connection URL (``postgresql://user:password@host:port/database``);
    ``str()`` hides the password."""

    url: str

    def __post_init__(self) -> None:
        try:
            urlsplit(self.url).port  # noqa: B018 (read to check it)
        except ValueError as exc:  # ("port could not be cast to integer value", "out of range")
            shown = re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", self.url)
            raise InvalidArgumentError(
                f"the PostgreSQL URL {shown} has no valid port ({exc}): give it as "
                "postgresql://user:password@host:5432/database (the port a number, or "
                "left out for 5432)") from None

    @property
    def redacted(self) -> str:
        """The URL with its password replaced by ``***`` (for messages and status)."""
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        user = parts.username or ""
        return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))

    def __str__(self) -> str:
        return self.redacted

    def __repr__(self) -> str:
        return f"DatabaseUrl({self.redacted!r})"


#: Where an index is: a file, or a database.
IndexLocation = Path | DatabaseUrl


def index_location(value: str | os.PathLike[str] | DatabaseUrl) -> IndexLocation:
    """``value`` as a location: a ``DatabaseUrl`` for a PostgreSQL URL, else a path
    (``~`` expanded)."""
    if isinstance(value, DatabaseUrl):
        return value
    if isinstance(value, str) and is_database_url(value):
        return DatabaseUrl(value.strip())
    return Path(value).expanduser()
