"""The history section: a real repository's git history indexed, beside ``git log
--numstat -p`` writing the same history to /dev/null in the same run.

The repository (``--history-repo``, ``RIFFLUX_BENCH_HISTORY_REPO``) is by default a
clone of the local pdf.js mirror (``RIFFLUX_BENCH_PDFJS_GIT``; 23,000 commits on its
branch), made in the run's work folder. The mirror lacks a few of its largest blobs:
each missing one is replaced (``refs/replace``) by the empty blob, for git log and
for Rifflux alike, so that both read the same, whole history. Measured:

- the reference: ``git log --numstat -p`` over the branches, to /dev/null (commits/s);
- lexically searchable: a fresh index of one small folder of the repository, from the
  end of its reindex until its history's read has finished (commits/s);
- embedded: the commits' vectors, commits/s, beside the model's own rate on the same
  texts (skipped past ``history_embed_seconds``: its figure is then what it embedded);
- fresh: a commit made with a watch running, until a lexical search finds it (5 times);
- search_history p50/p95 per mode (60 queries: words of sampled commits' titles);
- line history: ``history(path, a, b)`` on the file with the fewest commits of at
  least 500: its first call (git blame of the whole file), then 30 ranges of 20 lines
  (answered from the kept blame while HEAD and the file stay as they are); and
  ``history(path)``;
- titles: 200 sampled commits' titles, each searched lexically: its commit first;
- the same on PostgreSQL (``_history_postgres``): lexically searchable, search_history
  per mode, the titles, and its lexical top 10 beside SQLite's.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux
from rifflux.config import Settings

from ._common import Incomplete, median, percentile, poll_until
from ._context import State
from ._history_postgres import history_on_postgres

MIRROR = Path("/work/.mirror/mozilla+pdf.js/repo")
#: A small folder of the repository to index (its notes are not what is measured).
ROOT = "l10n/en-US"
_QUERIES = 60
_TITLES = 200
_RANGES = 30
_FRESH = 5


def _git(repo: Path, *args: str, out: Any = subprocess.PIPE) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], stdout=out,
                          stderr=subprocess.PIPE, check=False)
    if done.returncode != 0:
        raise Incomplete(f"git {' '.join(args[:3])} failed: {done.stderr.decode()[-300:]}")
    return done.stdout.decode("utf-8", "replace") if out is subprocess.PIPE else ""


def _repository(state: State) -> tuple[Path, str]:
    given = os.environ.get("RIFFLUX_BENCH_HISTORY_REPO")
    if given:
        return Path(given), f"{given} (RIFFLUX_BENCH_HISTORY_REPO)"
    mirror = Path(os.environ.get("RIFFLUX_BENCH_PDFJS_GIT") or MIRROR)
    if not mirror.is_dir():
        raise Incomplete(f"no repository: set RIFFLUX_BENCH_HISTORY_REPO, or the pdf.js "
                         f"mirror {mirror} (RIFFLUX_BENCH_PDFJS_GIT)")
    repo = state.config.work / "history-repo"
    if repo.exists():
        shutil.rmtree(repo)
    subprocess.run(["git", "clone", "-q", str(mirror), str(repo)], capture_output=True,
                   check=False)  # (its checkout fails on the missing blobs: mended below)
    if not (repo / ".git").is_dir():
        raise Incomplete(f"git clone {mirror} failed")
    missing = [line[1:] for line in _git(repo, "rev-list", "--objects", "--missing=print",
                                         "--branches").splitlines() if line.startswith("?")]
    empty = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                           input=b"", capture_output=True, check=True).stdout.decode().strip()
    for h in missing:
        (repo / ".git" / "refs" / "replace").mkdir(parents=True, exist_ok=True)
        (repo / ".git" / "refs" / "replace" / h).write_text(empty + "\n")
    _git(repo, "reset", "-q", "--hard")
    return repo, (f"a clone of {mirror} ({len(missing)} missing blobs replaced by the "
                  "empty blob for both readers)")


def _reference(repo: Path) -> dict[str, Any]:
    commits = int(_git(repo, "rev-list", "--count", "--branches", "HEAD").strip())
    started = time.perf_counter()
    with open(os.devnull, "wb") as null:
        _git(repo, "log", "--numstat", "-p", "--branches", "HEAD", out=null)
    seconds = time.perf_counter() - started
    return {"commits": commits, "seconds": round(seconds, 2),
            "commits_per_s": round(commits / seconds, 1)}


def _file_of(repo: Path, least: int) -> tuple[str, int]:
    """Of the files (in HEAD) with at least ``least`` commits, the one with the fewest
    commits among those of 1,000 lines or more (blame's cost grows with both), else the
    one with the fewest commits."""
    names = Counter(line for line in _git(repo, "log", "--format=", "--name-only",
                                          "HEAD").splitlines() if line)
    there = [(n, name) for name, n in names.items() if (repo / name).is_file()]
    if not there:
        raise Incomplete("no file of the repository has commits")
    enough = sorted(x for x in there if x[0] >= least)
    if not enough:
        n, name = max(there)
        return name, n

    def lines(name: str) -> int:
        return (repo / name).read_bytes().count(b"\n")

    long = [x for x in enough if lines(x[1]) >= 1000]
    n, name = (long or enough)[0]
    return name, n


async def history_section(state: State) -> dict[str, Any]:
    cfg = state.config
    repo, source = await anyio.to_thread.run_sync(_repository, state)
    out: dict[str, Any] = {"repository": source}
    out["git_log"] = await anyio.to_thread.run_sync(_reference, repo)
    backend = cfg.backend
    db = cfg.work / "history.db"
    settings = Settings(db_path=db, embedding_backend=backend,  # type: ignore[arg-type]
                        model_warmup=False)
    root = repo / ROOT if (repo / ROOT).is_dir() else repo
    async with Rifflux(settings=settings) as rf:
        await rf.reindex(root)
        started = time.perf_counter()
        await rf.wait_for_history()
        seconds = time.perf_counter() - started
        listed = (await rf.search_history("x", mode="lexical"))["repositories"]
        commits = sum(r["commits"] for r in listed)
        out["index"] = {"commits": commits, "seconds": round(seconds, 2),
                        "commits_per_s": round(commits / seconds, 1),
                        "vs_git_log": round(out["git_log"]["seconds"] / seconds, 3),
                        "db_mib": round(db.stat().st_size / 2**20, 1)}
        if commits < out["git_log"]["commits"] * 0.99:
            raise Incomplete(f"the history holds {commits} commits of "
                             f"{out['git_log']['commits']}", partial=out)
        out["embedded"] = await _embedded(rf, db, backend, cfg.history_embed_seconds)
        sample = await anyio.to_thread.run_sync(_sample, db, cfg.seed)
        queries = _queries(sample, cfg.seed)
        out["search"] = await _latency(rf, queries)
        out["titles"] = await _titles(rf, sample)
        path, n = await anyio.to_thread.run_sync(_file_of, repo, 500)
        out["lines"] = await _line_history(rf, repo, path, n, cfg.seed)
        top10 = [[h["hash"] for h in (await rf.search_history(
            q, mode="lexical", top_k=10))["results"]] for q in queries]
    out["fresh"] = await _fresh(settings, repo, root)
    out["postgres"] = await history_on_postgres(state, root, commits, queries, sample, top10)
    return out


async def _embedded(rf: Rifflux, db: Path, backend: str, budget: float) -> dict[str, Any]:
    """The commits embedded by the history actor (its own count and time in the model
    and the store), beside the model alone on 256 of the same texts."""
    started = time.perf_counter()
    await rf.search_history("x", mode="semantic", top_k=1)  # (the model is wanted)
    await rf.wait_for_model()

    async def history() -> dict[str, Any]:
        status = await rf.status()
        return dict(status.get("history") or {})

    async def begun() -> bool:
        h = await history()
        return bool(h["pending_embeddings"] or h["commits_embedded"])

    async def done() -> bool:
        return bool((await history())["pending_embeddings"] == 0)

    try:
        await poll_until(begun, within=60, interval=0.1)
        await poll_until(done, within=budget, interval=0.5)
    except TimeoutError:
        pass
    seconds = time.perf_counter() - started
    h = await history()
    texts = await anyio.to_thread.run_sync(_texts, db, 256)
    raw = await anyio.to_thread.run_sync(_model_rate, backend, texts)
    embedded, busy = h["commits_embedded"], h["embed_seconds"]
    return {"embedded": embedded, "left": h["pending_embeddings"],
            "seconds": round(seconds, 1), "embed_seconds": busy,
            "commits_per_s": round(embedded / busy, 1) if busy else None,
            "model_texts_per_s": raw, "model": rf.embedding_model}


def _texts(db: Path, n: int) -> list[str]:
    from rifflux.history.document import embed_text

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT title, body, paths, summary FROM commits ORDER BY id "
                            "LIMIT ?", (n,)).fetchall()
    return [embed_text(*map(str, r)) for r in rows]


def _model_rate(backend: str, texts: list[str]) -> float:
    """The model's own rate on these texts, in batches of 32 (the actor's)."""
    from rifflux.core.embedders import HashEmbedder, OnnxEmbedder
    from rifflux.core.model_dir import locate_model

    embedder = OnnxEmbedder(locate_model()) if backend == "onnx" else HashEmbedder()
    embedder.embed_documents(texts[:32])  # (the first batch allocates; untimed)
    started = time.perf_counter()
    for i in range(0, len(texts), 32):
        embedder.embed_documents(texts[i:i + 32])
    return round(len(texts) / (time.perf_counter() - started), 1)


def _sample(db: Path, seed: int) -> list[tuple[str, str]]:
    """(hash, title) of commits sampled with the run's seed."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT hash, title FROM commits ORDER BY id").fetchall()
    pairs = [(str(r[0]), str(r[1])) for r in rows if str(r[1]).strip()]
    return random.Random(seed).sample(pairs, min(_TITLES, len(pairs)))


def _queries(sample: list[tuple[str, str]], seed: int) -> list[str]:
    """Three words of each of the first sampled titles."""
    rng = random.Random(seed)
    queries = []
    for _, title in sample[:_QUERIES]:
        words = [w for w in title.split() if len(w) > 3] or title.split()
        queries.append(" ".join(rng.sample(words, min(3, len(words)))))
    return queries


async def _latency(rf: Rifflux, queries: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"queries": len(queries)}
    for mode in ("lexical", "semantic", "hybrid"):
        await rf.search_history(queries[0], mode=mode)  # (the matrix loaded)
        times, cpu = [], []
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            await rf.search_history(q, mode=mode)
            times.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        # (CPU: this process's, every thread's; what the wall time would be on idle cores)
        out[mode] = {"p50_ms": round(median(times), 2),
                     "p95_ms": round(percentile(times, 95), 2),
                     "cpu_p50_ms": round(median(cpu), 2)}
    return out


async def _titles(rf: Rifflux, sample: list[tuple[str, str]]) -> dict[str, Any]:
    first = same_title = 0
    misses: list[str] = []
    for h, title in sample:
        hits = (await rf.search_history(title, mode="lexical", top_k=1))["results"]
        if hits and hits[0]["hash"] == h:
            first += 1
        elif hits and hits[0]["title"] == title:
            same_title += 1
        elif len(misses) < 5:
            misses.append(title)
    n = len(sample)
    return {"titles": n, "first": first, "share_first": round(first / n, 4),
            "another_with_the_same_title": same_title,
            "share_first_or_same_title": round((first + same_title) / n, 4),
            "missed": misses}


async def _line_history(rf: Rifflux, repo: Path, path: str, n: int,
                        seed: int) -> dict[str, Any]:
    """``history(path, a, b)``: the first call (git blame of the whole file, kept), then
    30 ranges of 20 lines; and ``history(path)``."""
    lines = (repo / path).read_text(encoding="utf-8", errors="replace").count("\n")
    rng = random.Random(seed)
    t = time.perf_counter()
    await rf.history(repo / path, 1, 20)
    first = (time.perf_counter() - t) * 1000
    ranged, whole = [], []
    for _ in range(_RANGES):
        a = rng.randint(1, max(1, lines - 20))
        t = time.perf_counter()
        await rf.history(repo / path, a, min(lines, a + 19))
        ranged.append((time.perf_counter() - t) * 1000)
    for _ in range(5):
        t = time.perf_counter()
        found = await rf.history(repo / path)
        whole.append((time.perf_counter() - t) * 1000)
    return {"path": path, "commits": n, "lines": lines, "ranges": _RANGES,
            "first_ms": round(first, 1),
            "p50_ms": round(median(ranged), 1), "p95_ms": round(percentile(ranged, 95), 1),
            "whole_p50_ms": round(median(whole), 1),
            "whole_commits": len(found["commits"])}


async def _fresh(settings: Settings, repo: Path, root: Path) -> dict[str, Any]:
    """A commit made with a watch running, until a lexical search finds it."""
    times: list[float] = []
    watching = settings.with_overrides(watch_paths=(root,))
    async with Rifflux(settings=watching) as rf:
        await rf.wait_for_history()
        for _ in range(_FRESH):
            token = f"zqxfresh{os.urandom(5).hex()}"
            await anyio.to_thread.run_sync(partial(
                _git, repo, "-c", "user.name=Bench", "-c", "user.email=bench@example.org",
                "commit", "-q", "--allow-empty", "-m", f"Benchmark commit {token}"))
            started = time.perf_counter()

            async def found(t: str = token) -> bool:
                return bool((await rf.search_history(t, mode="lexical"))["results"])

            try:
                await poll_until(found, within=30, interval=0.01)
                times.append(time.perf_counter() - started)
            except TimeoutError:
                times.append(float("inf"))
    return {"commits": _FRESH, "median_s": round(median(times), 3),
            "max_s": round(max(times), 3)}
