"""The history's rows on an SQLite connection: repositories and what was read of them,
commits written and dropped, the lexical leg (FTS5's bm25 over title, body, paths and
change), the vectors commits lack and have, the rows hits show, a file's commits."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from ...core.fts_query import build_match
from ...history.document import document, embed_text
from ...history.git import RawCommit
from ...history.rows import (
    ROW_SELECT,
    WEIGHTS,
    HistoryFilters,
    Prepared,
    RepoState,
    follow_renames,
    title_words,
)
from ..written import batches, marks
from .sql import mapped_errors, transaction


class HistoryRows:
    """The history's statements on one SQLite connection (the writer's, or a reader's):
    ``history.rows.HistoryRows``."""

    #: Batches written side by side: one (one connection, one writer at a time).
    WRITES = 1

    def __init__(self, conn: aiosqlite.Connection, db_path: Path) -> None:
        self.conn = conn
        self.db_path = db_path

    def condition(self) -> str | None:
        """Nothing to say: FTS5 ranks every search alike."""
        return None

    # ------------------------------------------------------------ repositories

    async def roots(self) -> list[Path]:
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall("SELECT path FROM roots ORDER BY path")
        return [Path(str(r[0])) for r in rows]

    async def repo(self, git_dir: Path, worktree: Path, shallow: bool) -> RepoState:
        """The repository's row (made when new), and what was read of it last. Written only
        when it changes: a read that finds nothing new writes nothing."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT id, tips, shallow, problem FROM history_repos WHERE git_dir = ?",
                (str(git_dir),))
            row = next(iter(rows), None)
            if row is None or bool(row[2]) != shallow:
                async with transaction(self.conn):
                    await self.conn.execute(
                        "INSERT INTO history_repos(git_dir, worktree, shallow) VALUES (?,?,?) "
                        "ON CONFLICT(git_dir) DO UPDATE SET shallow = excluded.shallow",
                        (str(git_dir), str(worktree), int(shallow)))
                rows = await self.conn.execute_fetchall(
                    "SELECT id, tips, shallow, problem FROM history_repos WHERE git_dir = ?",
                    (str(git_dir),))
                row = next(iter(rows))
        return RepoState(id=int(row[0]), tips=list(json.loads(str(row[1]))),
                         problem=None if row[3] is None else str(row[3]))

    async def read(self, repo_id: int, *, tips: Sequence[str] | None,
                   problem: str | None) -> None:
        """What was read of a repository: its tips (None: kept as they were), or why not."""
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                if tips is not None:
                    await self.conn.execute(
                        "UPDATE history_repos SET tips = ?, problem = ?, read_at = ?, "
                        "commits = (SELECT COUNT(*) FROM commits WHERE repo_id = ?) "
                        "WHERE id = ?", (json.dumps(list(tips)), problem, time.time(),
                                         repo_id, repo_id))
                else:
                    await self.conn.execute(
                        "UPDATE history_repos SET problem = ? WHERE id = ?", (problem, repo_id))

    async def keep_repos(self, git_dirs: Iterable[Path]) -> int:
        """Forget the repositories no indexed folder is in any more (their commits go)."""
        keep = [str(g) for g in git_dirs]
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                f"SELECT 1 FROM history_repos WHERE git_dir NOT IN ({marks(len(keep))}) "
                "LIMIT 1", keep)
            if not rows:
                return 0  # (nothing to forget: nothing written)
            async with transaction(self.conn):
                cur = await self.conn.execute(
                    f"DELETE FROM history_repos WHERE git_dir NOT IN ({marks(len(keep))})",
                    keep)
                return cur.rowcount

    async def repositories(self) -> list[dict[str, Any]]:
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT r.id, r.worktree, r.git_dir, r.shallow, r.problem, r.commits "
                "FROM history_repos r ORDER BY r.worktree")
        return [{"id": int(r[0]), "path": str(r[1]), "git_dir": str(r[2]),
                 "shallow": bool(r[3]), "problem": r[4], "commits": int(r[5])} for r in rows]

    async def hashes(self, repo_id: int) -> set[str]:
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT hash FROM commits WHERE repo_id = ?", (repo_id,))
        return {str(r[0]) for r in rows}

    # ------------------------------------------------------------ writes

    def prepare(self, repo_id: int, commits: Sequence[RawCommit]) -> Prepared:
        rows = []
        for c in commits:
            doc = document(c)
            rows.append((repo_id, c.hash, " ".join(c.parents), c.author_name, c.author_email,
                         c.author_time, c.committer_name, c.committer_email, c.commit_time,
                         doc.title, doc.body, doc.paths, doc.summary, int(c.cut),
                         doc.content_hash))
        return Prepared(repo_id=repo_id, commits=commits, rows=rows)

    async def write(self, batch: Prepared) -> int:
        """The commits, as documents, in one transaction (a commit already there is
        left as it is). Returns how many were new."""
        repo_id, commits, rows = batch.repo_id, batch.commits, batch.rows
        new = 0
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                cur = await self.conn.executemany(
                    "INSERT OR IGNORE INTO commits(repo_id, hash, parents, author_name, "
                    "author_email, author_time, committer_name, committer_email, commit_time,"
                    " title, body, paths, summary, cut, content_hash) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
                new = cur.rowcount
                ids = await self._ids(repo_id, [c.hash for c in commits])
                await self.conn.executemany(
                    "INSERT INTO commit_paths(commit_id, path, old_path, change, added, "
                    "removed, binary) VALUES (?,?,?,?,?,?,?)",
                    [(ids[c.hash], p.path, p.old_path, p.change, p.added, p.removed,
                      int(p.binary)) for c in commits if c.hash in ids for p in c.paths])
        return new

    async def _ids(self, repo_id: int, hashes: Sequence[str]) -> dict[str, int]:
        """The new rows' ids (a commit that was there already is not in it)."""
        out: dict[str, int] = {}
        for part in batches(hashes):
            rows = await self.conn.execute_fetchall(
                f"SELECT hash, id FROM commits c WHERE repo_id = ? AND hash IN "
                f"({marks(len(part))}) AND NOT EXISTS (SELECT 1 FROM commit_paths p "
                "WHERE p.commit_id = c.id)", (repo_id, *part))
            out.update((str(r[0]), int(r[1])) for r in rows)
        return out

    async def drop(self, repo_id: int, hashes: Sequence[str]) -> int:
        """Commits no branch reaches any more (their paths and full-text rows go too)."""
        dropped = 0
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                for part in batches(hashes):
                    cur = await self.conn.execute(
                        f"DELETE FROM commits WHERE repo_id = ? AND hash IN "
                        f"({marks(len(part))})", (repo_id, *part))
                    dropped += cur.rowcount
        return dropped

    # ------------------------------------------------------------ vectors

    async def lacking(self, model: str) -> list[str]:
        """The commit texts without a vector of ``model``, oldest commits first (the
        embedder takes the newest from the end): one read, then kept by the actor."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT c.content_hash FROM commits c WHERE NOT EXISTS (SELECT 1 FROM "
                "embeddings e WHERE e.content_hash = c.content_hash AND e.model = ?) "
                "GROUP BY c.content_hash ORDER BY MAX(c.commit_time)", (model,))
        return [str(r[0]) for r in rows]

    async def texts(self, hashes: Sequence[str]) -> dict[str, str]:
        """The texts the vectors of these commit texts are made of, by their hashes."""
        out: dict[str, str] = {}
        with mapped_errors(self.db_path):
            for part in batches(hashes):
                rows = await self.conn.execute_fetchall(
                    "SELECT content_hash, title, body, paths, summary FROM commits WHERE "
                    f"content_hash IN ({marks(len(part))})", tuple(part))
                out.update((str(r[0]), embed_text(str(r[1]), str(r[2]), str(r[3]),
                                                  str(r[4]))) for r in rows)
        return out

    async def store_vectors(self, model: str, hashes: Sequence[str], blobs: Sequence[bytes],
                            dim: int) -> None:
        with mapped_errors(self.db_path):
            async with transaction(self.conn):
                await self.conn.executemany(
                    "INSERT OR IGNORE INTO embeddings(content_hash, model, dim, vector) "
                    "VALUES (?,?,?,?)", [(h, model, dim, b) for h, b in zip(hashes, blobs,
                                                                             strict=True)])

    async def vectors(self, model: str) -> list[tuple[int, bytes]]:
        """Every commit with a vector of ``model``: (commit id, float32 bytes)."""
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                "SELECT c.id, e.vector FROM commits c JOIN embeddings e ON "
                "e.content_hash = c.content_hash AND e.model = ?", (model,))
        return [(int(r[0]), bytes(r[1])) for r in rows]

    # ------------------------------------------------------------ reads

    async def lexical(self, query: str, limit: int, filters: HistoryFilters
                      ) -> tuple[list[tuple[int, float]], str | None]:
        """FTS5's best for ``query`` (``history_match``): without filters, ranked by FTS5
        alone (no commit row read: 2x faster on 23,000 commits); equal scores, oldest
        row first. (Nothing to say of how: FTS5 ranks every match, prefixes too.)"""
        match = history_match(query)
        if match is None:
            return [], None
        w = ", ".join(str(float(x)) for x in WEIGHTS)
        with mapped_errors(self.db_path):
            if not filters.any():
                rows = await self.conn.execute_fetchall(
                    f"SELECT rowid, bm25(commits_fts, {w}) AS s FROM commits_fts "
                    "WHERE commits_fts MATCH ? ORDER BY s, rowid LIMIT ?", (match, limit))
            else:
                clause, args = filters.clause()
                rows = await self.conn.execute_fetchall(
                    f"SELECT c.id, bm25(commits_fts, {w}) AS s FROM commits_fts "
                    f"JOIN commits c ON c.id = commits_fts.rowid WHERE commits_fts MATCH ? "
                    f"AND {clause} ORDER BY s, c.id LIMIT ?", (match, *args, limit))
        return [(int(r[0]), float(r[1])) for r in rows], None

    async def allowed(self, filters: HistoryFilters) -> set[int]:
        clause, args = filters.clause()
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                f"SELECT c.id FROM commits c WHERE {clause}", args)
        return {int(r[0]) for r in rows}

    async def rows(self, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
        out: dict[int, tuple[Any, ...]] = {}
        with mapped_errors(self.db_path):
            for part in batches(ids):
                rows = await self.conn.execute_fetchall(
                    f"{ROW_SELECT} WHERE c.id IN ({marks(len(part))})", tuple(part))
                out.update((int(r[0]), tuple(r)) for r in rows)
        return out

    async def paths(self, ids: Sequence[int]) -> dict[int, list[tuple[Any, ...]]]:
        """Each commit's changed paths: (path, change, old path, added, removed, binary)."""
        out: dict[int, list[tuple[Any, ...]]] = {i: [] for i in ids}
        with mapped_errors(self.db_path):
            for part in batches(ids):
                rows = await self.conn.execute_fetchall(
                    "SELECT commit_id, path, change, old_path, added, removed, binary FROM "
                    f"commit_paths WHERE commit_id IN ({marks(len(part))}) ORDER BY rowid",
                    tuple(part))
                for r in rows:
                    out[int(r[0])].append(tuple(r[1:]))
        return out

    async def find(self, prefix: str, repos: tuple[int, ...] | None = None) -> list[int]:
        """The commits whose hash starts with ``prefix`` (at most two: more is ambiguous)."""
        prefix = prefix.lower()
        clause, args = HistoryFilters(repos=repos).clause()
        with mapped_errors(self.db_path):
            rows = await self.conn.execute_fetchall(
                f"SELECT c.id FROM commits c WHERE c.hash >= ? AND c.hash < ? AND {clause} "
                "LIMIT 2", (prefix, prefix + "g", *args))
        return [int(r[0]) for r in rows]

    async def touching(self, repo_id: int, path: str, limit: int
                       ) -> list[tuple[int, str, str, str | None]]:
        """The commits that changed ``path`` in a repository, newest first, following its
        renames back (``follow_renames``): (commit id, path then, change, old path)."""

        async def step(current: str, bound: int) -> list[tuple[Any, ...]]:
            return [tuple(r) for r in await self.conn.execute_fetchall(
                "SELECT c.id, c.commit_time, p.path, p.change, p.old_path FROM "
                "commit_paths p JOIN commits c ON c.id = p.commit_id WHERE p.path = ? "
                "AND c.repo_id = ? AND c.commit_time <= ? ORDER BY c.commit_time DESC,"
                " c.id", (current, repo_id, bound))]

        with mapped_errors(self.db_path):
            return await follow_renames(step, path, limit)


def history_match(query: str) -> str | None:
    """The FTS5 expression for ``query`` over commits: its words (``build_match``), or
    its words as one phrase in a title (``title_words``)."""
    match = build_match(query)
    words = title_words(query)
    if match is None or not words:
        return match
    return f'({match}) OR (title : "{" ".join(words)}")'
