"""Helpers shared by the tests: fakes, polling, the folders of notes the tests index,
two writers on one index, and the command line and MCP server run as subprocesses.

Test modules import from here (fixtures are in ``conftest.py``), never from each other.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import numpy as np
import numpy.typing as npt

import rifflux
from rifflux import Rifflux
from rifflux.core.chunker import Chunk, FileMetadata, make_chunk
from rifflux.core.embedders import HashEmbedder
from rifflux.core.vectors import F32, I64, VectorIndex
from rifflux.store.sqlite.changes import Follow
from rifflux.store.sqlite.schema import connect
from rifflux.store.sqlite.writer import Writer
from rifflux.store.written import FileToWrite
from rifflux.types import HybridScores, SearchResult

if TYPE_CHECKING:  # (the MCP client is imported where it is used: tests.process_driver,
    # a process of its own, imports this module and would load it for nothing, 0.4 s)
    from mcp import ClientSession
    from mcp.types import CallToolResult

# ---------------------------------------------------------------- where an index is

#: An index location as a test gives it to ``Rifflux``: a file, or a database's URL
#: (the ``db`` fixture gives either: the contract's tests run on both stores).
Location = Path | str
#: Makes a new, empty index location each call (``name`` tells files apart).
NewIndex = Callable[[str], Location]


async def index_rows(location: Location, sql: str) -> list[tuple[Any, ...]]:
    """The rows of a query on the index at ``location`` (SQLite or PostgreSQL; the SQL
    must read alike on both)."""
    if isinstance(location, Path):
        with sqlite3.connect(location) as lite:
            return [tuple(r) for r in lite.execute(sql).fetchall()]
    import asyncpg

    conn = await asyncpg.connect(location)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def languages_untold(location: Location) -> int:
    """Make the index at ``location`` what a writer leaves right after its commit, before
    its languages pass: every chunk waiting for its language. How many chunks wait."""
    await index_rows(location, "UPDATE chunks SET lang = NULL")
    await index_rows(location, "UPDATE files SET langs = '[]', langs_pending = (SELECT "
                               "count(*) FROM chunks c WHERE c.file_id = files.id)")
    return int((await index_rows(location, "SELECT sum(langs_pending) FROM files"))[0][0])


# ---------------------------------------------------------------- fake embedders


class CountingEmbedder:
    """The hash embedder, counting every text it is asked to embed."""

    backend: Literal["hash"] = "hash"

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


# ---------------------------------------------------------------- folders of notes


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_pdf(path: Path, pages: Sequence[str], *, outline: Sequence[str] = (),
              title: str | None = None, author: str | None = None) -> Path:
    """A real PDF (reportlab's, ``formats.pdf``) at ``path``: a page for each text (its
    lines drawn one under another), the ``outline`` titles as bookmarks to the pages'
    tops, in order."""
    from .formats import pdf

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pdf([text.split("\n") for text in pages], title=title, author=author,
                         entries=[(n, heading) for n, heading in enumerate(outline, 1)]))
    return path


def write_all(root: Path, files: Mapping[str, str]) -> Path:
    """Every file of ``files`` (relative path: text) under ``root``; ``root``."""
    for rel, text in files.items():
        write(root, rel, text)
    return root


def pdf_of(pages: Sequence[Sequence[str]]) -> bytes:
    """A PDF of these pages, each its lines of ASCII text in Helvetica (one of the 14
    fonts every reader knows): a real text layer, written by hand, no library needed."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>",
               "<< /Type /Pages /Kids [{}] /Count {} >>".format(
                   " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages))), len(pages)),
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i, lines in enumerate(pages):
        shown = " T* ".join("({}) Tj".format(line.replace("\\", "\\\\").replace("(", "\\(")
                                              .replace(")", "\\)")) for line in lines)
        stream = f"BT /F1 10 Tf 13 TL 50 750 Td {shown} ET"
        objects += [f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
                    f"<< /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>",
                    f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream"]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{at:010d} 00000 n \n".encode() for at in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
            "%%EOF\n").encode()
    return out


def numbered_notes(root: Path, n: int, *, word: str = "heron", long: bool = False) -> Path:
    """``n0.md`` … ``n{n-1}.md``, note ``i`` saying "heron number i wades …" (``word``
    for heron): each is found by its number. A ``long`` note says it thirty times (an
    index of many pages)."""
    for i in range(n):
        body = (f"{word} number {i} wades. " * 30 if long
                else f"{word} number {i} wades in the reeds.\n")
        write(root, f"n{i}.md", f"# Note {i}\n\n{body}")
    return root


def otters_and_bread(root: Path) -> Path:
    """Two short notes on unrelated topics: ``otters.md`` and ``bread.md``."""
    return write_all(root, {
        "otters.md": "# Otters\n\nOtters hold hands while they sleep in the river.\n",
        "bread.md": "# Bread\n\nKnead the dough, let it rise, bake it hot.\n",
    })


def write_note(root: Path, rel: str, body: str, *, tags: str | None = None, extra: str = "",
               age_days: float | None = None) -> Path:
    """A note titled by its file name, with ``tags`` and ``extra`` front matter, last
    modified ``age_days`` ago."""
    front = f"---\ntags: [{tags}]\n{extra}---\n" if tags is not None or extra else ""
    path = write(root, rel, f"{front}# {Path(rel).stem}\n\n{body}\n")
    if age_days is not None:
        when = time.time() - age_days * 86400
        os.utime(path, (when, when))
    return path


#: Three notes on unrelated topics, one section each: what a semantic search tells apart.
TOPICS = {
    "garden.md": "# Gardening\n\n## Watering tomatoes\n\nTomato plants need deep watering "
    "twice a week; avoid wetting the leaves.\n",
    "travel.md": "# Travel\n\n## Packing light\n\nBring one carry-on bag, roll your clothes "
    "and leave the hair dryer at home.\n",
    "cooking.md": "# Kitchen\n\n## Baking bread\n\nKnead the dough for ten minutes, let it "
    "rise for an hour, then bake at 220 degrees.\n",
}
#: A note a paraphrase finds ("I cannot recall my login secret") with none of its words.
ACCOUNT_HELP = {
    "account.md": "# Account help\n\n## Resetting your password\n\nIf you forget your "
    "credentials, open Settings and choose Forgot password to receive a reset link by email.\n\n"
    "## Deleting your profile\n\nProfiles are removed permanently after thirty days.\n",
}
#: The notes of the library's search tests: installing, searching, pancakes.
SEARCH_DOCS = {
    "install.md": "# Install\n\nRun pip install rifflux to install the package on Linux.\n\n"
    "## Windows\n\nOn Windows use the installer and restart the shell.\n",
    "search.md": "# Searching\n\nHybrid search fuses BM25 and embeddings with reciprocal "
    "rank fusion.\n\n## Lexical\n\nFTS5 ranks chunks by bm25.\n",
    "cooking.md": "# Pancakes\n\nMix flour, eggs and milk; fry in butter until golden.\n",
}

HOME = """---
title: Home page
---
# Home

Start at [[Projects/Alpha]] and [[Beta|the beta note]], or read [[The B]].

## Reading

See [[Gamma#Setup]] and the key point [[Gamma#^key-point]].
![[Delta]]
[[Missing Note]] is not written yet.
[[My Space Note]] and [two](notes/Delta%20Two.md#intro) and [[Note]].
Code: `[[InCode]]`.

```
[[Fenced]]
```

[web](https://example.org/Gamma.md)
"""

#: A vault of notes linked in every form Obsidian reads.
VAULT = {
    "Home.md": HOME,
    "Projects/Alpha.md": "# Alpha\n\nBack [home](../Home.md). Also [[Note]].\n",
    "Beta.md": "---\naliases: [The B, Bee]\n---\n# Beta\n\nBeta links nowhere.\n",
    "notes/Gamma.md": "# Gamma\n\n## Intro\n\nGamma begins.\n\n## Setup\n\nInstall the gamma "
                      "tools with care.\n\n## Notes\n\nA key point about gamma. ^key-point\n",
    "notes/Delta.md": "# Delta\n\nDelta text, see [[Epsilon]].\n",
    "notes/Delta Two.md": "# Delta Two\n\n## Intro\n\nSecond delta.\n",
    "notes/far/Epsilon.md": "# Epsilon\n\nThe far end of the garden path.\n",
    "a/Note.md": "# Note A\n\nThe first note about the garden.\n",
    "b/deeper/Note.md": "# Note B\n\nThe deeper note links [[Home]].\n",
    "My Space Note.md": "# Spaces\n\nA name with spaces.\n",
}

#: Home's outgoing links: (target as written, where it resolves, line).
HOME_LINKS = [
    ("Projects/Alpha", "Projects/Alpha.md", 6),
    ("Beta", "Beta.md", 6),
    ("The B", "Beta.md", 6),
    ("Gamma#Setup", "notes/Gamma.md", 10),
    ("Gamma#^key-point", "notes/Gamma.md", 10),
    ("Delta", "notes/Delta.md", 11),
    ("Missing Note", None, 12),
    ("My Space Note", "My Space Note.md", 13),
    ("notes/Delta%20Two.md#intro", "notes/Delta Two.md", 13),
    ("Note", "a/Note.md", 13),
]


def write_vault(root: Path, files: Mapping[str, str] = VAULT) -> Path:
    return write_all(root, files)


_WATER = [
    ("Tomatoes", "Tomatoes want full sun, deep watering twice a week and a cage to climb."),
    ("Compost", "Compost needs greens, browns, air and a little water; turn the pile weekly."),
    ("Irrigation", "Drip irrigation lines water the roots directly and waste little water."),
    ("Mulch", "Mulch keeps water in the soil and weeds out; use straw or shredded leaves."),
    ("Seeds", "Start seeds indoors six weeks before the last frost, water from below."),
    ("Pests", "Aphids wash off with a strong jet of water; ladybirds eat the rest."),
    ("Harvest", "Harvest in the cool morning and water the beds after picking."),
    ("Soil", "Loamy soil drains well yet holds water; add compost every spring."),
]


def _section(title: str, sentence: str) -> str:
    return f"## {title}\n\n" + " ".join([sentence] * 4) + "\n\n"


def write_corpus(root: Path) -> dict[str, Path]:
    """notes/ (2 files, many chunks about water), docs/ (1 file), cwd/ (1 file)."""
    notes, docs, cwd = root / "notes", root / "docs", root / "cwd"
    for folder in (notes, docs, cwd):
        folder.mkdir(parents=True)
    (notes / "garden.md").write_text(
        "# Garden\n\n" + "".join(_section(t, s) for t, s in _WATER[:4]), encoding="utf-8")
    (notes / "seasons.md").write_text(
        "# Seasons\n\n" + "".join(_section(t, s) for t, s in _WATER[4:]), encoding="utf-8")
    (docs / "install.md").write_text(
        "# Guide\n\n## Install\n\n### Linux\n\nRun the installer with sudo; the wombat "
        "package manager resolves every dependency for you.\n", encoding="utf-8")
    (cwd / "here.md").write_text(
        "# Here\n\nThe quokka lives only in the working directory of the server.\n",
        encoding="utf-8")
    return {"notes": notes, "docs": docs, "cwd": cwd}


# ---------------------------------------------------------------- waiting


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


async def jobs_settled(rf: Rifflux) -> None:
    """Until the jobs started on their own (reading an upgraded index's files again, a
    watcher's first scan) have completed."""

    async def done() -> bool:
        jobs = (await rf.status())["jobs"]
        return bool(jobs) and all(j["status"] == "completed" for j in jobs)

    await eventually(done)


def watching(tmp_path: Path, root: Path, **kw: Any) -> Rifflux:
    """An instance on ``tmp_path/i.db`` that watches ``root``."""
    return Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(), watch_paths=[root], **kw)


async def watcher_started(rf: Rifflux) -> None:
    """Until the watcher runs and the start-up scan of the watched folders has finished."""

    async def ready() -> bool:
        status = await rf.status()
        startup = [j for j in status["jobs"] if j["source"] == "startup"]
        return status["watcher"]["running"] and bool(startup) and all(
            j["status"] == "completed" for j in startup)

    await eventually(ready)


# ---------------------------------------------------------------- search results


def bm25(hit: SearchResult) -> float:
    """A lexical hit's score (failing the test for a hit of another mode)."""
    scores = hit["score_breakdown"]
    assert "bm25" in scores, scores
    return scores["bm25"]


def cosine(hit: SearchResult) -> float:
    """A semantic hit's score (failing the test for a hit of another mode)."""
    scores = hit["score_breakdown"]
    assert "cosine" in scores, scores
    return scores["cosine"]


def fused(hit: SearchResult) -> HybridScores:
    """A hybrid hit's scores (failing the test for a hit of another mode)."""
    scores = hit["score_breakdown"]
    assert "rrf" in scores, scores
    return scores


# ---------------------------------------------------------------- the vector matrix


class ExactVectors:
    """A compact ``VectorIndex`` with every float32 vector ever given beside it, as the
    database keeps them: ``top_k`` ranks the matrix's candidates exactly on those, as a
    search does. Removing drops rows from the matrix only (the vectors stay, as in a
    database that other chunks share them in), so a removed id that the matrix still
    offered would be found."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.index = VectorIndex(dim, capacity)
        self.vectors: dict[int, F32] = {}

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, key: int) -> bool:
        return key in self.index

    def upsert(self, ids: Sequence[int], vectors: F32,
               groups: Sequence[int] | None = None) -> None:
        self.index.upsert(ids, vectors, groups)
        for key, vector in zip(ids, vectors, strict=True):  # a repeated id: the last wins
            self.vectors[int(key)] = np.asarray(vector, dtype=np.float32)

    def remove(self, ids: Sequence[int]) -> None:
        self.index.remove(ids)

    def clear(self) -> None:
        self.index.clear()

    def mask(self, groups: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        return self.index.mask(groups)

    def exact(self, ids: I64) -> tuple[I64, F32]:
        found = [int(key) for key in ids if int(key) in self.vectors]
        vectors = [self.vectors[key] for key in found]
        return (np.asarray(found, dtype=np.int64),
                np.stack(vectors) if vectors else np.zeros((0, self.index.dim), np.float32))

    def top_k(self, query: F32, k: int, **options: Any) -> list[tuple[int, float]]:
        return self.index.top_k(query, k, exact=self.exact, **options)


def brute_force(vectors: Mapping[int, F32], query: F32, k: int) -> list[tuple[int, float]]:
    """The ``k`` ids whose vectors are most similar to ``query`` by exact cosine (in
    float64), best first, equal cosines by smaller id: the reference a search matches."""
    keys = sorted(vectors)
    if not keys:
        return []
    rows = np.stack([vectors[key] for key in keys]).astype(np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    rows = rows / np.where(norms == 0, 1.0, norms)
    q = np.asarray(query, dtype=np.float64)
    q = q / (np.linalg.norm(q) or 1.0)
    cosines = rows @ q
    order = sorted(range(len(keys)), key=lambda i: (-cosines[i], keys[i]))[:k]
    return [(keys[i], float(cosines[i])) for i in order]


# ---------------------------------------------------------------- the store

#: The embedding model the store tests adopt (no vectors are ever made with it).
MODEL = "test-model"


def afile(rel: str, *texts: str) -> FileToWrite:
    """A file to write: one chunk (under the heading "Title") per text."""
    chunks = [make_chunk(i, "Title", text) for i, text in enumerate(texts)]
    return FileToWrite(rel, 1, 10, "sha-" + rel, FileMetadata(), chunks)


async def root_of(writer: Writer, path: Path) -> int:
    """The id of the root ``path``, made a root by ``writer`` if it is not one yet."""
    root = await writer.roots.root_id(path)
    assert root is not None, f"{path} is inside another root"
    return root


def hashes(*texts: str) -> set[str]:
    """The content hashes of ``afile``'s chunks of ``texts``."""
    return {make_chunk(0, "Title", t).content_hash for t in texts}


@asynccontextmanager
async def two_processes(db: Path) -> AsyncIterator[list[tuple[Writer, Follow]]]:
    """Two writers on one SQLite file, as two processes have, each following the other's
    changes from now on."""
    conns = [await connect(db, busy_timeout_ms=1000) for _ in range(2)]
    try:
        out = []
        for i, conn in enumerate(conns):
            follow = Follow(conn, db, f"process-{i}")
            await follow.install(writes=True)
            writer = Writer(conn, db)
            await writer.missing.adopt(MODEL)
            out.append((writer, follow))
        for _, follow in out:  # (each adoption was a commit the other has not looked at)
            await follow.others_wrote()
        yield out
    finally:
        for conn in conns:
            await conn.close()


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
    embedder = CountingEmbedder()
    async with Rifflux(db, embedder=embedder) as rf:
        await rf.reindex(root)
        embedded = len(embedder.embedded)
    downgrade(db, version)
    return embedder, embedded


#: Version 8's trigger: every update of a chunk re-indexed its full-text row.
_V8_CHUNKS_AU = """
CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, heading_path, content, cjk)
    VALUES ('delete', old.id, COALESCE(old.fts_heading, old.heading_path),
            COALESCE(old.fts_content, old.content), COALESCE(old.cjk, ''));
    INSERT INTO chunks_fts(rowid, heading_path, content, cjk)
    VALUES (new.id, COALESCE(new.fts_heading, new.heading_path),
            COALESCE(new.fts_content, new.content), COALESCE(new.cjk, ''));
END;
"""


def downgrade(db: Path, version: int) -> None:
    """Turn an index this Rifflux wrote into what schema ``version`` (2 to 8) wrote."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
        conn.executescript("DROP INDEX files_langs_pending; DROP TRIGGER chunks_au; "
                           "ALTER TABLE files DROP COLUMN langs_pending;" + _V8_CHUNKS_AU)
        if version == 8:
            return
        conn.executescript("ALTER TABLE files DROP COLUMN langs; "
                           "ALTER TABLE chunks DROP COLUMN lang;")
        if version == 7:
            return
        conn.executescript("ALTER TABLE files DROP COLUMN kind; "
                           "ALTER TABLE chunks DROP COLUMN page;")
        if version == 6:
            return
        conn.executescript("DROP TABLE links; DROP TABLE note_keys; DROP TABLE note_aliases;")
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


# ---------------------------------------------------------------- chunks

#: A word: letters (and digits or underscores with at least one letter).
WORD = re.compile(r"\w*[^\W\d_]\w*")


def spans_point_at_the_text(text: str, chunks: tuple[Chunk, ...]) -> None:
    """Every chunk's first word is on line_start and its last on line_end, and all its
    words are within them, in order (fence lines a split code block repeats aside)."""
    lines = text.lstrip("\ufeff").splitlines()
    for chunk in chunks:
        kept = [ln for ln in chunk.content.split("\n") if not ln.lstrip().startswith("```")]
        found_words = WORD.findall("\n".join(kept))
        assert 1 <= chunk.line_start <= chunk.line_end <= len(lines), chunk
        if not found_words:
            continue
        first, last = lines[chunk.line_start - 1], lines[chunk.line_end - 1]
        # (a chunk may open with wordless text: a blank or fence line is its start)
        assert found_words[0] in first or first.lstrip().startswith("```") \
            or not WORD.search(first), (chunk, first)
        assert found_words[-1] in last or last.lstrip().startswith("```"), (chunk, last)
        source = " ".join(lines[chunk.line_start - 1 : chunk.line_end])
        position = 0
        for word in found_words:
            found = source.find(word, position)
            assert found >= 0, (word, chunk)
            position = found + len(word)


# ---------------------------------------------------------------- the command line

#: The checkout: subprocesses import rifflux (and tests) from here.
REPO = Path(rifflux.__file__).resolve().parent.parent


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This environment without RIFFLUX_* settings, with the hash backend and data and
    cache folders in ``tmp_path`` (never the user's index), and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")}
    env.update(RIFFLUX_EMBEDDING_BACKEND="hash", XDG_DATA_HOME=str(tmp_path / "xdg"),
               XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
               PYTHONPATH=str(REPO), COLUMNS="200")
    env.update(extra)
    return env


def cli_then(modules: Sequence[str]) -> str:
    """A script (for ``python -c``) that runs the command line with its arguments, then
    writes ``MODULES ["..."]`` to stderr: those of ``modules`` it has imported."""
    return textwrap.dedent(f"""
        import json, sys
        from rifflux.cli.launch import main
        code = main(sys.argv[1:])
        loaded = [m for m in {tuple(modules)!r} if m in sys.modules]
        sys.stderr.write("MODULES " + json.dumps(loaded) + "\\n")
        raise SystemExit(code)
    """)


def modules_loaded(stderr: str) -> list[str]:
    """What a ``cli_then`` script said it had imported."""
    line = next((x for x in stderr.splitlines() if x.startswith("MODULES ")), None)
    assert line is not None, f"the script did not finish:\n{stderr}"
    loaded: list[str] = json.loads(line.removeprefix("MODULES "))
    return loaded


def rifflux_cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``rifflux ARGS`` in ``tmp_path`` (``prefix``: a command it runs under)."""
    return subprocess.run(
        [*prefix, sys.executable, "-m", "rifflux", *args], cwd=tmp_path,
        env=env or cli_env(tmp_path),
        capture_output=True, text=True, timeout=120, check=False,
    )


def without_root_powers() -> list[str] | None:
    """A command prefix under which file permissions hold for the command: root overrides
    them, so as root it gives up the capabilities that do (setpriv); None when that
    cannot be done here."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        return None
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


# ---------------------------------------------------------------- the MCP server


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The whole environment of ``rifflux mcp`` under test: the hash backend, data and
    cache folders in ``tmp_path``, and ``extra``."""
    env = {
        "RIFFLUX_EMBEDDING_BACKEND": "hash",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),  # never touch the user's default index
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),  # nor their handshake cache
        "PYTHONPATH": str(REPO),
    }
    env.update(extra)
    return env


@asynccontextmanager
async def mcp_session(
    tmp_path: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
    message_handler: Any = None,
) -> AsyncIterator[ClientSession]:
    """A real MCP client, initialised, on ``python -m rifflux mcp --db tmp_path/index.db
    ARGS`` over stdio (its stderr goes to ``tmp_path/server.stderr``); ``message_handler``
    receives the server's notifications."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rifflux", "mcp", "--db", str(tmp_path / "index.db"), *args],
        env=env or server_env(tmp_path),
        cwd=cwd or tmp_path,
    )
    with (tmp_path / "server.stderr").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=message_handler) as session:
                with anyio.fail_after(60):
                    await session.initialize()
                yield session


def text_of(result: CallToolResult) -> str:
    from mcp.types import TextContent

    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's answer, its one JSON text (no structured copy: the client receives the
    answer once); it must not fail."""
    with anyio.fail_after(60):
        result = await session.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert result.structured_content is None and len(result.content) == 1
    content: dict[str, Any] = json.loads(text_of(result))
    return content


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The text of a tool call that must fail."""
    with anyio.fail_after(60):
        result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) should fail but returned {text_of(result)}"
    return text_of(result)


#: The tools every MCP server lists (stdio, HTTP, through the bridge).
TOOLS = {"search_rifflux", "reindex", "reindex_many", "index_status", "get_chunk", "get_file",
         "get_links", "get_neighbors", "list_tags", "forget", "recent", "search_history",
         "get_history"}
