"""The PostgreSQL index's schema: made once, by whichever process opens the database
first (under the advisory lock ``SCHEMA_LOCK``: the others wait, then find it made),
versioned in ``meta`` as the SQLite schema is.

The tables are SQLite's, in PostgreSQL's types, with these differences:

- ``chunks.lexemes``: the text the lexical leg indexes, tokens made in Python
  (``core.lexemes``) so that they are FTS5's; a BM25 index on it (``pg_textsearch``,
  k1 = 1.2, b = 0.75, configuration ``simple``) finds the best chunks, and a GIN
  index on its ``tsvector`` tells which chunks match (phrases, prefixes).
- What FTS5's ``bm25()`` is computed from, kept by triggers on ``chunks`` in the
  transaction that writes them (``store.postgres.lexical`` ranks with it):
  ``chunks.length``, the chunk's tokens as FTS5 counts them (the breadcrumb once);
  ``lexicon``, every token with the chunks holding it (also to complete a
  ``prefix*``); ``lexical_totals``, the chunks and their tokens. Each writer updates
  the totals' row before the lexicon: that row's lock orders them.
- ``chunk_vectors``: each chunk's vector of the active model, with its file, under an
  HNSW index (cosine) made per dimension when the first vector of that size is
  stored; ``embeddings`` keeps one vector per text, as in SQLite, so that a text
  is embedded once.
- The git history's tables (``history_schema``), since version 6 (its word counts'
  triggers cheaper since version 7).
- The change log is written by statement triggers (transition tables), under the
  origin each writing connection sets (``rifflux.origin``); each statement that
  logs notifies ``changes.CHANNEL`` with that origin and its last sequence number.

Schema changes run once, under ``SCHEMA_LOCK``, whoever opens the database first:
creation, and the upgrade of an older version (``_UPGRADES``, each step in the
transaction that records the new version). A read-only open upgrades nothing: it
asks for an open that may write.

Without ``pg_textsearch`` (not installed, or not in ``shared_preload_libraries``)
the index is made without its BM25 index and the lexical leg ranks with
PostgreSQL's own ``ts_rank_cd`` instead: ``status()`` says so. The BM25 index is
made at the first open after the extension appears.
"""

from __future__ import annotations

import logging

import asyncpg

from ...errors import IndexDatabaseError, SchemaVersionError
from ...location import DatabaseUrl
from ...types import LexicalRanking
from ..roots import STALE_MTIME
from .connection import LOCKS, SCHEMA_LOCK, Connection, mapped_errors
from .history_schema import HISTORY_BM25_INDEX, HISTORY_COUNTS, HISTORY_TABLES
from .word_counts import counted_words

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 8
#: The name of the BM25 index (``to_bm25query`` names it).
BM25_INDEX = "chunks_bm25"

#: A chunk's tokens as FTS5 counts them: ``lexemes`` holds the breadcrumb twice (its
#: weight), then the text and the CJK characters, set apart by `` | ``; FTS5 counts
#: the breadcrumb once.
_LENGTH = ("cardinality(array_remove(array_remove(string_to_array(lexemes, ' '), '|'), '')) - "
           "cardinality(array_remove(string_to_array(split_part(lexemes, ' | ', 1), ' '), ''))")
#: The GIN index that tells which chunks match a query (``bulk`` builds it at the end).
WORDS_INDEX = ("CREATE INDEX IF NOT EXISTS chunks_words ON chunks USING gin "
               "(to_tsvector('simple'::regconfig, lexemes))")
#: Each chunk's distinct tokens, of the chunks in ``{rows}``: (term, chunks holding it).
TERMS = ("SELECT w, count(DISTINCT c.id) FROM {rows} c, "
          "regexp_split_to_table(c.lexemes, '[ |]+') AS w WHERE w <> '' GROUP BY w")

_TABLES = f"""
CREATE TABLE meta(key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE roots(id bigserial PRIMARY KEY, path text NOT NULL UNIQUE);
CREATE TABLE files(
    id bigserial PRIMARY KEY,
    root_id bigint NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
    rel_path text NOT NULL, mtime_ns bigint NOT NULL, size bigint NOT NULL,
    sha256 text NOT NULL, title text, tags text NOT NULL DEFAULT '[]',
    aliases text NOT NULL DEFAULT '[]', indexed_at double precision NOT NULL,
    frontmatter text NOT NULL DEFAULT '{{}}', line_count integer NOT NULL DEFAULT 0,
    encoding text NOT NULL DEFAULT 'utf-8', kind text NOT NULL DEFAULT 'markdown',
    langs text NOT NULL DEFAULT '[]', langs_pending integer NOT NULL DEFAULT 0,
    UNIQUE(root_id, rel_path));
CREATE INDEX files_langs_pending ON files(id) WHERE langs_pending > 0;
CREATE TABLE chunks(
    id bigserial PRIMARY KEY, chunk_id text NOT NULL UNIQUE,
    file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_index integer NOT NULL, heading_path text NOT NULL, content text NOT NULL,
    content_hash text NOT NULL, line_start integer NOT NULL DEFAULT 0,
    line_end integer NOT NULL DEFAULT 0, page integer, lexemes text NOT NULL,
    lang text, length integer GENERATED ALWAYS AS ({_LENGTH}) STORED);
CREATE INDEX chunks_file ON chunks(file_id, chunk_index);
CREATE INDEX chunks_hash ON chunks(content_hash);
{WORDS_INDEX};
CREATE TABLE lexicon(term text COLLATE "C" PRIMARY KEY, chunks integer NOT NULL DEFAULT 0);
CREATE TABLE embeddings(
    id bigserial PRIMARY KEY, content_hash text NOT NULL, model text NOT NULL,
    dim integer NOT NULL, vector vector NOT NULL, UNIQUE(content_hash, model));
CREATE TABLE chunk_vectors(
    chunk_id bigint PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    file_id bigint NOT NULL, embedding vector NOT NULL);
CREATE INDEX chunk_vectors_file ON chunk_vectors(file_id);
CREATE TABLE links(
    id bigserial PRIMARY KEY,
    file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_index integer NOT NULL, line integer NOT NULL, heading text NOT NULL DEFAULT '',
    kind text NOT NULL, embed boolean NOT NULL DEFAULT false, target text NOT NULL,
    text text NOT NULL, context text NOT NULL DEFAULT '', rel_key text,
    abs_key text NOT NULL, name_key text NOT NULL, alias_key text NOT NULL,
    target_file_id bigint);
CREATE INDEX links_file ON links(file_id);
CREATE INDEX links_target ON links(target_file_id);
CREATE INDEX links_name ON links(name_key);
CREATE INDEX links_alias ON links(alias_key);
CREATE TABLE note_keys(
    file_id bigint PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    path_key text NOT NULL, name_key text NOT NULL);
CREATE INDEX note_keys_name ON note_keys(name_key);
CREATE TABLE note_aliases(
    file_id bigint NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    alias_key text NOT NULL, PRIMARY KEY(file_id, alias_key));
CREATE INDEX note_aliases_key ON note_aliases(alias_key);
CREATE TABLE changes(
    seq bigserial PRIMARY KEY, origin text NOT NULL, kind text NOT NULL, ref bigint,
    hash text);
CREATE TABLE processes(
    origin text PRIMARY KEY, pid integer NOT NULL, roles text NOT NULL,
    started_at double precision NOT NULL, last_seen double precision NOT NULL);
"""

#: Version 2: a notification for every statement that logs.
_NOTIFY = """
CREATE OR REPLACE FUNCTION rifflux_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE last bigint; BEGIN
    SELECT max(seq) INTO last FROM new_rows;
    IF last IS NOT NULL THEN
        PERFORM pg_notify('rifflux_changes', rifflux_origin() || ' ' || last);
    END IF;
    RETURN NULL; END $$;
DROP TRIGGER IF EXISTS changes_notified ON changes;
CREATE TRIGGER changes_notified AFTER INSERT ON changes REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_notify();
"""

#: Version 3: what FTS5's bm25 is computed from (see the module), kept by triggers.
_WORD_COUNTS = """
CREATE TABLE lexical_totals(
    one boolean PRIMARY KEY DEFAULT true CHECK (one), chunks bigint NOT NULL,
    tokens bigint NOT NULL);
INSERT INTO lexical_totals(chunks, tokens) SELECT count(*), COALESCE(sum(length), 0) FROM chunks;
""" + counted_words(table="chunks", totals="lexical_totals", lexicon="lexicon", count="chunks",
                    terms=TERMS, function="rifflux_words", trigger="chunks_words")

#: Version 2 to 3: the word counts of the chunks stored.
_COUNTED = f"""
ALTER TABLE chunks ADD COLUMN length integer GENERATED ALWAYS AS ({_LENGTH}) STORED;
ALTER TABLE lexicon ADD COLUMN chunks integer NOT NULL DEFAULT 0;
INSERT INTO lexicon(term, chunks) {TERMS.format(rows="chunks")}
    ON CONFLICT (term) DO UPDATE SET chunks = excluded.chunks;
{_WORD_COUNTS}"""

#: What brings a schema of each older version to the next.
#: Version 4: the kind of each file (core.extract), and the page or slide of a chunk;
#: every file so far was a note, read again at start for its links to other kinds of
#: file (its vectors are kept: they are found by their texts' hashes).
_KINDS = f"""
ALTER TABLE files ADD COLUMN kind text NOT NULL DEFAULT 'markdown';
ALTER TABLE chunks ADD COLUMN page integer;
UPDATE files SET mtime_ns = {STALE_MTIME}, sha256 = '';
"""

#: Version 5: each chunk's language (``core.language``) and its file's languages, told
#: from the stored chunks once the index is upgraded (version 8's ``langs_pending``).
_LANGUAGES = """
ALTER TABLE files ADD COLUMN langs text NOT NULL DEFAULT '[]';
ALTER TABLE chunks ADD COLUMN lang text;
"""

#: Version 8: the languages are told after the commit (``store.telling``): a file counts
#: the chunks still waiting for theirs.
_PENDING = """
ALTER TABLE files ADD COLUMN langs_pending integer NOT NULL DEFAULT 0;
CREATE INDEX files_langs_pending ON files(id) WHERE langs_pending > 0;
"""
#: The first version whose chunks have their languages: an older index's are told by the
#: languages pass once upgraded.
_LANGUAGES_SINCE = 5
#: Every file's chunks marked as waiting for their languages.
_UNTOLD = ("UPDATE files SET langs_pending = (SELECT count(*) FROM chunks c "
           "WHERE c.file_id = files.id)")

#: Version 6: the git history's tables (``history_schema``), empty: the history actor
#: reads the repositories' commits at start. Version 7: the commits' word counts' trigger
#: functions, cheaper (``history_schema.HISTORY_COUNTS``). Version 8: ``_PENDING``.
_UPGRADES: dict[int, str] = {1: _NOTIFY, 2: _COUNTED, 3: _KINDS, 4: _LANGUAGES,
                             5: HISTORY_TABLES, 6: HISTORY_COUNTS, 7: _PENDING}

#: The change log's triggers: what each table's writes log, under the writing
#: connection's origin (see ``store.sqlite.changes`` for what each kind means).
_TRIGGERS = """
CREATE FUNCTION rifflux_origin() RETURNS text LANGUAGE sql STABLE AS
    $$ SELECT COALESCE(current_setting('rifflux.origin', true), '') $$;
CREATE FUNCTION rifflux_log_files() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO changes(origin, kind, ref)
        SELECT rifflux_origin(), 'file_gone', id FROM old_rows;
    ELSE
        INSERT INTO changes(origin, kind, ref) SELECT rifflux_origin(), 'file', id FROM new_rows;
    END IF;
    RETURN NULL; END $$;
CREATE FUNCTION rifflux_log_roots() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO changes(origin, kind, ref)
        SELECT rifflux_origin(), 'root_gone', id FROM old_rows;
    ELSE
        INSERT INTO changes(origin, kind, ref) SELECT rifflux_origin(), 'root', id FROM new_rows;
    END IF;
    RETURN NULL; END $$;
CREATE FUNCTION rifflux_log_links() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO changes(origin, kind, ref)
    SELECT DISTINCT rifflux_origin(), 'links', n.file_id FROM new_rows n JOIN old_rows o
        ON o.id = n.id WHERE n.target_file_id IS DISTINCT FROM o.target_file_id;
    RETURN NULL; END $$;
CREATE FUNCTION rifflux_log_vectors() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO changes(origin, kind, hash)
    SELECT rifflux_origin(), 'vector', content_hash FROM new_rows;
    RETURN NULL; END $$;
CREATE FUNCTION rifflux_log_texts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    INSERT INTO changes(origin, kind, hash)
    SELECT DISTINCT rifflux_origin(), 'text_gone', o.content_hash FROM old_rows o
    WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = o.content_hash);
    RETURN NULL; END $$;
CREATE TRIGGER files_logged_in AFTER INSERT ON files REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_files();
CREATE TRIGGER files_logged_up AFTER UPDATE ON files REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_files();
CREATE TRIGGER files_logged_out AFTER DELETE ON files REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_files();
CREATE TRIGGER roots_logged_in AFTER INSERT ON roots REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_roots();
CREATE TRIGGER roots_logged_out AFTER DELETE ON roots REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_roots();
CREATE TRIGGER links_logged AFTER UPDATE ON links
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_links();
CREATE TRIGGER vectors_logged AFTER INSERT ON embeddings REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_vectors();
CREATE TRIGGER texts_logged AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION rifflux_log_texts();
"""

BM25 = (f"CREATE INDEX IF NOT EXISTS {BM25_INDEX} ON chunks USING bm25(lexemes) "
         "WITH (text_config='simple', k1=1.2, b=0.75)")

_NO_PGVECTOR = (
    "the PostgreSQL server of {where} lacks the pgvector extension ({exc}): install it on "
    "the server (Debian/Ubuntu: apt install postgresql-17-pgvector; or build it from "
    "github.com/pgvector/pgvector), then open the index again; a role that may not "
    "create extensions needs a superuser to run CREATE EXTENSION vector once")


def hnsw_index(dim: int) -> str:
    """The name of the HNSW index over vectors of ``dim`` dimensions."""
    return f"chunk_vectors_hnsw_{int(dim)}"


async def ensure_schema(conn: Connection, where: DatabaseUrl) -> None:
    """Make the schema if the database has none, upgrade an older one, or check its
    version; once, whoever starts first (the others wait for the lock, then find it
    made)."""
    with mapped_errors(where):
        await conn.execute("SELECT pg_advisory_lock($1, $2)", LOCKS, SCHEMA_LOCK)
        try:
            await _extensions(conn, where)
            async with conn.transaction():
                if await _has_meta(conn):
                    await _upgrade(conn, where)
                    await check_version(conn, where)
                else:
                    await conn.execute(_TABLES)
                    await conn.execute(_TRIGGERS)
                    await conn.execute(_NOTIFY)
                    await conn.execute(_WORD_COUNTS)
                    await conn.execute(HISTORY_TABLES)
                    await conn.execute(
                        "INSERT INTO meta(key, value) VALUES ('schema_version', $1), "
                        "('store', 'postgresql')", str(SCHEMA_VERSION))
            if await extension(conn, "pg_textsearch"):
                await conn.execute(BM25)
                await conn.execute(HISTORY_BM25_INDEX)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1, $2)", LOCKS, SCHEMA_LOCK)


async def _extensions(conn: Connection, where: DatabaseUrl) -> None:
    """pgvector is required; pg_textsearch is wanted (without it, see the module)."""
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except (asyncpg.FeatureNotSupportedError, asyncpg.UndefinedFileError,
            asyncpg.InsufficientPrivilegeError) as exc:
        raise IndexDatabaseError(_NO_PGVECTOR.format(where=where, exc=exc)) from exc
    try:
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_textsearch")
    except asyncpg.PostgresError as exc:
        logger.warning(
            "%s: pg_textsearch is not available (%s); lexical search ranks with PostgreSQL's "
            "ts_rank_cd instead of BM25. To rank by BM25, install pg_textsearch on the "
            "server, add it to shared_preload_libraries, restart it and open the index "
            "again", where, str(exc).splitlines()[0])


async def extension(conn: Connection, name: str) -> bool:
    """Whether the database has the extension ``name`` installed."""
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension "
                                    "WHERE extname = $1)", name))


async def lexical_ranking(conn: Connection, where: DatabaseUrl) -> LexicalRanking:
    """``bm25`` when the BM25 index exists, else ``ts_rank_cd``."""
    with mapped_errors(where):
        found = await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", BM25_INDEX)
    return "bm25" if found else "ts_rank_cd"


async def _version(conn: Connection) -> int | None:
    value = await conn.fetchval("SELECT value FROM meta WHERE key = 'schema_version'")
    return None if value is None else int(value)


async def _upgrade(conn: Connection, where: DatabaseUrl) -> None:
    """Inside the schema's transaction, under its lock: an older schema brought to this
    version, one step at a time (no vector is made again; version 4 marks the files to
    be read again at start, for their links; an index older than the languages has its
    chunks marked as waiting for them)."""
    version = await _version(conn)
    if version is None or version not in _UPGRADES:
        return
    before = version
    while version in _UPGRADES:
        await conn.execute(_UPGRADES[version])
        version += 1
    if before < _LANGUAGES_SINCE:
        await conn.execute(_UNTOLD)
    await conn.execute("UPDATE meta SET value = $1 WHERE key = 'schema_version'",
                       str(version))
    logger.info("%s: index schema upgraded from version %d to %d", where, before, version)


async def _has_meta(conn: Connection) -> bool:
    return bool(await conn.fetchval("SELECT to_regclass('meta') IS NOT NULL"))


async def check_version(conn: Connection, where: DatabaseUrl) -> None:
    """The schema is this Rifflux's (a read-only open checks only this)."""
    with mapped_errors(where):
        if not await _has_meta(conn):
            raise SchemaVersionError(
                f"{where} holds no Rifflux index (no meta table): open it once without "
                "read_only to create one, or point --db at another database")
        version = await _version(conn)
    if version in _UPGRADES:
        raise SchemaVersionError(
            f"{where} was written by an older Rifflux (index schema version {version}, this "
            f"one uses {SCHEMA_VERSION}); open it once without read_only to upgrade it in "
            "place (on the primary: a replica follows)")
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{where} has index schema version {version}, this Rifflux uses "
            f"{SCHEMA_VERSION} on PostgreSQL; use the Rifflux version that wrote it, or "
            "drop its tables (or use another database) and reindex")
