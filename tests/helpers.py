"""Helpers shared by the tests: fakes and polling utilities."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from rifflux.core.embedders import HashEmbedder
from rifflux.core.vectors import F32


class CountingEmbedder:
    """The hash embedder, counting every text it is asked to embed."""

    backend = "hash"

    def __init__(self, label: str = "counting-v1") -> None:
        self._inner = HashEmbedder()
        self._label = label
        self.embedded: list[str] = []
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return self._label

    @property
    def dim(self) -> int:
        return self._inner.dim

    def embed_documents(self, texts: list[str]) -> F32:
        with self._lock:
            self.embedded.extend(texts)
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> F32:
        return self._inner.embed_query(text)


class ZeroQueryEmbedder(CountingEmbedder):
    def embed_query(self, text: str) -> F32:
        return np.zeros(self.dim, dtype=np.float32)


class GatedEmbedder(CountingEmbedder):
    """Embeds only while ``gate`` is set; ``entered`` is set once a batch is waiting on it."""

    def __init__(self, label: str = "gated-v1") -> None:
        super().__init__(label)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def embed_documents(self, texts: list[str]) -> F32:
        self.entered.set()
        if not self.gate.wait(timeout=30):
            raise TimeoutError("the test never opened the gate")
        return super().embed_documents(texts)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def eventually(check: Callable[[], Any], within: float = 10.0) -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy, under fail_after.

    Polling is how the tests wait for state outside the event loop (files on disk, a
    database written by another task); a deadline, never a sleep, decides failure.
    """
    with anyio.fail_after(within):
        while True:
            value = check()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            await anyio.sleep(0.02)


_V4_FTS = """
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading_path, content, content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, heading_path, content)
    VALUES (new.id, new.heading_path, new.content);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content)
    VALUES ('delete', old.id, old.heading_path, old.content);
END;
CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content)
    VALUES ('delete', old.id, old.heading_path, old.content);
    INSERT INTO chunks_fts(rowid, heading_path, content)
    VALUES (new.id, new.heading_path, new.content);
END;
INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
"""


async def indexed_then_downgraded(db: Path, root: Path,
                                  version: int) -> tuple[CountingEmbedder, int]:
    """``root`` indexed into ``db``, which is then made what schema ``version`` wrote:
    the embedder used, and how many texts it embedded."""
    from rifflux import Rifflux

    embedder = CountingEmbedder()
    async with Rifflux(db, embedder=embedder) as rf:
        await rf.reindex(root)
        embedded = len(embedder.embedded)
    downgrade(db, version)
    return embedder, embedded


async def jobs_settled(rf: Any) -> None:
    """Until the jobs started on their own (reading an upgraded index's files again, a
    watcher's first scan) have completed."""

    async def done() -> bool:
        jobs = (await rf.status())["jobs"]
        return bool(jobs) and all(j["status"] == "completed" for j in jobs)

    await eventually(done)


def downgrade(db: Path, version: int) -> None:
    """Turn an index this Rifflux wrote into what schema ``version`` (2 to 5) wrote."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.executescript("DROP TABLE links; DROP TABLE note_keys; DROP TABLE note_aliases;")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
        if version == 5:
            return
        conn.executescript(
            "DROP TRIGGER chunks_ai; DROP TRIGGER chunks_ad; DROP TRIGGER chunks_au; "
            "DROP TABLE chunks_fts; DROP VIEW chunks_fts_text; "
            "ALTER TABLE chunks DROP COLUMN fts_heading; "
            "ALTER TABLE chunks DROP COLUMN fts_content; ALTER TABLE chunks DROP COLUMN cjk;"
            + _V4_FTS)
        dropped = {3: [("files", "encoding")],
                   2: [("files", "encoding"), ("files", "frontmatter"), ("files", "line_count"),
                       ("chunks", "line_start"), ("chunks", "line_end")]}.get(version, [])
        for table, column in dropped:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
