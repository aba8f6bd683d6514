"""The texts still lacking vectors, on the PostgreSQL writer's connection: the same rule
as ``store.sqlite.missing`` (one exact set in memory, read once when a model is
adopted, then kept by every write, this process's and, through the change log,
the others'), over PostgreSQL.

Adopting a model drops the vectors of any other (they are never mixed with its own)
and every chunk's vector with them when the model changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence, Set
from dataclasses import dataclass

from ...core.plan import Scope
from ..common import HELD_MODEL, other_model
from ..statements import like_prefix
from ..written import Written
from .connection import Connection, mapped_errors, transaction
from .session import Session, retried


@dataclass(frozen=True, slots=True)
class Change:
    """What a write changed among the texts, found inside its transaction."""

    removed: list[int]  # chunk row ids deleted
    added: list[tuple[int, str, int]]  # (chunk row id, content hash, file id)
    have: set[str]  # added texts that have a vector of the model
    gone: set[str]  # missing texts no chunk has any more


class Missing:
    def __init__(self, session: Session, *, read_only: bool = False) -> None:
        self.session = session
        self.where = session.where
        self.read_only = read_only
        self._model: str | None = None
        self._texts: set[str] | None = None
        self._left: set[str] = set()

    @property
    def conn(self) -> Connection:
        return self.session.conn

    @property
    def texts(self) -> Set[str] | None:
        return self._texts

    @property
    def model(self) -> str | None:
        return self._model

    def take_left(self) -> set[str]:
        left, self._left = self._left, set()
        return left

    def _drop(self, texts: Iterable[str]) -> None:
        assert self._texts is not None
        gone = self._texts.intersection(texts)
        self._texts -= gone
        self._left |= gone

    def _replace(self, texts: set[str]) -> None:
        if self._texts is not None:
            self._left |= self._texts - texts
        self._texts = texts

    @retried()
    async def adopt(self, model: str | None,
                    adopted: Callable[[], Awaitable[None]] | None = None, *,
                    switch: bool = True) -> int:
        if model is not None and (self.read_only or not switch):
            with mapped_errors(self.where):
                held = await self.conn.fetchrow(HELD_MODEL)
            refusal = other_model(None if held is None else tuple(held), model,
                                  read_only=self.read_only)
            if refusal is not None:
                raise refusal
        self._model = model
        if model is None or self.read_only:
            self._replace(set())
            if adopted is not None:
                await adopted()
            return 0
        with mapped_errors(self.where):
            async with transaction(self.conn):
                before = await self.conn.fetchval(
                    "SELECT value FROM meta WHERE key = 'embedding_model'")
                status = await self.conn.execute(
                    "DELETE FROM embeddings WHERE model != $1", model)
                if before != model:  # the chunks' vectors are another model's (or none)
                    await self.conn.execute("DELETE FROM chunk_vectors")
                    await self.conn.execute(
                        "INSERT INTO chunk_vectors(chunk_id, file_id, embedding) "
                        "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e "
                        "ON e.content_hash = c.content_hash AND e.model = $1", model)
                await self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('embedding_model', $1) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value", model)
        if adopted is not None:
            await adopted()
        self._replace(await self._lacking(model))
        return int(status.split()[-1])

    @retried()
    async def refresh(self) -> None:
        if self._model is None or self._texts is None or self.read_only:
            return
        self._replace(await self._lacking(self._model))

    @retried()
    async def changed_elsewhere(self, *, files: Sequence[int], texts_gone: Sequence[str],
                                embedded: Sequence[str]) -> None:
        if self._model is None or self._texts is None or self.read_only:
            return
        self._drop(embedded)
        with mapped_errors(self.where):
            rows = await self.conn.fetch(
                "SELECT DISTINCT c.content_hash FROM chunks c WHERE c.file_id = ANY($1) "
                "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = "
                "c.content_hash AND e.model = $2)", list(files), self._model)
        added = {str(r[0]) for r in rows}
        candidates = sorted(self._texts.intersection(texts_gone) - added)
        if candidates:
            self._drop(set(candidates) - await self._present(candidates))
        self._texts |= added

    @retried()
    async def in_scopes(self, scopes: Sequence[Scope]) -> set[str]:
        if not self._texts or self._model is None:
            return set()
        base = ("SELECT DISTINCT c.content_hash FROM chunks c JOIN files f ON f.id = c.file_id "
                "WHERE f.root_id = $1 AND NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.content_hash = c.content_hash AND e.model = $2) ")
        out: set[str] = set()
        with mapped_errors(self.where):
            for scope in scopes:
                if scope.paths is None:
                    rows = await self.conn.fetch(base + "AND f.rel_path LIKE $3",
                                                 scope.root_id, self._model,
                                                 like_prefix(scope.prefix))
                else:
                    rows = await self.conn.fetch(base + "AND f.rel_path = ANY($3)",
                                                 scope.root_id, self._model, list(scope.paths))
                out.update(str(r[0]) for r in rows)
        return out

    # ------------------------------------------------------------ this process's writes

    async def inspect(self, removed: list[tuple[int, str]],
                      added: list[tuple[int, str, int]]) -> Change:
        """Inside a write's transaction: which new chunks' texts have a vector, and which
        missing texts no chunk has any more."""
        have: set[str] = set()
        gone: set[str] = set()
        if self._model is not None and added:
            rows = await self.conn.fetch(
                "SELECT content_hash FROM embeddings WHERE model = $1 AND "
                "content_hash = ANY($2)", self._model, list({h for _, h, _ in added}))
            have = {str(r[0]) for r in rows}
        if self._texts:
            candidates = sorted(({h for _, h in removed} - {h for _, h, _ in added})
                                & self._texts)
            if candidates:
                gone = set(candidates) - await self._present(candidates)
        return Change([r for r, _ in removed], added, have, gone)

    def committed(self, change: Change) -> Written:
        """After the write's commit: the set follows it. (The query actor keeps no
        matrix for this store: the answer names no vectors.)"""
        lacking = {h for _, h, _ in change.added if h not in change.have}
        if self._texts is not None and self._model is not None:
            self._drop(change.gone)
            self._texts |= lacking
        return Written(removed=tuple(change.removed), lacking=len(lacking))

    def stored(self, model: str, hashes: Sequence[str]) -> None:
        if self._texts is not None and model == self._model:
            self._drop(hashes)

    # ------------------------------------------------------------ reads

    async def _lacking(self, model: str) -> set[str]:
        with mapped_errors(self.where):
            rows = await self.conn.fetch(
                "SELECT DISTINCT content_hash FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM "
                "embeddings e WHERE e.content_hash = c.content_hash AND e.model = $1)", model)
        return {str(r[0]) for r in rows}

    async def _present(self, hashes: Sequence[str]) -> set[str]:
        with mapped_errors(self.where):
            rows = await self.conn.fetch(
                "SELECT DISTINCT content_hash FROM chunks WHERE content_hash = ANY($1)",
                list(hashes))
        return {str(r[0]) for r in rows}
