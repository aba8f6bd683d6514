"""The links tables, kept by the PostgreSQL writer inside its own transactions: the same
rules as ``store.sqlite.link_index`` (only the links that the keys of a change name
are resolved again, by ``store.relinking``; the files that contain them are never
read again), over PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ...core.links import fold, note_keys
from .. import relinking
from ..written import Edges, FileToWrite
from .connection import Connection


async def write_links(conn: Connection, root_id: int,
                      files: Sequence[tuple[int, FileToWrite]]) -> Edges:
    """Replace the links, keys and aliases of files just written (inside the writer's
    transaction), then resolve what they change."""
    ids = [fid for fid, _ in files]
    known = {int(r[0]) for r in await conn.fetch(
        "SELECT file_id FROM note_keys WHERE file_id = ANY($1)", ids)}
    old_aliases = {str(r[0]) for r in await conn.fetch(
        "SELECT alias_key FROM note_aliases WHERE file_id = ANY($1)", ids)}
    await conn.execute("DELETE FROM links WHERE file_id = ANY($1)", ids)
    await conn.execute("DELETE FROM note_aliases WHERE file_id = ANY($1)", ids)
    keys = [(fid, *note_keys(f.rel_path)) for fid, f in files]
    await conn.execute(
        "INSERT INTO note_keys(file_id, path_key, name_key) "
        "SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) "
        "ON CONFLICT (file_id) DO UPDATE SET path_key = excluded.path_key, "
        "name_key = excluded.name_key", *_columns(keys, 3))
    aliases = sorted({(fid, fold(a)) for fid, f in files for a in f.metadata.aliases if fold(a)})
    if aliases:
        await conn.execute("INSERT INTO note_aliases(file_id, alias_key) "
                           "SELECT * FROM unnest($1::bigint[], $2::text[])", *_columns(aliases, 2))
    links = [(fid, link.chunk_index, link.line, link.heading, link.kind, link.embed,
              link.target, link.text, link.context,
              *relinking.stored_keys(f.rel_path, link.kind, link.target))
             for fid, f in files for link in f.links]
    if links:
        await conn.execute(
            "INSERT INTO links(file_id, chunk_index, line, heading, kind, embed, target, text, "
            "context, rel_key, abs_key, name_key, alias_key) "
            "SELECT a, b, c, d, e, f, g, h, i, j, k, l, m FROM unnest("
            "$1::bigint[], $2::int[], $3::int[], $4::text[], $5::text[], $6::bool[], "
            "$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], "
            "$13::text[]) WITH ORDINALITY AS t(a, b, c, d, e, f, g, h, i, j, k, l, m, n) "
            "ORDER BY n", *_columns(links, 13))
    new_names = {note_keys(f.rel_path)[1] for fid, f in files if fid not in known}
    return await _resolve(conn, root_id, names=new_names,
                          aliases=old_aliases | {a for _, a in aliases}, sources=ids)


def _columns(rows: Sequence[tuple[object, ...]], width: int) -> list[list[object]]:
    """Rows as columns, for ``unnest``."""
    return [[row[i] for row in rows] for i in range(width)]


async def forget_links(conn: Connection, root_id: int, gone: Collection[int]) -> Edges:
    """After files were deleted: the links that resolved to them are resolved again."""
    if not gone:
        return ()
    return await _resolve(conn, root_id, targets=gone)


async def rekey_links(conn: Connection, root_id: int) -> Edges:
    """After files moved into this root: every key in it made again, every link in it
    resolved again."""
    files = [(int(r[0]), str(r[1])) for r in await conn.fetch(
        "SELECT id, rel_path FROM files WHERE root_id = $1", root_id)]
    keys = [(fid, *note_keys(rel)) for fid, rel in files]
    await conn.execute(
        "INSERT INTO note_keys(file_id, path_key, name_key) "
        "SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) "
        "ON CONFLICT (file_id) DO UPDATE SET path_key = excluded.path_key, "
        "name_key = excluded.name_key", *_columns(keys, 3))
    rows = await conn.fetch(
        "SELECT l.id, f.rel_path, l.kind, l.target FROM links l JOIN files f "
        "ON f.id = l.file_id WHERE f.root_id = $1", root_id)
    rekeyed = [(int(r[0]), *relinking.stored_keys(str(r[1]), str(r[2]), str(r[3]))) for r in rows]
    if rekeyed:
        await conn.execute(
            "UPDATE links l SET rel_key = t.r, abs_key = t.a, name_key = t.n, alias_key = t.s "
            "FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) "
            "AS t(id, r, a, n, s) WHERE l.id = t.id", *_columns(rekeyed, 5))
    return await _resolve(conn, root_id, sources=[fid for fid, _ in files])


async def _resolve(conn: Connection, root_id: int, *, names: Collection[str] = (),
                   aliases: Collection[str] = (), sources: Collection[int] = (),
                   targets: Collection[int] = ()) -> Edges:
    """Resolve again the links of this root that name ``names`` or ``aliases``, that are
    in ``sources`` or that resolved to ``targets`` (``store.relinking``'s rules); answer
    the outgoing links of every file whose links changed (and of every one of
    ``sources``)."""
    rows = await conn.fetch(
        f"SELECT {relinking.CANDIDATE_COLUMNS} FROM links l JOIN files f ON f.id = l.file_id "
        "WHERE l.id IN (SELECT id FROM links WHERE name_key = ANY($1) "
        "UNION SELECT id FROM links WHERE alias_key = ANY($2) "
        "UNION SELECT id FROM links WHERE file_id = ANY($3) "
        "UNION SELECT id FROM links WHERE target_file_id = ANY($4)) AND f.root_id = $5",
        list(names), list(aliases), list(sources), list(targets), root_id)
    if not rows and not sources:
        return ()
    named = await conn.fetch(
        f"SELECT {relinking.NAMED_COLUMNS} FROM note_keys n JOIN files f ON f.id = n.file_id "
        "WHERE n.name_key = ANY($1) AND f.root_id = $2", relinking.names(rows), root_id)
    aliased = await conn.fetch(
        f"SELECT {relinking.ALIASED_COLUMNS} FROM note_aliases a JOIN files f "
        "ON f.id = a.file_id WHERE a.alias_key = ANY($1) AND f.root_id = $2",
        relinking.aliases(rows), root_id)
    changed, touched = relinking.retargeted(rows, named, aliased, sources)
    if changed:
        await conn.execute(
            "UPDATE links l SET target_file_id = t.target FROM unnest($1::bigint[], "
            "$2::bigint[]) AS t(target, id) WHERE l.id = t.id", *_columns(changed, 2))
    return await edges_of(conn, touched)


async def edges_of(conn: Connection, files: Collection[int]) -> Edges:
    """The resolved outgoing links of ``files`` (each to the other files it links to)."""
    if not files:
        return ()
    return relinking.edges(files, await conn.fetch(
        "SELECT file_id, target_file_id FROM links WHERE file_id = ANY($1) "
        "AND target_file_id IS NOT NULL AND target_file_id != file_id", list(files)))
