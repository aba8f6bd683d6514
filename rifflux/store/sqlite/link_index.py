"""The links tables, kept by the writer inside its own transactions.

``links`` holds every link of every file as written, with the keys it is looked
up by (``core.links.link_keys``) and the file it resolves to (NULL: unresolved);
``note_keys`` and ``note_aliases`` hold what each file can be found by. When
files appear, disappear or change their aliases, only the links those keys
name are resolved again, from these tables: the files that contain the links
are never read again (after ``Gamma.md`` is renamed, ``[[Gamma]]`` is
unresolved; it resolves again when a ``Gamma.md`` appears).

Every change answers the outgoing links, as file ids, of each file whose links
it may have changed (``Edges``), for the query actor's link graph.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from ...core.links import fold, note_keys
from .. import relinking
from ..written import Edges, FileToWrite

if TYPE_CHECKING:
    import aiosqlite

_IN = "IN (SELECT value FROM json_each(?))"


def _json(values: Iterable[str] | Iterable[int]) -> str:
    return json.dumps(list(dict.fromkeys(values)), ensure_ascii=False)


async def write_links(conn: aiosqlite.Connection, root_id: int,
                      files: Sequence[tuple[int, FileToWrite]]) -> Edges:
    """Replace the links, keys and aliases of files just written (inside the writer's
    transaction), then resolve what they change."""
    ids = _json(fid for fid, _ in files)
    known = {int(r[0]) for r in await conn.execute_fetchall(
        f"SELECT file_id FROM note_keys WHERE file_id {_IN}", (ids,))}
    old_aliases = {str(r[0]) for r in await conn.execute_fetchall(
        f"SELECT alias_key FROM note_aliases WHERE file_id {_IN}", (ids,))}
    await conn.execute(f"DELETE FROM links WHERE file_id {_IN}", (ids,))
    await conn.execute(f"DELETE FROM note_aliases WHERE file_id {_IN}", (ids,))
    await conn.executemany(
        "INSERT OR REPLACE INTO note_keys(file_id, path_key, name_key) VALUES (?,?,?)",
        [(fid, *note_keys(f.rel_path)) for fid, f in files])
    aliases = sorted({(fid, fold(a)) for fid, f in files for a in f.metadata.aliases if fold(a)})
    await conn.executemany("INSERT INTO note_aliases(file_id, alias_key) VALUES (?,?)", aliases)
    await conn.executemany(
        "INSERT INTO links(file_id, chunk_index, line, heading, kind, embed, target, text, "
        "context, rel_key, abs_key, name_key, alias_key) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(fid, link.chunk_index, link.line, link.heading, link.kind, int(link.embed),
          link.target, link.text, link.context,
          *relinking.stored_keys(f.rel_path, link.kind, link.target))
         for fid, f in files for link in f.links])
    # a file that is new here may be what other links name; an edited one only by aliases
    new_names = {note_keys(f.rel_path)[1] for fid, f in files if fid not in known}
    return await _resolve(conn, root_id, names=new_names,
                          aliases=old_aliases | {a for _, a in aliases},
                          sources=[fid for fid, _ in files])


async def forget_links(conn: aiosqlite.Connection, root_id: int, gone: Collection[int]) -> Edges:
    """After files were deleted: the links that resolved to them are resolved again (to
    another file of that name, or to none)."""
    if not gone:
        return ()
    return await _resolve(conn, root_id, targets=gone)


async def rekey_links(conn: aiosqlite.Connection, root_id: int) -> Edges:
    """After files moved into this root (their paths changed): every key in the root is
    made again and every link in it resolved again."""
    files = [(int(r[0]), str(r[1])) for r in await conn.execute_fetchall(
        "SELECT id, rel_path FROM files WHERE root_id = ?", (root_id,))]
    await conn.executemany(
        "INSERT OR REPLACE INTO note_keys(file_id, path_key, name_key) VALUES (?,?,?)",
        [(fid, *note_keys(rel)) for fid, rel in files])
    rows = await conn.execute_fetchall(
        "SELECT l.id, f.rel_path, l.kind, l.target FROM links l JOIN files f "
        "ON f.id = l.file_id WHERE f.root_id = ?", (root_id,))
    await conn.executemany(
        "UPDATE links SET rel_key = ?, abs_key = ?, name_key = ?, alias_key = ? WHERE id = ?",
        [(*relinking.stored_keys(str(r[1]), str(r[2]), str(r[3])), int(r[0])) for r in rows])
    return await _resolve(conn, root_id, sources=[fid for fid, _ in files])


async def _resolve(conn: aiosqlite.Connection, root_id: int, *, names: Collection[str] = (),
                   aliases: Collection[str] = (), sources: Collection[int] = (),
                   targets: Collection[int] = ()) -> Edges:
    """Resolve again the links of this root that name ``names`` or ``aliases``, that are
    in ``sources`` or that resolved to ``targets`` (``store.relinking``'s rules); answer
    the outgoing links of every file whose links changed (and of every one of
    ``sources``)."""
    # each key by its own index, then the root: never a walk over all the root's links
    rows = await conn.execute_fetchall(
        f"SELECT {relinking.CANDIDATE_COLUMNS} FROM links l CROSS JOIN files f "
        f"ON f.id = l.file_id WHERE l.id IN (SELECT id FROM links WHERE name_key {_IN} "
        f"UNION SELECT id FROM links WHERE alias_key {_IN} "
        f"UNION SELECT id FROM links WHERE file_id {_IN} "
        f"UNION SELECT id FROM links WHERE target_file_id {_IN}) AND f.root_id = ?",
        (_json(names), _json(aliases), _json(sources), _json(targets), root_id))
    if not rows and not sources:
        return ()
    candidates = list(rows)
    named = await conn.execute_fetchall(
        f"SELECT {relinking.NAMED_COLUMNS} FROM note_keys n CROSS JOIN files f "
        f"ON f.id = n.file_id WHERE n.name_key {_IN} AND f.root_id = ?",
        (_json(relinking.names(candidates)), root_id))
    aliased = await conn.execute_fetchall(
        f"SELECT {relinking.ALIASED_COLUMNS} FROM note_aliases a CROSS JOIN files f "
        f"ON f.id = a.file_id WHERE a.alias_key {_IN} AND f.root_id = ?",
        (_json(relinking.aliases(candidates)), root_id))
    changed, touched = relinking.retargeted(candidates, named, aliased, sources)
    await conn.executemany("UPDATE links SET target_file_id = ? WHERE id = ?", changed)
    return await edges_of(conn, touched)


async def edges_of(conn: aiosqlite.Connection, files: Collection[int]) -> Edges:
    """The resolved outgoing links of ``files`` (each to the other files it links to)."""
    if not files:
        return ()
    return relinking.edges(files, await conn.execute_fetchall(
        f"SELECT file_id, target_file_id FROM links WHERE file_id {_IN} "
        "AND target_file_id IS NOT NULL AND target_file_id != file_id", (_json(files),)))
