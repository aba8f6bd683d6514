"""Opening a database: pragmas, schema creation, version checks, error mapping."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.cjk import characters, has_cjk, index_text
from ...errors import IndexDatabaseError, SchemaVersionError
from ..roots import STALE_MTIME  # (the files an upgrade marks to be read again)
from .history_schema import HISTORY_SCHEMA
from .lexicon_schema import LEXICON_SCHEMA
from .link_schema import LINKS_SCHEMA
from .recovery import immutable_uri
from .sql import is_busy, mapped_errors, transaction
from .vector_schema import VECTORS_SCHEMA

if TYPE_CHECKING:  # (aiosqlite and anyio: imported by connect, not by a one-shot read)
    import aiosqlite

    from .sql import Connection

SCHEMA_VERSION = 9
#: The writer connection's page cache, in KiB (filled only as pages are used).
WRITER_CACHE_KIB = 32 * 1024
#: How FTS5 cuts text into terms (the lexicon cuts query words the same way).
TOKENIZER = "porter unicode61 remove_diacritics 2"

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
    kind TEXT NOT NULL DEFAULT 'markdown',
    langs TEXT NOT NULL DEFAULT '[]',
    langs_pending INTEGER NOT NULL DEFAULT 0,
    UNIQUE(root_id, rel_path)
);
-- The files whose chunks' languages are not told yet (store.telling fills them).
CREATE INDEX IF NOT EXISTS files_langs_pending ON files(id) WHERE langs_pending > 0;
-- fts_heading, fts_content, cjk: what FTS5 indexes instead for text with CJK in it
-- (core.cjk), NULL otherwise. (No comments inside CREATE TABLE: ALTER TABLE rewrites it.)
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    line_start INTEGER NOT NULL DEFAULT 0,
    line_end INTEGER NOT NULL DEFAULT 0,
    page INTEGER,
    fts_heading TEXT,
    fts_content TEXT,
    cjk TEXT,
    lang TEXT
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id, chunk_index);
-- By text; with the file, so that a load of the vector matrix (every vector, its chunk
-- and file) reads this index and never the chunks' rows: 11.5 s -> 5.7 s at a million.
-- (built once in an index made before it: 3 s at a million chunks)
CREATE INDEX IF NOT EXISTS chunks_hash_file ON chunks(content_hash, file_id);
DROP INDEX IF EXISTS chunks_hash;
-- FTS5's content table: the text as indexed (FTS5 reads it to rebuild and check)
CREATE VIEW IF NOT EXISTS chunks_fts_text AS SELECT id,
    COALESCE(fts_heading, heading_path) AS heading_path,
    COALESCE(fts_content, content) AS content, COALESCE(cjk, '') AS cjk FROM chunks;
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    heading_path, content, cjk,
    content='chunks_fts_text', content_rowid='id',
    tokenize='{TOKENIZER}'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading_path, content, cjk)
    VALUES (new.id, COALESCE(new.fts_heading, new.heading_path),
            COALESCE(new.fts_content, new.content), COALESCE(new.cjk, ''));
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content, cjk)
    VALUES ('delete', old.id, COALESCE(old.fts_heading, old.heading_path),
            COALESCE(old.fts_content, old.content), COALESCE(old.cjk, ''));
END;
CREATE TRIGGER IF NOT EXISTS chunks_au
AFTER UPDATE OF heading_path, content, fts_heading, fts_content, cjk ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content, cjk)
    VALUES ('delete', old.id, COALESCE(old.fts_heading, old.heading_path),
            COALESCE(old.fts_content, old.content), COALESCE(old.cjk, ''));
    INSERT INTO chunks_fts(rowid, heading_path, content, cjk)
    VALUES (new.id, COALESCE(new.fts_heading, new.heading_path),
            COALESCE(new.fts_content, new.content), COALESCE(new.cjk, ''));
END;
{VECTORS_SCHEMA}
{LINKS_SCHEMA}
{LEXICON_SCHEMA}
{HISTORY_SCHEMA}
-- Written by every writing process, read by the others (store/sqlite/changes.py,
-- store/sqlite/presence.py): added to older indexes as they are opened, no upgrade needed.
CREATE TABLE IF NOT EXISTS changes(
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    origin TEXT NOT NULL,
    kind TEXT NOT NULL,
    ref INTEGER,
    hash TEXT
);
CREATE TABLE IF NOT EXISTS processes(
    origin TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    roles TEXT NOT NULL,
    started_at REAL NOT NULL,
    last_seen REAL NOT NULL
);
INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
"""


#: What the schema makes: an index that holds all of it is opened without a write (so a
#: search is not held up by another process writing: in WAL, reads never wait for it).
_OBJECTS = frozenset(re.findall(
    r"CREATE (?:VIRTUAL )?(?:TABLE|INDEX|TRIGGER|VIEW) IF NOT EXISTS (\w+)", _SCHEMA))


async def connect(
    db_path: Path, *, busy_timeout_ms: int, readonly: bool = False, snapshot: bool = False
) -> aiosqlite.Connection:
    """A configured connection; the writer also creates or checks the schema.
    ``snapshot``: a reader that may read an index it cannot share as it is now
    (``recovery.immutable_uri``)."""
    import aiosqlite
    import anyio

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
            conn = await aiosqlite.connect(database(db_path, readonly=readonly,
                                                    snapshot=snapshot),
                                           uri=True, isolation_level=None)
        try:
            await prepare(conn, db_path, busy_timeout_ms=busy_timeout_ms, readonly=readonly)
        except BaseException:
            with anyio.CancelScope(shield=True):  # also when cancelled: its thread must end
                await conn.close()
            raise
    return conn


def database(db_path: Path, *, readonly: bool, snapshot: bool) -> str:
    """What a connection to ``db_path`` opens: the file, or for a reader that may read an
    index it cannot share as it is now (``snapshot``), the immutable file's URI when it
    cannot share it (``recovery.immutable_uri``)."""
    immutable = immutable_uri(db_path) if readonly and snapshot else None
    return immutable or str(db_path)


async def prepare(conn: Connection, db_path: Path, *, busy_timeout_ms: int,
                  readonly: bool) -> None:
    """A new connection to ``db_path`` set up: the writer's makes, upgrades or checks the
    schema; a reader's checks that it is this version's (a one-shot read's too:
    ``direct``)."""
    await conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
    await conn.execute("PRAGMA foreign_keys=ON")
    if readonly:
        await check_version(conn, db_path)
        return
    await _wal(conn, busy_timeout_ms)
    await conn.execute("PRAGMA synchronous=NORMAL")
    # The writer's page cache: a bulk index inserts into b-trees keyed by
    # hashes (chunk ids, content hashes), which touch pages all over them;
    # SQLite's default 2 MB re-reads them from the OS at every write.
    await conn.execute(f"PRAGMA cache_size={-WRITER_CACHE_KIB}")
    await _ensure_schema(conn, db_path)


async def settled(conn: Connection) -> bool:
    """Whether a writer opening the index (already of this version: ``prepare``) finds
    nothing to do to it first: every object of the schema made, no full-text index to
    fill. A one-shot read of an index that is not settled takes the full path."""
    return not await _missing_objects(conn) and not await _fts_to_fill(conn)


async def _missing_objects(conn: Connection) -> bool:
    names = {str(r[0]) for r in await conn.execute_fetchall("SELECT name FROM sqlite_master")}
    return not _OBJECTS <= names


async def _fts_to_fill(conn: Connection) -> bool:
    cur = await conn.execute("SELECT 1 FROM meta WHERE key = 'fill_fts'")
    return await cur.fetchone() is not None


async def _wal(conn: Connection, busy_timeout_ms: int) -> None:
    """Switch to WAL. Two processes opening a new index at the same moment race for
    this switch, and SQLite answers "database is locked" at once rather than waiting;
    the loser tries again, within the busy timeout."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.01
    while True:
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() > deadline:
                raise
        import anyio  # (only a writer's connection waits: with an event loop)

        await anyio.sleep(delay)
        delay = min(delay * 2, 0.2)


async def _ensure_schema(conn: Connection, db_path: Path) -> None:
    cur = await conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name='meta'"
    )
    exists = await cur.fetchone() is not None
    if exists and await _version(conn) in _UPGRADES:
        await _upgrade(conn)
    if exists:
        await check_version(conn, db_path)
        if await _missing_objects(conn):
            await conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
        await _fill_fts(conn)
        return
    await conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
    # (a new file is as sound as a checked one: its daily check is a day away)
    await conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('checked_at', ?)",
                       (str(time.time()),))


async def _fill_fts(conn: Connection) -> None:
    """After an upgrade that recreated the full-text index, build it from the stored
    chunks (an interrupted build is redone at the next open)."""
    if not await _fts_to_fill(conn):
        return
    async with transaction(conn):
        await conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        await conn.execute("DELETE FROM meta WHERE key = 'fill_fts'")


async def _fill_cjk_columns(conn: Connection) -> None:
    """What FTS5 indexes for the stored chunks with CJK text (upgrade to version 5, while
    the full-text index and its triggers are gone)."""
    rows = await conn.execute_fetchall("SELECT id, heading_path, content FROM chunks")
    await conn.executemany(
        "UPDATE chunks SET fts_heading = ?, fts_content = ?, cjk = ? WHERE id = ?",
        [(*cjk_columns(str(r[1]), str(r[2])), int(r[0])) for r in rows
         if has_cjk(str(r[1])) or has_cjk(str(r[2]))])


def cjk_columns(heading_path: str, content: str) -> tuple[str | None, str | None, str | None]:
    """``fts_heading``, ``fts_content`` and ``cjk`` of a chunk (all None without CJK)."""
    if not (has_cjk(heading_path) or has_cjk(content)):
        return None, None, None  # (nearly every chunk: one scan of each, not three)
    return index_text(heading_path), index_text(content), characters(heading_path, content)


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
    4: ("""
    DROP TRIGGER IF EXISTS chunks_ai;
    DROP TRIGGER IF EXISTS chunks_ad;
    DROP TRIGGER IF EXISTS chunks_au;
    DROP TABLE IF EXISTS chunks_fts;
    ALTER TABLE chunks ADD COLUMN fts_heading TEXT;
    ALTER TABLE chunks ADD COLUMN fts_content TEXT;
    ALTER TABLE chunks ADD COLUMN cjk TEXT;
    INSERT OR REPLACE INTO meta(key, value) VALUES ('fill_fts', '1');
    """, False),  # the CJK columns are filled and FTS5 rebuilt from the stored chunks
    5: ("", True),  # the links tables are new: files are read again for their links
    6: ("""
    ALTER TABLE files ADD COLUMN kind TEXT NOT NULL DEFAULT 'markdown';
    ALTER TABLE chunks ADD COLUMN page INTEGER;
    """, True),  # every file so far was a note: read again for its links to other kinds
    7: ("""
    ALTER TABLE files ADD COLUMN langs TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE chunks ADD COLUMN lang TEXT;
    """, False),  # each chunk's language (core.language): told after the upgrade (9)
    8: ("""
    ALTER TABLE files ADD COLUMN langs_pending INTEGER NOT NULL DEFAULT 0;
    DROP TRIGGER IF EXISTS chunks_au;
    """, False),  # languages told after the commit; telling one rewrites no full-text row
}
#: The first version whose chunks have their languages: an older index's are told by the
#: languages pass (``store.telling``) once upgraded, from the stored chunks.
_LANGUAGES_SINCE = 8


#: Every file's chunks marked as waiting for their languages (an index made before them).
UNTOLD = ("UPDATE files SET langs_pending = (SELECT count(*) FROM chunks c "
          "WHERE c.file_id = files.id)")


async def _upgrade(conn: Connection) -> None:
    """Bring an older index to this version, in one transaction: what it lacks is read
    from the files again (stale files are reindexed at start), vectors are kept."""
    async with transaction(conn):
        version = await _version(conn)
        untold = version < _LANGUAGES_SINCE
        reread = False
        while version in _UPGRADES:
            statements, stale = _UPGRADES[version]
            # one statement at a time: executescript would commit first
            for statement in filter(str.strip, statements.split(";")):
                await conn.execute(statement)
            reread = reread or stale
            if version == 4:
                await _fill_cjk_columns(conn)
            version += 1
        if reread:
            await conn.execute("UPDATE files SET mtime_ns = ?, sha256 = ''", (STALE_MTIME,))
        if untold:
            await conn.execute(UNTOLD)
        await conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                           (str(version),))


async def _version(conn: Connection) -> int:
    cur = await conn.execute("SELECT value FROM meta WHERE key='schema_version'")
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def check_version(conn: Connection, db_path: Path) -> None:
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
