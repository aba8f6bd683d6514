"""What a search reads in memory and is handed (``Loaded``: the catalog, the model's
embedder, the vector matrix), and what it needs of the parts it is handed: an embedder
whose query vectors are awaited (an embedding server's), a reranker, a flag.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..core.catalog import Catalog

if TYPE_CHECKING:
    from ..core.embedders import Embedder
    from ..core.vectors import F32, I64, GroupRanks, VectorIndex


@runtime_checkable
class AwaitsQueries(Protocol):
    """An embedder whose query vectors are awaited rather than made in a worker thread:
    an embedding server's client (``actors.server_embedder``), which raises
    ``EmbeddingUnavailableError`` when the server does not answer."""

    async def aembed_query(self, text: str) -> F32: ...


class Rescorer(Protocol):
    """What reranks a search's first ``depth`` hits (``actors.rerank.Reranker``): one
    score per text, higher more relevant to the query; a ``RerankError`` when it cannot
    (the hits keep their fused order)."""

    @property
    def depth(self) -> int: ...

    async def scores(self, query: str, texts: list[str]) -> list[float]: ...


class Flag(Protocol):
    """Whether something has happened yet (an ``anyio.Event``, a ``threading.Event``)."""

    def is_set(self) -> bool: ...


@dataclass(slots=True, kw_only=True)
class Loaded:
    """What a search reads in memory: the catalog of files (``catalog_ready`` is set once
    it is loaded: until then, hits have no ``backlink_count``), the model's embedder and
    the vector matrix (None: none yet)."""

    catalog_ready: Flag
    catalog: Catalog = field(default_factory=Catalog)
    embedder: Embedder | None = None
    matrix: VectorIndex | None = None


class Unranked(Exception):
    """The files' places by path are needed and not made (``TieRanks.made``)."""


class TieRanks:
    """Each file's place by path (``Catalog.places``), for the matrix's rows tied at its
    cut (``core.selection.group_ranks``); made again only when the catalog has changed."""

    def __init__(self, loaded: Loaded) -> None:
        self._loaded = loaded
        #: ``Catalog.places`` and its ``GroupRanks``, made again when the catalog changes.
        self._made: tuple[dict[int, int], GroupRanks] | None = None

    def on_loop(self, groups: I64) -> I64:
        """The places of ``groups``, on the event loop (which owns the catalog)."""
        return self._of(self._loaded.catalog.places(), groups)

    def made(self, groups: I64) -> I64:
        """``on_loop`` from a worker thread: raises ``Unranked`` when the places are not
        made (the catalog is the event loop's: making them is ``on_loop``'s)."""
        places = self._loaded.catalog.places_made()
        if places is None:
            raise Unranked
        return self._of(places, groups)

    def _of(self, places: dict[int, int], groups: I64) -> I64:
        from ..core.selection import group_ranks

        made = self._made
        if made is None or made[0] is not places:
            made = self._made = (places, group_ranks(places))
        return made[1](groups)
