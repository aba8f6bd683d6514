"""The links tables (``link_index`` keeps them): every link of every file as written,
with the keys it is looked up by (``core.links.link_keys``) and the file it resolves to
(NULL: unresolved); and what each file can be found by (``note_keys``,
``note_aliases``). Apart from the code that keeps them, as the other tables' are
(``vector_schema``, ``lexicon_schema``): a reader that only opens the index imports
none of it."""

from __future__ import annotations

LINKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS links(
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    line INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    embed INTEGER NOT NULL DEFAULT 0,
    target TEXT NOT NULL,
    text TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '',
    rel_key TEXT,
    abs_key TEXT NOT NULL,
    name_key TEXT NOT NULL,
    alias_key TEXT NOT NULL,
    target_file_id INTEGER
);
CREATE INDEX IF NOT EXISTS links_file ON links(file_id);
CREATE INDEX IF NOT EXISTS links_target ON links(target_file_id);
CREATE INDEX IF NOT EXISTS links_name ON links(name_key);
CREATE INDEX IF NOT EXISTS links_alias ON links(alias_key);
CREATE TABLE IF NOT EXISTS note_keys(
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    path_key TEXT NOT NULL,
    name_key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS note_keys_name ON note_keys(name_key);
CREATE TABLE IF NOT EXISTS note_aliases(
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    alias_key TEXT NOT NULL,
    PRIMARY KEY(file_id, alias_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS note_aliases_key ON note_aliases(alias_key);
"""
