"""SIGKILL at random moments, while files are written and while vectors are: every kill
leaves a sound database, and a reindex afterwards equals a clean build of the files."""

from __future__ import annotations

import random
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from rifflux import Rifflux

from ..helpers import eventually, write

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: Ten kills, five in each phase: each must leave a sound database, and at least three
#: of each phase's five must find the child at work (twenty proved no more: every kill is
#: checked on its own, and the end state is compared once).
KILLS = 10

# The child indexes with the hash embedder slowed down, so that there is an embedding
# phase to kill (the real model is far slower still); its label is the hash
# embedder's, so the vectors it makes are the ones a plain hash index would hold.
CHILD = """\
import sys, time, anyio
from rifflux import Rifflux
from rifflux.core.embedders import HashEmbedder

class Slow(HashEmbedder):
    def embed_documents(self, texts):
        time.sleep(0.004 * len(texts))
        return super().embed_documents(texts)

async def main(db, root):
    async with Rifflux(db, embedder=Slow()) as rf:
        print("open", flush=True)
        await rf.reindex(root)
        print("done", flush=True)

anyio.run(main, sys.argv[1], sys.argv[2])
"""


def section(rng: random.Random, n: int) -> str:
    words = " ".join(rng.choice(("river", "stone", "lantern", "orbit", "meadow", "copper"))
                     for _ in range(rng.randint(8, 60)))
    return f"## Part {n}\n\n{words} {rng.random():.6f}\n"


def text(rng: random.Random, name: str) -> str:
    return f"# {name}\n\n" + "\n".join(section(rng, n) for n in range(rng.randint(1, 5)))


def mutate(rng: random.Random, root: Path, serial: int) -> None:
    """Edit, delete and add a few files, so that every run has work to be killed in."""
    files = sorted(root.rglob("*.md"))
    for path in rng.sample(files, min(25, len(files))):
        path.write_text(text(rng, path.stem), encoding="utf-8")
    for path in rng.sample(files, min(4, len(files))):
        path.unlink(missing_ok=True)
    for i in range(5):
        write(root, f"d{rng.randint(0, 5)}/new-{serial}-{i}.md", text(rng, f"new {serial} {i}"))


def sound(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")


def contents(db: Path) -> dict[str, object]:
    """What an index holds, independent of ids and of the order things were written."""
    with sqlite3.connect(db) as conn:
        return {
            "roots": sorted(conn.execute("SELECT path FROM roots").fetchall()),
            "files": sorted(conn.execute(
                "SELECT rel_path, sha256, size, mtime_ns, encoding FROM files").fetchall()),
            "chunks": sorted(conn.execute(
                "SELECT f.rel_path, c.chunk_index, c.content_hash, c.content, c.heading_path, "
                "c.line_start, c.line_end FROM chunks c JOIN files f ON f.id = c.file_id"
            ).fetchall()),
            "fts": conn.execute("SELECT COUNT(*) FROM chunks_fts").fetchone(),
            "vectors": sorted(conn.execute(
                "SELECT content_hash, model, vector FROM embeddings").fetchall()),
        }


async def count(db: Path, sql: str) -> int:
    def read() -> int:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                return int(conn.execute(sql).fetchone()[0])
        except sqlite3.Error:
            return -1
    return await anyio.to_thread.run_sync(read)


async def kill_at_random(process: Process, rng: random.Random, db: Path,
                         phase: str, vectors_before: int) -> bool:
    """Kill the child during ``phase``; True when it was still running at the kill."""
    assert process.stdout is not None
    with anyio.fail_after(30):
        opened = await process.stdout.receive()
    assert opened.startswith(b"open"), opened
    if phase == "embedding":  # once this run has written some vectors
        vectors = "SELECT COUNT(*) FROM embeddings"

        async def embedding() -> bool:
            return await count(db, vectors) > vectors_before or process.returncode is not None

        await eventually(embedding, within=30)
        await anyio.sleep(rng.uniform(0, 0.4))
    else:  # anywhere from the open to the end of the writes
        await anyio.sleep(rng.uniform(0, 0.5))
    alive = process.returncode is None
    process.kill()
    await process.wait()
    return alive


async def test_kills_while_indexing_and_embedding_leave_a_sound_index(
    tmp_path: Path,
) -> None:
    rng = random.Random(20261122)
    root = tmp_path / "docs"
    for i in range(240):
        write(root, f"d{i % 6}/f{i}.md", text(rng, f"file {i}"))
    db = tmp_path / "killed.db"
    hit = {"writing": 0, "embedding": 0}
    for serial in range(KILLS):
        phase = "embedding" if serial % 2 else "writing"
        vectors_before = max(0, await count(db, "SELECT COUNT(*) FROM embeddings"))
        process = await anyio.open_process(
            [sys.executable, "-c", CHILD, str(db), str(root)], stderr=None)
        async with process:
            if await kill_at_random(process, rng, db, phase, vectors_before):
                hit[phase] += 1
        sound(db)
        mutate(rng, root, serial)
    # Most kills found the child at work, in both phases (a few may come late).
    assert hit["writing"] >= KILLS // 2 - 2 and hit["embedding"] >= KILLS // 2 - 2, hit
    async with Rifflux(db, embedding_backend="hash") as rf:
        await rf.reindex(root)
        after = await rf.status()
    async with Rifflux(tmp_path / "clean.db", embedding_backend="hash") as rf:
        await rf.reindex(root)
    assert after["pending_embeddings"] == 0
    assert contents(db) == contents(tmp_path / "clean.db")
