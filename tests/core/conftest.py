from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator

import pytest

from rifflux.store.sqlite import schema as store_schema

_FTS_DDL = re.search(r"chunks_fts USING fts5\((.*?)\);", store_schema._SCHEMA, re.DOTALL)
assert _FTS_DDL is not None
_FTS_OPTIONS = [o.strip() for o in _FTS_DDL.group(1).split(",")]
FTS_COLUMNS = [o for o in _FTS_OPTIONS if "=" not in o]
FTS_TOKENIZE = next(o for o in _FTS_OPTIONS if o.startswith("tokenize"))
#: The rows of ``fts``, one per heading (which the tests select to name a row).
FTS_ROWS = [
    {"heading_path": "Foxes", "content": "the quick brown fox", "cjk": ""},
    {"heading_path": "Install > Linux", "content": "installing on linux with sudo. café naïve",
     "cjk": ""},
    {"heading_path": "東京", "content": "東京 京タ タワ ワー 日本 本語",
     "cjk": "東 京 タ ワ ー 日 本 語 の テ キ ス ト"},
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """The index's FTS5 table ``t`` (its columns and tokenizer, read from the schema), in
    memory, holding ``FTS_ROWS``."""
    assert FTS_TOKENIZE == "tokenize='porter unicode61 remove_diacritics 2'"
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5({', '.join(FTS_COLUMNS)}, "
               f"{FTS_TOKENIZE})")
    db.executemany(f"INSERT INTO t({', '.join(FTS_COLUMNS)}) VALUES "
                   f"({', '.join('?' for _ in FTS_COLUMNS)})",
                   [tuple(row.get(c, "") for c in FTS_COLUMNS) for row in FTS_ROWS])
    yield db
    db.close()
