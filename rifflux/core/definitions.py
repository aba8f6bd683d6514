"""A name's definition first: a query that is one name (``iter_all_python_module_files``,
``Rifflux.search``, ``Parser::parse``) puts the code that defines it above the code that
merely uses it.

BM25 alone ranks a name's callers above its definition as often as not: a test that
calls ``get_valid_filename`` ten times holds the name's words more often than the
function's own few lines do. A source file's chunks carry the names that enclose them
as their breadcrumb (``core.extract.code``: ``Rifflux > search``), so a definition is
known exactly: a chunk of a code file whose breadcrumb ends with the query's names,
case and all. Those chunks go first, in the order the branch ranked them, the parts of
one long definition together and in the file's order (its first part holds its
signature); everything else keeps its order below them.

Only the chunks the lexical branch found can move (a definition holds its own name, so
it is found whenever its name is searched); ``query.ranking`` reads that branch a pool
deep for such a query so that a definition ranked below the first ``top_k`` still comes
up. A question of several words, a markdown heading that happens to equal the name and
a name nothing defines change nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # (the contract's shapes: a one-shot search imports none of them)
    from ..types import ChunkRecord

T = TypeVar("T")

#: One name, or names joined as languages join them (``a.b``, ``a::b``, ``a#b``,
#: ``a->b``), with an optional ``()``.
_QUERY = re.compile(r"\s*((?:[A-Za-z_$][\w$]*)(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*)"
                    r"\s*(?:\(\s*\))?\s*", re.ASCII)
_JOINS = re.compile(r"\.|::|#|->")
#: The separator of a breadcrumb's names (``core.extract.sections``).
_CRUMB = " > "


def named(query: str) -> tuple[str, ...] | None:
    """The names a query is made of when it is one (possibly qualified) name, else None."""
    found = _QUERY.fullmatch(query)
    return tuple(_JOINS.split(found.group(1))) if found else None


def defines(row: ChunkRecord, names: Sequence[str]) -> bool:
    """Whether ``row`` is (a part of) the definition of ``names``: a code chunk whose
    breadcrumb ends with them."""
    if row["kind"] != "code" or not row["heading_path"]:
        return False
    crumbs = [part.strip() for part in row["heading_path"].split(_CRUMB)]
    return len(crumbs) >= len(names) and tuple(crumbs[-len(names):]) == tuple(names)


def definitions_first(ranked: Sequence[tuple[int, T]], rows: Mapping[int, ChunkRecord],
                      names: Sequence[str]) -> tuple[list[tuple[int, T]], set[int]]:
    """``ranked`` (chunk row ids, best first) with the chunks of ``rows`` that define
    ``names`` first, and those ids. The definitions keep the order of their best-ranked
    part; the parts of one (chunks of one file under one breadcrumb) come together, in
    the file's order."""
    groups: dict[tuple[str, str, str], list[tuple[int, tuple[int, T]]]] = {}
    for entry in ranked:
        row = rows.get(entry[0])
        if row is not None and defines(row, names):
            key = (row["root"], row["path"], row["heading_path"])
            groups.setdefault(key, []).append((row["chunk_index"], entry))
    if not groups:
        return list(ranked), set()
    first = [entry for parts in groups.values() for _, entry in sorted(parts, key=_index)]
    moved = {cid for cid, _ in first}
    return first + [entry for entry in ranked if entry[0] not in moved], moved


def _index(part: tuple[int, object]) -> int:
    return part[0]
