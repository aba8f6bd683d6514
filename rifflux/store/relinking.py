"""Links resolved again after a change: the rules both stores' links tables follow
(``sqlite.link_index``, ``postgres.links``), written once. A link is stored with
the keys it is looked up by (``stored_keys``); after a change, the links its keys
name are the candidates, and ``retargeted`` says which of them now go elsewhere
(``core.links.resolve`` among the root's notes of their names and aliases) and
whose outgoing links that changes; ``edges`` gives those, as the query actor's link
graph takes them.

Each store reads the rows (its own statements: SQLite's fix the join order, so that
each key is looked up by its own index) and writes the new targets (SQLite's one by
one, PostgreSQL's in one ``unnest``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence

from ..core.links import LinkKeys, NoteKey, link_keys, resolve
from .written import Edges, Row

#: The columns of a candidate link, in the order ``retargeted`` reads them (``l``: the
#: link, ``f``: the file it is in).
CANDIDATE_COLUMNS = ("l.id, l.file_id, l.rel_key, l.abs_key, l.name_key, l.alias_key, "
                     "l.target_file_id, f.rel_path")
#: The columns of a note named by a candidate (``n``: ``note_keys``, ``f``: the file).
NAMED_COLUMNS = "n.name_key, n.file_id, f.rel_path, n.path_key"
#: The columns of a note aliased by a candidate (``a``: ``note_aliases``, ``f``: the file).
ALIASED_COLUMNS = "a.alias_key, a.file_id, f.rel_path"


def stored_keys(source_rel: str, kind: str, target: str) -> tuple[str | None, str, str, str]:
    """The keys a link of ``kind`` to ``target`` written in ``source_rel`` is stored
    with: ``rel_key``, ``abs_key``, ``name_key``, ``alias_key``."""
    keys = link_keys(source_rel, "markdown" if kind == "markdown" else "wikilink", target)
    return keys.rel, keys.abs, keys.name, keys.alias


def names(candidates: Iterable[Row]) -> list[str]:
    """The name keys of these candidates (``CANDIDATE_COLUMNS``), each once."""
    return list(dict.fromkeys(str(r[4]) for r in candidates))


def aliases(candidates: Iterable[Row]) -> list[str]:
    """The alias keys of these candidates (``CANDIDATE_COLUMNS``), each once."""
    return list(dict.fromkeys(str(r[5]) for r in candidates))


def retargeted(candidates: Sequence[Row], named: Iterable[Row], aliased: Iterable[Row],
               sources: Collection[int]) -> tuple[list[tuple[int | None, int]], set[int]]:
    """Of the candidates (``CANDIDATE_COLUMNS``), those that now resolve elsewhere, as
    (their new target or None, link id), and the files whose outgoing links may have
    changed: those that hold them, and ``sources``. ``named`` and ``aliased`` are the
    root's notes with the candidates' names (``NAMED_COLUMNS``) and aliases
    (``ALIASED_COLUMNS``)."""
    by_name: dict[str, list[NoteKey]] = defaultdict(list)
    for r in named:
        by_name[str(r[0])].append(NoteKey(int(r[1]), str(r[2]), str(r[3])))
    by_alias: dict[str, list[NoteKey]] = defaultdict(list)
    for r in aliased:
        by_alias[str(r[0])].append(NoteKey(int(r[1]), str(r[2]), ""))
    changed: list[tuple[int | None, int]] = []
    touched = set(sources)
    for r in candidates:
        keys = LinkKeys(None if r[2] is None else str(r[2]), str(r[3]), str(r[4]), str(r[5]))
        target = resolve(keys, by_name.get(keys.name, ()), by_alias.get(keys.alias, ()),
                         str(r[7]))
        if target != (None if r[6] is None else int(r[6])):
            changed.append((target, int(r[0])))
            touched.add(int(r[1]))
    return changed, touched


def edges(files: Collection[int], links: Iterable[Row]) -> Edges:
    """The resolved outgoing links of ``files``, each to the other files it links to,
    from their links' rows of (file id, target file id)."""
    out: dict[int, set[int]] = {fid: set() for fid in files}
    for r in links:
        out[int(r[0])].add(int(r[1]))
    return tuple((fid, tuple(sorted(targets))) for fid, targets in sorted(out.items()))
