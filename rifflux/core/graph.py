"""The link graph: which file links to which, kept in memory by the query actor.

Edges are resolved links between two different files (``store.sqlite.link_index`` keeps
them); a file's neighbours are the files it links to and the files that link to
it, whichever way the link goes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


class LinkGraph:
    def __init__(self) -> None:
        self._out: dict[int, frozenset[int]] = {}
        self._in: defaultdict[int, set[int]] = defaultdict(set)

    def __len__(self) -> int:
        """The number of edges."""
        return sum(len(targets) for targets in self._out.values())

    def replace(self, edges: Iterable[tuple[int, int]]) -> None:
        """Every edge, (source file, target file), as loaded from the index."""
        out: defaultdict[int, set[int]] = defaultdict(set)
        for source, target in edges:
            out[source].add(target)
        self._out, self._in = {}, defaultdict(set)
        self.update((source, targets) for source, targets in out.items())

    def update(self, links: Iterable[tuple[int, Iterable[int]]]) -> None:
        """Files whose outgoing links changed, each with every file it links to now."""
        for source, targets in links:
            self._set(source, frozenset(t for t in targets if t != source))

    def remove(self, file_ids: Iterable[int]) -> None:
        """Files gone from the index, and every edge to or from them."""
        for file_id in file_ids:
            self._set(file_id, frozenset())
            for source in self._in.pop(file_id, set()):
                rest = self._out.get(source, frozenset()) - {file_id}
                if rest:
                    self._out[source] = rest
                else:
                    self._out.pop(source, None)

    def _set(self, source: int, targets: frozenset[int]) -> None:
        old = self._out.get(source, frozenset())
        for gone in old - targets:
            self._in[gone].discard(source)
        for new in targets - old:
            self._in[new].add(source)
        if targets:
            self._out[source] = targets
        else:
            self._out.pop(source, None)

    def backlinks(self, file_id: int) -> int:
        """How many other files link to this one."""
        linking = self._in.get(file_id)
        return len(linking) if linking else 0

    def within(self, file_id: int, depth: int) -> dict[int, int]:
        """The files at most ``depth`` links away, either way, with their distance (the
        file itself left out)."""
        distance = {file_id: 0}
        frontier = [file_id]
        for step in range(1, depth + 1):
            reached: list[int] = []
            for node in frontier:
                for near in (*self._out.get(node, ()), *self._in.get(node, ())):
                    if near not in distance:
                        distance[near] = step
                        reached.append(near)
            if not reached:
                break
            frontier = reached
        del distance[file_id]
        return distance
