"""The change log: how a process learns what other processes wrote to the same index.

Every writing connection installs TEMP triggers (they live and die with the
connection) that append a row to ``changes`` in the same transaction as each
write: a file written or deleted, a root added or removed, a vector stored, a link
resolved again (to another file, or to none), a chunk deleted whose text had no
vector (the followers' sets of texts lacking vectors may lose it). Each row carries the writing
process's ``origin`` and a sequence number (the rowid: writes are serialised, so the
sequence is the commit order).

A process notices that someone else committed by ``PRAGMA data_version`` on its
writer connection (which changes only when another connection commits: in one
process, only the writer writes) and reads the rows after the last it has seen
that are not its own. ``Follow.read`` turns them into one ``Written`` the
indexer handles like its own commits: the files' catalog entries and matrix
rows, the vectors stored (rows of kind ``history`` are the history's to follow:
``history_changes``). Rows are pruned once there are more than ``KEEP``; a
process that fell further behind than that reloads everything.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import aiosqlite

from ..common import Foreign
from ..protocols import RootsStore
from ..written import Written, batches, file_entries, marks
from .history_changes import KIND as HISTORY
from .link_index import edges_of
from .sql import Connection, mapped_errors

if TYPE_CHECKING:  # (numpy is imported where vectors are made or read, not before)
    from ...core.vectors import F32

#: Rows kept in the log (a follower further behind reloads everything).
KEEP = 50_000

_TRIGGERS = """
CREATE TEMP TRIGGER IF NOT EXISTS log_file_ai AFTER INSERT ON main.files BEGIN
    INSERT INTO changes(origin, kind, ref) VALUES ({origin}, 'file', new.id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_file_au AFTER UPDATE ON main.files BEGIN
    INSERT INTO changes(origin, kind, ref) VALUES ({origin}, 'file', new.id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_file_ad AFTER DELETE ON main.files BEGIN
    INSERT INTO changes(origin, kind, ref) VALUES ({origin}, 'file_gone', old.id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_root_ai AFTER INSERT ON main.roots BEGIN
    INSERT INTO changes(origin, kind, ref) VALUES ({origin}, 'root', new.id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_root_ad AFTER DELETE ON main.roots BEGIN
    INSERT INTO changes(origin, kind, ref) VALUES ({origin}, 'root_gone', old.id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_link_au AFTER UPDATE OF target_file_id ON main.links
BEGIN
    INSERT INTO changes(origin, kind, ref) VALUES ({origin}, 'links', new.file_id);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_vector_ai AFTER INSERT ON main.embeddings BEGIN
    INSERT INTO changes(origin, kind, hash) VALUES ({origin}, 'vector', new.content_hash);
END;
CREATE TEMP TRIGGER IF NOT EXISTS log_text_ad AFTER DELETE ON main.chunks
WHEN NOT EXISTS (SELECT 1 FROM main.embeddings e WHERE e.content_hash = old.content_hash)
BEGIN
    INSERT INTO changes(origin, kind, hash) VALUES ({origin}, 'text_gone', old.content_hash);
END;
"""


def _hashes(rows: Sequence[sqlite3.Row], kind: str) -> tuple[str, ...]:
    return tuple(sorted({str(r[4]) for r in rows if r[2] == kind}))


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


async def prune(conn: Connection, db_path: Path) -> None:
    """Keep the last ``KEEP`` rows of the log (a follower further behind reloads
    everything)."""
    with mapped_errors(db_path):
        await conn.execute(
            "DELETE FROM changes WHERE seq <= (SELECT MAX(seq) FROM changes) - ?", (KEEP,))


async def sequence(conn: Connection) -> int:
    """The index's change sequence number (0 before any write)."""
    rows = await conn.execute_fetchall("SELECT COALESCE(MAX(seq), 0) FROM changes")
    return int(next(iter(rows))[0])


class Follow:
    """One process's view of the change log (on its writer connection)."""

    def __init__(self, conn: aiosqlite.Connection, db_path: Path, origin: str) -> None:
        self.conn = conn
        self.db_path = db_path
        self.origin = origin
        self.seen = 0  # the last sequence number read
        self._version: int | None = None
        self.available = True  # False: an index without a change log (read-only, older)

    async def install(self, *, writes: bool) -> None:
        """Start following from now; ``writes``: this connection logs its own writes."""
        with mapped_errors(self.db_path):
            try:
                if writes:
                    await self.conn.executescript(_TRIGGERS.format(origin=_quoted(self.origin)))
                self.seen = await self.sequence()
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                self.available = False  # read-only open of an index made before the log
            self._version = await self._data_version()

    async def sequence(self) -> int:
        """The index's change sequence number (0 before any write)."""
        return await sequence(self.conn)

    async def _data_version(self) -> int:
        rows = await self.conn.execute_fetchall("PRAGMA data_version")
        return int(next(iter(rows))[0])

    def look_again(self) -> None:
        """The last changes could not be read (busy): report them at the next look."""
        self._version = None

    async def others_wrote(self) -> bool:
        """Whether another connection committed since the last call (one cheap pragma)."""
        with mapped_errors(self.db_path):
            version = await self._data_version()
        changed, self._version = version != self._version, version
        return changed and self.available

    async def read(self, model: str | None, roots: RootsStore) -> Foreign | None:
        """Other processes' changes since the last read, as one ``Written`` (None: only
        this process's own, or none). ``roots``, the writer's, is read again when they
        added or removed a root.

        Nothing counts as read until ``done(foreign.upto)``: whatever fails before the
        changes are applied, they are read again at the next look."""
        with mapped_errors(self.db_path):
            bounds = await self.conn.execute_fetchall(
                "SELECT MIN(seq), MAX(seq) FROM changes WHERE seq > ?", (self.seen,))
            low, high = next(iter(bounds))
            if high is None:
                return None
            upto = int(high)
            if int(low) > self.seen + 1 and await self._pruned_past():
                return Foreign(Written(), reload=True, upto=upto)
            theirs = list(await self.conn.execute_fetchall(  # (this process's own left out,
                "SELECT seq, origin, kind, ref, hash FROM changes WHERE seq > ? AND seq <= ? "
                "AND origin != ? AND kind != ? ORDER BY seq",  # and the history's: its own)
                (self.seen, upto, self.origin, HISTORY)))
            if not theirs:
                self.seen = upto  # only this process's own
                return None
            return Foreign(await self._gather(theirs, model, roots),
                           embedded=_hashes(theirs, "vector"),
                           texts_gone=_hashes(theirs, "text_gone"), upto=upto)

    def done(self, upto: int) -> None:
        """The changes up to ``upto`` are applied."""
        self.seen = max(self.seen, upto)

    async def _pruned_past(self) -> bool:
        rows = await self.conn.execute_fetchall("SELECT MIN(seq) FROM changes")
        low = next(iter(rows))[0]
        return low is not None and int(low) > self.seen + 1

    async def _gather(self, rows: list[sqlite3.Row], model: str | None,
                      roots: RootsStore) -> Written:
        files = sorted({int(r[3]) for r in rows if r[2] in ("file", "file_gone")})
        hashes = sorted({str(r[4]) for r in rows if r[2] == "vector"})
        roots_gone = tuple(sorted({int(r[3]) for r in rows if r[2] == "root_gone"}))
        entries = await file_entries(self.conn, files)
        present = {e.id for e in entries}
        relinked = sorted({int(r[3]) for r in rows if r[2] == "links"} - set(files))
        still: set[int] = set()
        for part in batches(relinked):  # files whose links resolve elsewhere: still here?
            got = await self.conn.execute_fetchall(
                f"SELECT id FROM files WHERE id IN ({marks(len(part))})", tuple(part))
            still.update(int(r[0]) for r in got)
        edges = await edges_of(self.conn, present | still)
        ids: list[int] = []
        owners: list[int] = []
        blobs: list[bytes] = []
        if model is not None:
            keyed: tuple[tuple[str, Sequence[object]], ...] = (
                ("c.file_id", sorted(present)), ("c.content_hash", hashes))
            for column, keys in keyed:
                for some in batches(keys):
                    got = await self.conn.execute_fetchall(
                        "SELECT c.id, c.file_id, e.vector FROM chunks c JOIN embeddings e ON "
                        f"e.content_hash = c.content_hash AND e.model = ? WHERE {column} IN "
                        f"({marks(len(some))})", (model, *some))
                    for c in got:
                        if int(c[1]) in present and column == "c.content_hash":
                            continue  # read already, with its file
                        ids.append(int(c[0]))
                        owners.append(int(c[1]))
                        blobs.append(bytes(c[2]))
        if any(r[2] in ("root", "root_gone") for r in rows) or any(
                e.root_id not in roots.paths for e in entries):
            await roots.load()
        vectors: F32 | None = None
        if blobs:
            import numpy as np

            vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(
                len(blobs), -1).copy()
        return Written(
            added_ids=tuple(ids), added_files=tuple(owners), added_vectors=vectors,
            files=tuple(entries), files_removed=tuple(f for f in files if f not in present),
            files_replaced=tuple(files), roots=tuple(sorted(roots.paths.items())),
            roots_removed=roots_gone, links=edges)
