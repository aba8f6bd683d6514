"""The texts still lacking vectors, on the writer's connection.

``Missing`` keeps, in memory, the exact set of texts (content hashes) that some
chunk has and that lack a vector of the active model: it is read from the
database once when the model is adopted, then kept exact by every write, this
process's (``inspect`` inside the write's transaction, ``committed`` after it)
and other processes' (``changed_elsewhere``, from what the change log says their
commits wrote; ``refresh`` reads them all again, only when the log no longer
tells). Job completion (``JobQueue.settle``) is decided against it, so it never
needs a query per job, and a text replaced before it was embedded simply stops
being missing.

The set keeps the order in which texts came to lack a vector, so the embedder takes
the newest first (``newest``: the file just saved before a backlog of a million)
at the cost of the window it takes, never of the index's size.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence, Set
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import aiosqlite

from ...core.plan import Scope
from ..common import HELD_MODEL, other_model
from ..statements import like_prefix
from ..written import Written, batches, marks
from .sql import mapped_errors, transaction


@dataclass(frozen=True, slots=True)
class Change:
    """What a write changed among the texts, found inside its transaction."""

    removed: list[tuple[int, str]]  # (chunk rowid, content hash)
    added: list[tuple[int, str, int]]  # (chunk rowid, content hash, file id)
    have: dict[str, bytes]  # stored vectors of added texts
    gone: set[str]  # missing texts no chunk has any more


class Missing:
    def __init__(self, conn: aiosqlite.Connection, db_path: Path, *,
                 read_only: bool = False) -> None:
        self.conn = conn
        self.db_path = db_path
        self.read_only = read_only
        self._model: str | None = None
        #: None until a model is adopted; oldest first (a dict: its keys keep the order).
        #: Each text maps to itself: what ``in_scopes`` reads is answered with these
        #: strings, not a second copy of each (a million texts are 110 MB of strings).
        self._texts: dict[str, str] | None = None
        self._left: set[str] = set()  # texts that left it since ``take_left``

    @property
    def texts(self) -> Set[str] | None:
        """Texts some chunk has without a vector of the active model; None until a
        model is adopted, empty when there is none (nothing can be embedded)."""
        return None if self._texts is None else self._texts.keys()

    def newest(self, n: int) -> list[str]:
        """The ``n`` texts that came to lack a vector last (the embedder's next window)."""
        return [] if self._texts is None else list(islice(reversed(self._texts), n))

    def _add(self, texts: Iterable[str]) -> None:
        assert self._texts is not None
        self._texts.update((text, text) for text in texts)

    def take_left(self) -> set[str]:
        """The texts that stopped lacking a vector since the last call (a vector was
        stored, or no chunk has them any more), for ``JobQueue.settle``."""
        left, self._left = self._left, set()
        return left

    def _drop(self, texts: Iterable[str]) -> None:
        assert self._texts is not None
        gone = self._texts.keys() & texts
        for text in gone:
            del self._texts[text]
        self._left |= gone

    def _replace(self, texts: dict[str, str]) -> None:
        if self._texts is not None:
            self._left |= self._texts.keys() - texts.keys()
        self._texts = texts

    @property
    def model(self) -> str | None:
        """The active model (None: none adopted, or none to adopt)."""
        return self._model

    async def adopt(self, model: str | None,
                    adopted: Callable[[], Awaitable[None]] | None = None, *,
                    switch: bool = True) -> int:
        """Make ``model`` the active one: vectors of other models are deleted (they are
        never mixed with its own), then ``adopted`` is awaited, then the texts lacking a
        vector are read (0.5 s at a million chunks: a matrix's load need not wait for
        it). Returns the number of vectors dropped. A read-only process, or one that may
        not ``switch`` the index's model, refuses another model's vectors
        (``OtherModelError``: nothing changed)."""
        if model is not None and (self.read_only or not switch):
            with mapped_errors(self.db_path):
                held = await self.conn.execute_fetchall(HELD_MODEL)
            refusal = other_model(next(iter(held), None), model, read_only=self.read_only)
            if refusal is not None:
                raise refusal
        self._model = model
        if model is None or self.read_only:
            self._replace({})  # (nothing can be embedded)
            if adopted is not None:
                await adopted()
            return 0
        with mapped_errors(self.db_path):
            # Whether another model's vector is there at all reads the (content_hash, model)
            # index, 0.1 s at a million vectors; the DELETE alone reads every vector (1.4 s).
            # The table itself is still opened (a damaged one says so here, at adoption).
            await self.conn.execute_fetchall("SELECT 1 FROM embeddings NOT INDEXED LIMIT 1")
            other = await self.conn.execute_fetchall(
                "SELECT 1 FROM embeddings WHERE model != ? LIMIT 1", (model,))
            named = await self.conn.execute_fetchall(
                "SELECT 1 FROM meta WHERE key = 'embedding_model' AND value = ?", (model,))
            dropped = 0
            if other or not named:  # (else nothing to write: another's lock holds up nothing)
                async with transaction(self.conn):
                    if other:
                        cur = await self.conn.execute(
                            "DELETE FROM embeddings WHERE model != ?", (model,))
                        dropped = cur.rowcount
                    await self.conn.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES ('embedding_model', ?)",
                        (model,),
                    )
        if adopted is not None:
            await adopted()
        self._replace(await self._lacking(model))
        return dropped

    async def refresh(self) -> None:
        """Read the missing texts again, all of them (another process changed more than
        the change log still tells)."""
        if self._model is None or self._texts is None or self.read_only:
            return
        self._replace(await self._lacking(self._model))

    async def changed_elsewhere(self, *, files: Sequence[int], texts_gone: Sequence[str],
                                embedded: Sequence[str]) -> None:
        """Other processes' commits, as the change log tells them: they wrote or deleted
        ``files``, deleted chunks of the texts ``texts_gone`` (which had no vector), and
        stored vectors of the texts ``embedded``. Only those are read: the texts of those
        files that now lack a vector are added; the texts gone leave unless some chunk
        still has them; the texts embedded leave."""
        if self._model is None or self._texts is None or self.read_only:
            return
        self._drop(embedded)
        added: set[str] = set()
        with mapped_errors(self.db_path):
            for part in batches(files):
                rows = await self.conn.execute_fetchall(
                    "SELECT DISTINCT c.content_hash FROM chunks c WHERE c.file_id IN "
                    f"({marks(len(part))}) AND NOT EXISTS (SELECT 1 FROM embeddings e "
                    "WHERE e.content_hash = c.content_hash AND e.model = ?)",
                    (*part, self._model))
                added.update(str(r[0]) for r in rows)
        candidates = sorted(self._texts.keys() & set(texts_gone) - added)
        if candidates:
            self._drop(set(candidates) - await self._present(candidates))
        self._add(added)

    async def in_scopes(self, scopes: Sequence[Scope]) -> set[str]:
        """The missing texts of the chunks in ``scopes`` (no query when none is missing)."""
        if not self._texts or self._model is None:
            return set()
        base = (
            "SELECT DISTINCT c.content_hash FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.root_id = ? AND NOT EXISTS (SELECT 1 FROM embeddings e "
            "WHERE e.content_hash = c.content_hash AND e.model = ?)"
        )
        out: set[str] = set()
        same = self._texts.get  # (the strings kept already)
        with mapped_errors(self.db_path):
            for scope in scopes:
                if scope.paths is None:
                    rows = await self.conn.execute_fetchall(
                        base + " AND f.rel_path LIKE ? ESCAPE '\\'",
                        (scope.root_id, self._model, like_prefix(scope.prefix)),
                    )
                    out.update(same(r[0], r[0]) for r in rows)
                    continue
                for part in batches(scope.paths):
                    rows = await self.conn.execute_fetchall(
                        base + f" AND f.rel_path IN ({marks(len(part))})",
                        (scope.root_id, self._model, *part),
                    )
                    out.update(same(r[0], r[0]) for r in rows)
        return out

    # ------------------------------------------------------------ this process's writes

    async def inspect(
        self, removed: list[tuple[int, str]], added: list[tuple[int, str, int]]
    ) -> Change:
        """Inside a write's transaction: the stored vectors of the new chunks, and which
        missing texts no chunk has any more (so that the set stays exact)."""
        have: dict[str, bytes] = {}
        gone: set[str] = set()
        if self._model is not None and added:
            have = await self._vectors_for(self._model, [h for _, h, _ in added])
        if self._texts:
            candidates = sorted(({h for _, h in removed} - {h for _, h, _ in added})
                                & self._texts.keys())
            if candidates:
                gone = set(candidates) - await self._present(candidates)
        return Change(removed, added, have, gone)

    def committed(self, change: Change) -> Written:
        """After the write's commit: the set follows it, and the answer for the query
        actor lists the chunks that have a vector already."""
        have = change.have
        kept = [(rowid, h, fid) for rowid, h, fid in change.added if h in have] if have else []
        lacking = dict.fromkeys(h for _, h, _ in change.added if h not in have)
        if self._texts is not None and self._model is not None:
            self._drop(change.gone)
            self._add(lacking)
        vectors = None
        if kept:
            import numpy as np  # (vectors that are there already: none in a lexical run)

            blob = b"".join(have[h] for _, h, _ in kept)
            vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(kept), -1)
        return Written(removed=tuple(r for r, _ in change.removed),
                       added_ids=tuple(r for r, _, _ in kept),
                       added_files=tuple(f for _, _, f in kept),
                       added_vectors=vectors, lacking=len(lacking))

    def stored(self, model: str, hashes: Sequence[str]) -> None:
        """Vectors of these texts were written (by this process)."""
        if self._texts is not None and model == self._model:
            self._drop(hashes)

    # ------------------------------------------------------------ reads

    async def _lacking(self, model: str) -> dict[str, str]:
        """Every text lacking a vector of ``model``, oldest first (by its newest chunk)."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT content_hash FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM "
                "embeddings e WHERE e.content_hash = c.content_hash AND e.model = ?) "
                "GROUP BY content_hash ORDER BY MAX(c.id)",
                (model,),
            )
        return {str(r[0]): str(r[0]) for r in rows}

    async def _present(self, hashes: Sequence[str]) -> set[str]:
        found: set[str] = set()
        with mapped_errors(self.db_path):
            for part in batches(hashes):
                rows = await self.conn.execute_fetchall(
                    "SELECT DISTINCT content_hash FROM chunks WHERE content_hash IN "
                    f"({marks(len(part))})",
                    part,
                )
                found.update(str(r[0]) for r in rows)
        return found

    async def _vectors_for(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        with mapped_errors(self.db_path):
            for part in batches(unique):
                rows = await self.conn.execute_fetchall(
                    "SELECT content_hash, vector FROM embeddings WHERE model = ? AND "
                    f"content_hash IN ({marks(len(part))})",
                    (model, *part),
                )
                out.update((str(r[0]), bytes(r[1])) for r in rows)
        return out
