"""The lexicon's tables and the triggers that keep it exact between builds.

``lexicon`` (one row) is a build: its number, the watermark ``upto`` (the highest
chunk id then), the bm25 weights and least term frequency it was built with, and
every chunk's length (tokens in all columns) and file, by chunk id.
``lexicon_terms``: for each term in at least ``min_rows`` chunks then, those chunks
(ascending ids) and the term's weighted frequency in each (``core.bm25`` packs both).

Chunks are never edited in place: a file written again has its chunks deleted and
written anew, with new ids, normally above the watermark. The triggers, part of the
schema so that every process writing the index runs them, note what the build does
not know: a chunk of the build deleted (``lexicon_gone``) and the lowest id written at
or below the watermark (``fresh_from``: SQLite reuses the highest ids once their rows
are gone). Created with the other tables when a writer opens the index: nothing to
upgrade, and an index without them is searched by FTS5 alone.
"""

from __future__ import annotations

import sqlite3

from ...core.hits import WEIGHTS
from .sql import Connection

#: The weights as the lexicon records them; another set means it cannot serve.
WEIGHTS_TEXT = ",".join(repr(w) for w in WEIGHTS)


async def lexicon_built(conn: Connection) -> bool:
    """Whether a lexicon is built for these weights (``Lexicon.usable``; numpy-free, so
    that a search on an index without one never imports the lexicon's module)."""
    try:  # (one round trip to the connection's thread: every lexical search asks)
        rows = list(await conn.execute_fetchall("SELECT weights FROM lexicon WHERE id = 1"))
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return False  # an index no writer of this version has opened yet
        raise
    return bool(rows) and rows[0][0] == WEIGHTS_TEXT


LEXICON_SCHEMA = """
CREATE TABLE IF NOT EXISTS lexicon(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    build INTEGER NOT NULL,
    upto INTEGER NOT NULL,
    fresh_from INTEGER,
    weights TEXT NOT NULL,
    min_rows INTEGER NOT NULL,
    lengths BLOB NOT NULL,
    files BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS lexicon_terms(
    term TEXT PRIMARY KEY,
    rows INTEGER NOT NULL,
    ids BLOB NOT NULL,
    counts BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS lexicon_gone(id INTEGER PRIMARY KEY);
CREATE TRIGGER IF NOT EXISTS lexicon_ai AFTER INSERT ON chunks
WHEN new.id <= (SELECT upto FROM lexicon) BEGIN
    UPDATE lexicon SET fresh_from = min(coalesce(fresh_from, new.id), new.id);
END;
CREATE TRIGGER IF NOT EXISTS lexicon_ad AFTER DELETE ON chunks
WHEN old.id <= (SELECT upto FROM lexicon) BEGIN
    INSERT OR IGNORE INTO lexicon_gone(id) VALUES (old.id);
END;
CREATE TRIGGER IF NOT EXISTS lexicon_au AFTER UPDATE ON chunks
WHEN old.id <= (SELECT upto FROM lexicon) OR new.id <= (SELECT upto FROM lexicon) BEGIN
    INSERT OR IGNORE INTO lexicon_gone(id) VALUES (old.id);
    UPDATE lexicon SET fresh_from = min(coalesce(fresh_from, new.id), new.id);
END;
"""
