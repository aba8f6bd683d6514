"""The history's rows on PostgreSQL (``history.rows.HistoryRows``; SQLite's are
``store.sqlite.history``): repositories and what was read of them, commits written
and dropped, the vectors commits lack and have (in ``embeddings``, by their texts'
hashes, as chunks' are: a text is embedded once), the rows hits show, a file's
commits; the lexical leg is ``history_lexical``'s.

Each statement runs on a connection the pool lends; a write is one transaction under
the writers' lock (``connection.transaction``), short, beside the indexer's, and one
that changes commits or their vectors logs it for the other processes
(``history_changes``).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from ...history.document import document, embed_text
from ...history.git import RawCommit
from ...history.rows import ROW_SELECT, HistoryFilters, Prepared, RepoState, follow_renames
from ...location import DatabaseUrl
from .connection import (
    Connection,
    Pool,
    given_back,
    mapped_errors,
    numbered,
    tls,
    transaction,
    writers_lock,
)
from .history_changes import HistoryFollow, note
from .history_lexical import HistoryLexical, commit_lexemes
from .schema import lexical_ranking

#: The history's own connections: its reads, two writes, the embedding task's.
POOL_SIZE = 4
#: A read that wrote at least this many commits has their tables vacuumed at its end.
SWEEP = 1_000

_COMMIT_COLUMNS = ("repo_id, hash, parents, author_name, author_email, author_time, "
                   "committer_name, committer_email, commit_time, title, body, paths, "
                   "summary, cut, content_hash, lexemes, length")
_COMMIT_TYPES = ("bigint", "text", "text", "text", "text", "bigint", "text", "text", "bigint",
                 "text", "text", "text", "text", "boolean", "text", "text", "integer")
_PATH_TYPES = ("bigint", "text", "text", "text", "integer", "integer", "boolean")


def _unnest(types: Sequence[str]) -> str:
    return "SELECT * FROM unnest(" + ", ".join(
        f"${i}::{t}[]" for i, t in enumerate(types, start=1)) + ")"


def _clean(text: str) -> str:
    """Text PostgreSQL takes: no NUL, no lone surrogate (a path git gave as bytes)."""
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


@asynccontextmanager
async def open_history(where: DatabaseUrl, *, seconds: float, origin: str
                       ) -> AsyncIterator[tuple[HistoryRows, HistoryFollow]]:
    """The history's rows on a pool of its own (the store's schema made already), its
    writes logged under ``origin``; and how other processes' writes are followed."""

    async def init(conn: asyncpg.Connection[asyncpg.Record]) -> None:
        await register_vector(conn)
        await conn.execute("SELECT set_config('rifflux.origin', $1, false)", origin)

    with mapped_errors(where):
        pool = await asyncpg.create_pool(
            where.url, min_size=1, max_size=POOL_SIZE, timeout=seconds, init=init,
            reset=given_back, ssl=tls(where),
            server_settings={"application_name": "rifflux history"})
    follow = HistoryFollow(where, origin, seconds=seconds)
    try:
        async with pool.acquire() as conn:
            ranking = await lexical_ranking(conn, where)
        await follow.open()
        yield HistoryRows(pool, where, bm25=ranking == "bm25"), follow
    finally:
        await follow.close()
        with anyio.move_on_after(2, shield=True), contextlib.suppress(Exception):
            await pool.close()
        pool.terminate()


async def logged(conn: Connection) -> None:
    """A transaction that changed commits (and so their word counts: their triggers update
    ``commit_totals`` first) told to the others, under the writers' lock taken last:
    its heavy part (the tokens, the indexes) ran beside another batch's and the other
    writers', and every such transaction locks the totals' row before the writers' lock
    (the same order: no deadlock); the change log's row is in commit order."""
    await writers_lock(conn)
    await note(conn)


class HistoryRows:
    """The history's statements on a pool of connections to one database; a read writes
    ``WRITES`` batches of commits side by side."""

    #: Batches written side by side (each on a connection of the pool, its server
    #: process on a core of its own while the other's triggers wait for its totals).
    WRITES = 2

    def __init__(self, pool: Pool, where: DatabaseUrl, *, bm25: bool) -> None:
        self.pool = pool
        self.where = where
        #: Commits written since the tables were last vacuumed here (``SWEEP``).
        self._unswept = 0
        self._lexical = HistoryLexical(pool, where, bm25=bm25)

    def condition(self) -> str | None:
        """How the lexical leg ranks now, when an answer should say so."""
        return self._lexical.condition()

    async def _fetch(self, sql: str, *args: object) -> list[Any]:
        with mapped_errors(self.where):
            return list(await self.pool.fetch(numbered(sql), *args))

    # ------------------------------------------------------------ repositories

    async def roots(self) -> list[Path]:
        rows = await self._fetch("SELECT path FROM roots ORDER BY path")
        return [Path(str(r[0])) for r in rows]

    async def repo(self, git_dir: Path, worktree: Path, shallow: bool) -> RepoState:
        select = "SELECT id, tips, shallow, problem FROM history_repos WHERE git_dir = ?"
        rows = await self._fetch(select, str(git_dir))
        row = next(iter(rows), None)
        if row is None or bool(row[2]) != shallow:
            with mapped_errors(self.where):
                async with self.pool.acquire() as conn, transaction(conn):
                    await conn.execute(
                        "INSERT INTO history_repos(git_dir, worktree, shallow) VALUES "
                        "($1, $2, $3) ON CONFLICT(git_dir) DO UPDATE SET shallow = "
                        "excluded.shallow", str(git_dir), str(worktree), shallow)
            row = (await self._fetch(select, str(git_dir)))[0]
        return RepoState(id=int(row[0]), tips=list(json.loads(str(row[1]))),
                         problem=None if row[3] is None else str(row[3]))

    async def read(self, repo_id: int, *, tips: Sequence[str] | None,
                   problem: str | None) -> None:
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, transaction(conn):
                if tips is not None:
                    await conn.execute(
                        "UPDATE history_repos SET tips = $1, problem = $2, read_at = $3, "
                        "commits = (SELECT count(*) FROM commits WHERE repo_id = $4) "
                        "WHERE id = $4", json.dumps(list(tips)), problem, time.time(), repo_id)
                else:
                    await conn.execute("UPDATE history_repos SET problem = $1 WHERE id = $2",
                                       problem, repo_id)
        if tips is not None and self._unswept >= SWEEP:
            await self._sweep()

    async def _sweep(self) -> None:
        """After a read that wrote many commits: their tables vacuumed and analysed now,
        not at autovacuum's next round (a minute or more away). Until then a search's
        plan knows nothing of the rows, each row read first is checked against the commit
        log, and the GIN indexes' pending lists are scanned whole (pdf.js, just read: 14
        ms in the counts a search reads, 0.1 ms after; 2 s for 23,500 commits)."""
        self._unswept = 0
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn:
                await conn.execute("VACUUM (ANALYZE) commits, commit_paths, commit_lexicon, "
                                   "commit_totals")

    async def keep_repos(self, git_dirs: Iterable[Path]) -> int:
        keep = [str(g) for g in git_dirs]
        gone = await self._fetch("SELECT 1 FROM history_repos WHERE git_dir <> ALL(?::text[]) "
                                 "LIMIT 1", keep)
        if not gone:
            return 0  # (nothing to forget: nothing written)
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, transaction(conn, write=False):
                status = await conn.execute(
                    "DELETE FROM history_repos WHERE git_dir <> ALL($1::text[])", keep)
                await logged(conn)
        return int(status.split()[-1])

    async def repositories(self) -> list[dict[str, Any]]:
        rows = await self._fetch(
            "SELECT r.id, r.worktree, r.git_dir, r.shallow, r.problem, r.commits "
            'FROM history_repos r ORDER BY r.worktree COLLATE "C"')
        return [{"id": int(r[0]), "path": str(r[1]), "git_dir": str(r[2]),
                 "shallow": bool(r[3]), "problem": r[4], "commits": int(r[5])} for r in rows]

    async def hashes(self, repo_id: int) -> set[str]:
        rows = await self._fetch("SELECT hash FROM commits WHERE repo_id = ?", repo_id)
        return {str(r[0]) for r in rows}

    # ------------------------------------------------------------ writes

    def prepare(self, repo_id: int, commits: Sequence[RawCommit]) -> Prepared:
        """The commits' columns (their documents and tokens), for ``write``."""
        columns: list[list[Any]] = [[] for _ in _COMMIT_TYPES]
        for c in commits:
            doc = document(c)
            lexemes, length = commit_lexemes(doc.title, doc.body, doc.paths, doc.summary)
            values = (repo_id, c.hash, " ".join(c.parents), _clean(c.author_name),
                      _clean(c.author_email), c.author_time, _clean(c.committer_name),
                      _clean(c.committer_email), c.commit_time, _clean(doc.title),
                      _clean(doc.body), _clean(doc.paths), _clean(doc.summary), c.cut,
                      doc.content_hash, _clean(lexemes), length)
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        return Prepared(repo_id=repo_id, commits=commits, rows=columns)

    async def write(self, batch: Prepared) -> int:
        """The commits, as documents, in one transaction (one already there is left as it
        is): the new ones' paths written with them. Returns how many were new."""
        commits, columns = batch.commits, batch.rows
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, transaction(conn, write=False):
                new = await conn.fetch(
                    f"INSERT INTO commits({_COMMIT_COLUMNS}) {_unnest(_COMMIT_TYPES)} "
                    "ON CONFLICT (repo_id, hash) DO NOTHING RETURNING id, hash", *columns)
                ids = {str(r[1]): int(r[0]) for r in new}
                paths: list[list[Any]] = [[] for _ in _PATH_TYPES]
                for c in commits:
                    if c.hash not in ids:
                        continue
                    for p in c.paths:
                        row = (ids[c.hash], _clean(p.path),
                               None if p.old_path is None else _clean(p.old_path),
                               p.change, p.added, p.removed, p.binary)
                        for column, value in zip(paths, row, strict=True):
                            column.append(value)
                if paths[0]:
                    await conn.execute(
                        "INSERT INTO commit_paths(commit_id, path, old_path, change, added, "
                        f"removed, is_binary) {_unnest(_PATH_TYPES)}", *paths)
                if ids:
                    await logged(conn)
        self._unswept += len(ids)
        return len(ids)

    async def drop(self, repo_id: int, hashes: Sequence[str]) -> int:
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, transaction(conn, write=False):
                status = await conn.execute(
                    "DELETE FROM commits WHERE repo_id = $1 AND hash = ANY($2::text[])",
                    repo_id, list(hashes))
                if int(status.split()[-1]):
                    await logged(conn)
        return int(status.split()[-1])

    # ------------------------------------------------------------ vectors

    async def lacking(self, model: str) -> list[str]:
        rows = await self._fetch(
            "SELECT c.content_hash FROM commits c WHERE NOT EXISTS (SELECT 1 FROM "
            "embeddings e WHERE e.content_hash = c.content_hash AND e.model = ?) "
            "GROUP BY c.content_hash ORDER BY max(c.commit_time), c.content_hash", model)
        return [str(r[0]) for r in rows]

    async def texts(self, hashes: Sequence[str]) -> dict[str, str]:
        rows = await self._fetch(
            "SELECT content_hash, title, body, paths, summary FROM commits WHERE "
            "content_hash = ANY(?::text[])", list(hashes))
        return {str(r[0]): embed_text(str(r[1]), str(r[2]), str(r[3]), str(r[4]))
                for r in rows}

    async def store_vectors(self, model: str, hashes: Sequence[str], blobs: Sequence[bytes],
                            dim: int) -> None:
        from pgvector import Vector

        rows = [(h, model, dim, Vector(np.frombuffer(b, dtype=np.float32)))
                for h, b in zip(hashes, blobs, strict=True)]
        with mapped_errors(self.where):
            async with self.pool.acquire() as conn, transaction(conn):
                await conn.executemany(
                    "INSERT INTO embeddings(content_hash, model, dim, vector) VALUES "
                    "($1, $2, $3, $4) ON CONFLICT (content_hash, model) DO NOTHING", rows)
                await note(conn)

    async def vectors(self, model: str) -> list[tuple[int, bytes]]:
        rows = await self._fetch(
            "SELECT c.id, e.vector FROM commits c JOIN embeddings e ON "
            "e.content_hash = c.content_hash AND e.model = ?", model)
        return [(int(r[0]), r[1].to_numpy().astype(np.float32).tobytes()) for r in rows]

    # ------------------------------------------------------------ reads

    async def lexical(self, query: str, limit: int, filters: HistoryFilters
                      ) -> tuple[list[tuple[int, float]], str | None]:
        return await self._lexical.lexical(query, limit, filters)

    async def allowed(self, filters: HistoryFilters) -> set[int]:
        clause, args = filters.clause()
        rows = await self._fetch(f"SELECT c.id FROM commits c WHERE {clause}", *args)
        return {int(r[0]) for r in rows}

    async def rows(self, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        rows = await self._fetch(f"{ROW_SELECT} WHERE c.id = ANY(?::bigint[])", list(ids))
        return {int(r[0]): tuple(r) for r in rows}

    async def paths(self, ids: Sequence[int]) -> dict[int, list[tuple[Any, ...]]]:
        out: dict[int, list[tuple[Any, ...]]] = {i: [] for i in ids}
        rows = await self._fetch(
            "SELECT commit_id, path, change, old_path, added, removed, is_binary FROM "
            "commit_paths WHERE commit_id = ANY(?::bigint[]) ORDER BY id", list(ids))
        for r in rows:
            out[int(r[0])].append(tuple(r)[1:])
        return out

    async def find(self, prefix: str, repos: tuple[int, ...] | None = None) -> list[int]:
        prefix = prefix.lower()
        clause, args = HistoryFilters(repos=repos).clause()
        rows = await self._fetch(
            f"SELECT c.id FROM commits c WHERE c.hash >= ? AND c.hash < ? AND {clause} "
            "LIMIT 2", prefix, prefix + "g", *args)
        return [int(r[0]) for r in rows]

    async def touching(self, repo_id: int, path: str, limit: int
                       ) -> list[tuple[int, str, str, str | None]]:

        async def step(current: str, bound: int) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in await self._fetch(
                "SELECT c.id, c.commit_time, p.path, p.change, p.old_path FROM "
                "commit_paths p JOIN commits c ON c.id = p.commit_id WHERE p.path = ? "
                "AND c.repo_id = ? AND c.commit_time <= ? ORDER BY c.commit_time DESC, "
                "c.id", current, repo_id, bound)]

        return await follow_renames(step, path, limit)
