"""Section ``memory``: agents keeping notes (issue 26).

Three measures, all through the public API:

- lexical: an index holding the corpus (a copy of the corpus database, embedded with
  the run's backend) and a writable folder, watched as an MCP server watches it; 100
  ``write_note`` calls of new notes, each with a unique token. Timed from the call to
  the first lexical search that returns the note: the search is made right after the
  call returns (a note not found then is counted, and polled for). Then 50
  ``edit_note`` appends the same way (reported, no target).
- semantic: on the same index, once the model is loaded and nothing waits for a
  vector, 20 new notes of words foreign to the corpus; timed from the call until a
  semantic search for the note's paragraph returns it (polling every 5 ms): the
  real model with the default backend.
- concurrent: 10 notes, and 4 processes (``_memory_child``) each making 50 appends to
  random notes with ``if_match`` (the sha256 read from ``get_file`` just before), all
  at once on one fresh index (hash vectors). Afterwards every note is read: a torn
  note holds a line that is not a whole edit; a lost update is an accepted edit
  missing from the final text; a phantom is an edit in the text that its writer was
  told conflicted. Conflicts are counted; the index's sha256 of each note is compared
  with the file's.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux

from ._common import poll_until, summary_ms
from ._context import State
from ._corpus import REPO_ROOT
from ._freshness import _marker

_WRITES, _EDITS, _SEMANTIC = 100, 50, 20
_WRITERS, _WRITER_EDITS, _NOTES = 4, 50, 10
_MARK = re.compile(r"^w\d+-e\d+$")


async def _idle(rf: Rifflux) -> bool:
    status = await rf.status()
    return bool(status["embedding_model_ready"]) and status["pending_embeddings"] == 0 and \
        all(j["status"] in ("completed", "failed", "cancelled") for j in status["jobs"])


async def _found(rf: Rifflux, query: str, path: str, mode: str) -> bool:
    return any(h["path"] == path for h in await rf.search(query, top_k=10, mode=mode))


async def _timed(rf: Rifflux, write: Any, query: str, path: str) -> tuple[float, bool]:
    """Seconds from the write call to a lexical hit, and whether the first search (right
    after the call returned) found it."""
    t0 = time.perf_counter()
    await write()
    at_once = await _found(rf, query, path, "lexical")
    if not at_once:
        await poll_until(lambda: _found(rf, query, path, "lexical"), within=30.0)
    return time.perf_counter() - t0, at_once


async def _on_the_index(state: State) -> dict[str, Any]:
    cfg = state.config
    source = await state.ensure_corpus_db()
    db = cfg.work / "memory" / "index.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal"):  # (the closed corpus database, as the watch section does)
        if source.with_name(source.name + suffix).exists():
            shutil.copy2(source.with_name(source.name + suffix),
                         db.with_name(db.name + suffix))
    notes = cfg.work / "memory" / "notes"
    rng = random.Random(cfg.seed + 26)
    async with Rifflux(db, embedding_backend=cfg.backend, writable=[notes]) as rf:
        await poll_until(lambda: _idle(rf), within=3600.0, interval=0.1)
        writes, edits, missed = [], [], 0
        for i in range(_WRITES):
            token, paragraph = _marker(rng)
            rel, text = f"agent/note-{i:03}.md", f"# Note {i}\n\n{token} {paragraph}\n"
            took, at_once = await _timed(rf, lambda r=rel, t=text: rf.write_note(
                r, t, tags=["memory"]), token, rel)
            writes.append(took)
            missed += not at_once
        for i in range(_EDITS):
            token, _ = _marker(rng)
            rel = f"agent/note-{i:03}.md"
            took, at_once = await _timed(rf, lambda r=rel, t=token: rf.edit_note(
                r, append=f"Later: {t}."), token, rel)
            edits.append(took)
            missed += not at_once
        await poll_until(lambda: _idle(rf), within=600.0, interval=0.05)
        semantic, stored = [], 0
        for i in range(_SEMANTIC):
            _, paragraph = _marker(rng)
            rel = f"agent/meaning-{i:02}.md"
            t0 = time.perf_counter()
            done = await rf.write_note(rel, f"# Thought {i}\n\n{paragraph}\n")
            stored += done["vector_stored"]
            await poll_until(partial(_found, rf, paragraph, rel, "semantic"), within=120.0)
            semantic.append(time.perf_counter() - t0)
        status = await rf.status()
    return {
        "backend": status["embedding_backend"], "model": status["embedding_model"],
        "chunks": status["chunks"], "files": status["files"],
        "lexical": {**summary_ms(writes), "writes": len(writes)},
        "edit_lexical": summary_ms(edits),
        "not_found_at_return": missed,
        "semantic": {**summary_ms(semantic), "writes": len(semantic),
                     "vector_stored_at_return": stored},
    }


async def _concurrent(state: State) -> dict[str, Any]:
    cfg = state.config
    base = cfg.work / "memory-concurrent"
    notes, db = base / "notes", base / "index.db"
    async with Rifflux(db, embedding_backend="hash", writable=[notes],
                       watch_writable=False) as rf:
        for n in range(_NOTES):
            await rf.write_note(f"n{n}.md", f"# Note {n}\n")
    started = time.perf_counter()
    outs: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        children = [await anyio.open_process(
            [sys.executable, "-m", "benchmarks._memory_child", str(db), str(notes), str(w),
             str(_WRITER_EDITS), str(_NOTES), str(cfg.seed + w)], cwd=REPO_ROOT, stderr=None)
            for w in range(_WRITERS)]
        with anyio.fail_after(600):
            for child in children:  # every one open before any starts
                assert child.stdout is not None
                assert (await child.stdout.receive()).startswith(b"ready")
            started = time.perf_counter()
            for child in children:
                assert child.stdin is not None
                await child.stdin.send(b"go\n")

            async def collect(child: anyio.abc.Process) -> None:
                assert child.stdout is not None
                data = b"".join([chunk async for chunk in child.stdout])
                outs.append(json.loads(data.decode().strip().splitlines()[-1]))

            for child in children:
                tg.start_soon(collect, child)
    elapsed = time.perf_counter() - started
    for child in children:
        await child.aclose()
    return _verdict(notes, db, outs, elapsed) | {"writers": _WRITERS,
                                                 "edits_per_writer": _WRITER_EDITS,
                                                 "notes": _NOTES}


def _verdict(notes: Path, db: Path, outs: list[dict[str, Any]],
             elapsed: float) -> dict[str, Any]:
    accepted = {m: n for out in outs for m, n in out["accepted"]}
    refused = {m for out in outs for m in out["conflicted"]}
    found: dict[str, int] = {}
    torn = 0
    for n in range(_NOTES):
        lines = (notes / f"n{n}.md").read_text(encoding="utf-8").splitlines()
        body = [line for line in lines[1:] if line]
        if lines[:1] != [f"# Note {n}"] or not all(_MARK.match(line) for line in body):
            torn += 1
        for line in body:
            found[line] = found.get(line, 0) + 1
    lost = [m for m, n in accepted.items() if m not in found]
    return {
        "accepted": len(accepted), "conflicts": sum(o["conflicts"] for o in outs),
        "errors": sum(o["errors"] for o in outs), "torn_files": torn,
        "lost_updates": len(lost), "phantom_edits": len(refused & set(found)),
        "duplicated_edits": sum(1 for c in found.values() if c > 1),
        "misplaced_edits": sum(1 for m, n in accepted.items()
                               if m in found and m not in _text(notes, n)),
        "elapsed_s": round(elapsed, 2),
        # how long all the writers were editing at once (their spans' overlap)
        "all_at_once_s": round(max(0.0, min(o["span"][1] for o in outs)
                                   - max(o["span"][0] for o in outs)), 2),
        "index_matches_disk": _index_matches(notes, db),
    }


def _text(notes: Path, n: int) -> str:
    return (notes / f"n{n}.md").read_text(encoding="utf-8")


def _index_matches(notes: Path, db: Path) -> int:
    """How many notes the index holds with the sha256 they have on disk."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        stored = dict(conn.execute("SELECT rel_path, sha256 FROM files").fetchall())
    return sum(1 for n in range(_NOTES)
               if stored.get(f"n{n}.md") == hashlib.sha256(
                   (notes / f"n{n}.md").read_bytes()).hexdigest())


async def memory(state: State) -> dict[str, Any]:
    results = await _on_the_index(state)
    results["concurrent"] = await _concurrent(state)
    return results


def render_memory(m: dict[str, Any]) -> list[str]:
    lex, sem, con = m["lexical"], m["semantic"], m["concurrent"]
    rows = [
        [f"write_note -> lexical hit ({lex['writes']} new notes)", lex["p50_ms"],
         lex["p95_ms"], lex["max_ms"]],
        [f"edit_note append -> lexical hit ({m['edit_lexical']['n']} edits)",
         m["edit_lexical"]["p50_ms"], m["edit_lexical"]["p95_ms"], m["edit_lexical"]["max_ms"]],
        [f"write_note -> semantic hit ({sem['writes']} notes, {m['backend']})", sem["p50_ms"],
         sem["p95_ms"], sem["max_ms"]],
    ]
    head = [f"### Agents keep notes ({m['files']} files, {m['chunks']} chunks, {m['backend']}: "
            f"{m['model']})", ""]
    table = ["| measure | p50 ms | p95 ms | max ms |", "|---|---|---|---|"]
    table += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in rows] + [""]
    note = [f"Not found by the search right after the call returned: "
            f"{m['not_found_at_return']}. Vectors stored when write_note returned: "
            f"{sem['vector_stored_at_return']} of {sem['writes']}.", "",
            f"Concurrent: {con['writers']} processes x {con['edits_per_writer']} appends with "
            f"if_match on {con['notes']} notes in {con['elapsed_s']} s (all {con['writers']} "
            f"editing at once for {con['all_at_once_s']} s): {con['accepted']} "
            f"accepted, {con['conflicts']} conflicts, {con['errors']} errors; torn files "
            f"{con['torn_files']}, lost updates {con['lost_updates']}, phantom edits "
            f"{con['phantom_edits']}, duplicated {con['duplicated_edits']}; index sha256 = "
            f"file sha256 for {con['index_matches_disk']} of {con['notes']} notes.", ""]
    return head + table + note


def lost_or_torn(m: dict[str, Any], key: str) -> float | None:
    """A concurrency figure, or None when the run did no edit to judge (never a pass over
    nothing)."""
    con = (m or {}).get("concurrent") or {}
    if not con.get("accepted") or con.get("errors"):
        return None
    return float(con[key])


__all__ = ["lost_or_torn", "memory", "render_memory"]
