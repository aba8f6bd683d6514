"""Opening a database: pragmas, schema creation, version checks, error mapping."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiosqlite
import anyio

from ..errors import IndexBusyError, IndexDatabaseError, SchemaVersionError
from .recovery import is_damage, mark_for_check

SCHEMA_VERSION = 4

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS roots(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    root_id INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
    rel_path TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    title TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    aliases TEXT NOT NULL DEFAULT '[]',
    indexed_at REAL NOT NULL,
    frontmatter TEXT NOT NULL DEFAULT '{{}}',
    line_count INTEGER NOT NULL DEFAULT 0,
    encoding TEXT NOT NULL DEFAULT 'utf-8',
    UNIQUE(root_id, rel_path)
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    line_start INTEGER NOT NULL DEFAULT 0,
    line_end INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id, chunk_index);
CREATE INDEX IF NOT EXISTS chunks_hash ON chunks(content_hash);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    heading_path, content,
    content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading_path, content)
    VALUES (new.id, new.heading_path, new.content);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content)
    VALUES ('delete', old.id, old.heading_path, old.content);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content)
    VALUES ('delete', old.id, old.heading_path, old.content);
    INSERT INTO chunks_fts(rowid, heading_path, content)
    VALUES (new.id, new.heading_path, new.content);
END;
-- A rowid table: the 1.5 KB vectors live in the table's pages, so the index that
-- answers "has this text a vector?" stays small and fast.
CREATE TABLE IF NOT EXISTS embeddings(
    id INTEGER PRIMARY KEY,
    content_hash TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE(content_hash, model)
);
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
"""


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def translate(exc: sqlite3.Error, db_path: Path | str) -> IndexDatabaseError:
    """The Rifflux error for a sqlite3 error, with a message that says what to do."""
    if _is_busy(exc):
        return IndexBusyError(
            f"the index {db_path} is locked by another writer ({exc}); "
            "retry shortly, or stop the other process writing to it"
        )
    text = str(exc).lower()
    if is_damage(text):
        mark_for_check(Path(db_path))
        return IndexDatabaseError(
            f"the index {db_path} is damaged ({exc}); Rifflux moves it aside and rebuilds it "
            "from your markdown files the next time it opens it (restart it); the files "
            "themselves are untouched"
        )
    if "full" in text:
        return IndexDatabaseError(
            f"the disk holding the index {db_path} is full ({exc}): nothing half-written was "
            "kept and searches go on; free some space and reindex"
        )
    if "disk i/o error" in text:
        return IndexDatabaseError(
            f"the index {db_path} could not be written ({exc}: a full disk, a file size "
            "limit or a failing drive); nothing half-written was kept; fix that and reindex"
        )
    if "readonly" in text or "read-only" in text:
        return IndexDatabaseError(
            f"the index {db_path} cannot be written ({exc}: a read-only file, folder or file "
            "system); make it writable, or point --db (RIFFLUX_DB_PATH) somewhere writable"
        )
    if "unable to open" in text:
        return IndexDatabaseError(
            f"cannot open the index {db_path} ({exc}): check that its folder exists and is "
            "writable, or point --db (RIFFLUX_DB_PATH) elsewhere"
        )
    return IndexDatabaseError(f"index database error on {db_path}: {exc}")


@contextmanager
def mapped_errors(db_path: Path | str) -> Iterator[None]:
    """Translate sqlite3 errors raised inside the block (httpcore's map_exceptions)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise translate(exc, db_path) from exc


async def connect(
    db_path: Path, *, busy_timeout_ms: int, readonly: bool = False
) -> aiosqlite.Connection:
    """A configured connection; the writer also creates or checks the schema."""
    if not readonly:
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexDatabaseError(
                f"cannot create the folder {db_path.parent} for the index ({exc.strerror or exc}):"
                " point --db (RIFFLUX_DB_PATH) at a writable place") from exc
    with mapped_errors(db_path):
        # Shielded (it takes milliseconds): cancelled half-way, the connection's
        # thread would be left running with no one to close it.
        with anyio.CancelScope(shield=True):
            conn = await aiosqlite.connect(str(db_path), isolation_level=None)
        try:
            await conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            await conn.execute("PRAGMA foreign_keys=ON")
            if not readonly:
                await conn.execute("PRAGMA journal_mode=WAL")
                await conn.execute("PRAGMA synchronous=NORMAL")
                await _ensure_schema(conn, db_path)
            else:
                await check_version(conn, db_path)
        except BaseException:
            with anyio.CancelScope(shield=True):  # also when cancelled: its thread must end
                await conn.close()
            raise
    return conn


async def _ensure_schema(conn: aiosqlite.Connection, db_path: Path) -> None:
    cur = await conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='meta'"
    )
    exists = await cur.fetchone() is not None
    if exists and await _version(conn) in _UPGRADES:
        await _upgrade(conn)
    if exists:
        await check_version(conn, db_path)
    await conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")


#: Older schema versions this one upgrades in place: the statements, and whether every
#: file must be read again (then it is marked stale, ``mtime_ns = -1``, and the next
#: start reads it in the background).
_UPGRADES: dict[int, tuple[str, bool]] = {
    2: ("""
    ALTER TABLE files ADD COLUMN frontmatter TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE files ADD COLUMN line_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE chunks ADD COLUMN line_start INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE chunks ADD COLUMN line_end INTEGER NOT NULL DEFAULT 0;
    """, True),
    3: ("""
    ALTER TABLE files ADD COLUMN encoding TEXT NOT NULL DEFAULT 'utf-8';
    """, False),  # every file indexed so far was read as UTF-8
}

#: ``mtime_ns`` of a file that must be read again (after an upgrade).
STALE_MTIME = -1


async def _upgrade(conn: aiosqlite.Connection) -> None:
    """Bring an older index to this version, in one transaction: what it lacks is read
    from the files again (stale files are reindexed at start), vectors are kept."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        version = await _version(conn)
        reread = False
        while version in _UPGRADES:
            statements, stale = _UPGRADES[version]
            # one statement at a time: executescript would commit first
            for statement in filter(str.strip, statements.split(";")):
                await conn.execute(statement)
            reread = reread or stale
            version += 1
        if reread:
            await conn.execute("UPDATE files SET mtime_ns = ?, sha256 = ''", (STALE_MTIME,))
        await conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                           (str(version),))
        await conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            await conn.execute("ROLLBACK")
        raise


async def _version(conn: aiosqlite.Connection) -> int:
    cur = await conn.execute("SELECT value FROM meta WHERE key='schema_version'")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def check_version(conn: aiosqlite.Connection, db_path: Path) -> None:
    try:
        cur = await conn.execute("SELECT value FROM meta WHERE key='schema_version'")
        row = await cur.fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise SchemaVersionError(
                f"{db_path} is not a Rifflux index (no meta table); "
                "point --db at another file or delete this one"
            ) from exc
        raise
    version = int(row[0]) if row else 0
    if version in _UPGRADES:
        raise SchemaVersionError(
            f"{db_path} was written by an older Rifflux (index schema version {version}, "
            f"this one uses {SCHEMA_VERSION}); open it once without read_only (or reindex) "
            "to upgrade it in place"
        )
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{db_path} has index schema version {version}, this Rifflux uses "
            f"{SCHEMA_VERSION}; delete the file (and its -wal/-shm files) and reindex, "
            "or use the Rifflux version that wrote it"
        )
