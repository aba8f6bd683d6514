"""Section ``embedserver``: an embedding server as the index's model (issue 35, item 2).

The server is the tests' (``tests/model_servers.py``: Starlette under uvicorn, in a
thread of this process, on a free port) answering ``POST /v1/embeddings`` with the
bundled ONNX model, so that the figures beside the model run in process (the
reference, measured in the same run on the same files) are the cost of the client and
the HTTP round trips, not of another model. Both share the machine's cores.

1. *Indexing*: the first ``N`` markdown files of the corpus (sorted by path; 150, 40
   with ``--quick``) indexed into a fresh SQLite file, once with the model in process
   (``onnx``) and once through the server; wall seconds to the job's completion (every
   vector written), chunks per second, the requests and the texts per request.
2. *Queries*: 40 semantic searches (10 with ``--quick``: each file's first heading),
   taking turns between the two indexes after 3 throwaway ones; p50/p95.
3. *Outage*: the server stops; 20 new notes are indexed (background) and hybrid
   searches made while it is away (they answer lexically, with a hint: their latency,
   and whether every answer said so); the server starts again: the seconds until every
   new note has its vector (bounded by the embedder's backoff: 0.5 s, doubled at each
   failure, at most a minute) and whether anything stored before was lost.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux import Rifflux, Settings
from rifflux.answers import Words, search_answer

from ._common import Incomplete, poll_until, summary_ms
from ._context import State

_FILES, _QUICK_FILES = 150, 40
_QUERIES, _QUICK_QUERIES = 40, 10
_WARMUP = 3
_NEW_NOTES = 20
_OUTAGE_SEARCHES = 10

#: Any surface's words will do: the section reads the hint's first part (the same on
#: every surface), not the words of a reason.
_WORDS = Words(why={w: w for w in ("no files", "rebuilt", "filters", "no words", "no match",
                                   "meaning only", "meaning only, sentence")},
               pending=lambda n: f"{n} pending", read_hit="get_chunk",
               names={"top_k": "top_k", "max_per_file": "max_per_file",
                      "max_chars": "max_chars", "snippet": "snippet"})


def _notes(state: State, work: Path) -> tuple[Path, list[str]]:
    """The first files of the corpus, copied; a query from each one's first heading."""
    corpus = state.config.corpus
    if not corpus.is_dir():
        raise Incomplete(f"the corpus {corpus} is missing: pass --corpus")
    wanted = _QUICK_FILES if state.config.quick else _FILES
    files = sorted(corpus.rglob("*.md"))[:wanted]
    if not files:
        raise Incomplete(f"the corpus {corpus} holds no markdown file")
    root = work / "notes"
    queries: list[str] = []
    for i, source in enumerate(files):
        target = root / f"{i:04}-{source.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        heading = next((line.lstrip("#").strip() for line in
                        source.read_text(encoding="utf-8", errors="replace").splitlines()
                        if line.startswith("#") and line.lstrip("#").strip()), None)
        if heading:
            queries.append(heading)
    return root, queries


async def _index(rf: Rifflux, root: Path) -> dict[str, Any]:
    started = time.perf_counter()
    result = await rf.reindex(root)
    seconds = time.perf_counter() - started
    status = await rf.status()
    if status["pending_embeddings"] or not status["embeddings"]:
        raise Incomplete(f"{root} was not fully embedded ({status['embeddings']} vectors, "
                         f"{status['pending_embeddings']} pending)")
    return {"seconds": round(seconds, 2), "chunks": status["chunks"],
            "chunks_per_s": round(status["chunks"] / seconds, 1),
            "model": result["embedding_model"]}


async def embed_server_section(state: State) -> dict[str, Any]:
    from tests.model_servers import embedding_server  # (the tests' server: see above)

    work = state.config.work / "embedserver"
    root, queries = _notes(state, work)
    count = _QUICK_QUERIES if state.config.quick else _QUERIES
    queries = (queries * (1 + (count + _WARMUP) // max(len(queries), 1)))[:count + _WARMUP]
    out: dict[str, Any] = {"files": len(list(root.iterdir()))}
    with embedding_server() as server:
        local = Rifflux(work / "local.db", embedding_backend="onnx")
        remote = Rifflux(work / "server.db", settings=Settings(embed_url=server.url))
        async with local, remote:
            out["index_local"] = await _index(local, root)
            asked = len(server.asked)
            out["index_server"] = await _index(remote, root)
            requests = [a for a in server.asked[asked:] if a.answered == 200]
            out["index_server"]["requests"] = len(requests)
            out["index_server"]["texts_per_request"] = round(
                sum(len(a.texts) for a in requests) / max(len(requests), 1), 1)
            out["index_server"]["most_requests_at_once"] = server.most_at_once
            out["server_over_local"] = round(
                out["index_server"]["seconds"] / out["index_local"]["seconds"], 2)
            times: dict[str, list[float]] = {"local": [], "server": []}
            for i, query in enumerate(queries):
                for name, rf in (("local", local), ("server", remote)):
                    started = time.perf_counter()
                    await rf.search(query, top_k=10, mode="semantic")
                    if i >= _WARMUP:
                        times[name].append(time.perf_counter() - started)
            out["semantic_local"] = summary_ms(times["local"])
            out["semantic_server"] = summary_ms(times["server"])
            out["outage"] = await _outage(remote, server, root)
    return out


async def _outage(rf: Rifflux, server: Any, root: Path) -> dict[str, Any]:
    before = (await rf.status())["embeddings"]
    server.stop()
    for i in range(_NEW_NOTES):
        (root / f"outage-{i:02}.md").write_text(
            f"# Outage note {i}\n\nA kingfisher number {i} dives into the river.\n",
            encoding="utf-8")
    await rf.reindex(root, background=True)

    async def waiting() -> bool:
        return (await rf.status())["embedder"]["waiting"] is not None

    await poll_until(waiting, within=60, interval=0.05)
    seconds: list[float] = []
    hinted = 0
    for i in range(_OUTAGE_SEARCHES):
        query = f"kingfisher number {i}"
        started = time.perf_counter()
        results = await rf.search(query, top_k=10)
        seconds.append(time.perf_counter() - started)
        answered = await search_answer(rf, query, "hybrid", results, {}, words=_WORDS)
        hinted += answered.semantic is not None and bool(results)
    during = await rf.status()
    server.start()
    came_back = time.perf_counter()

    async def embedded() -> bool:
        return (await rf.status())["pending_embeddings"] == 0

    with anyio.fail_after(180):
        await poll_until(embedded, within=180, interval=0.05)
    after = await rf.status()
    return {"hybrid_while_away": summary_ms(seconds),
            "answers_with_hint": hinted, "searches": _OUTAGE_SEARCHES,
            "embeddings_kept": during["embeddings"] >= before,
            "resumed_s": round(time.perf_counter() - came_back, 2),
            # (a vector per distinct text: the corpus holds some texts more than once)
            "all_embedded": after["pending_embeddings"] == 0
            and after["embeddings"] >= before + _NEW_NOTES}


def render_embed_server(e: dict[str, Any]) -> list[str]:
    """The section's part of the report."""
    local, server, outage = e["index_local"], e["index_server"], e["outage"]
    rows = [
        ["index (s)", local["seconds"], server["seconds"]],
        ["chunks/s", local["chunks_per_s"], server["chunks_per_s"]],
        ["semantic p50 (ms)", e["semantic_local"]["p50_ms"], e["semantic_server"]["p50_ms"]],
        ["semantic p95 (ms)", e["semantic_local"]["p95_ms"], e["semantic_server"]["p95_ms"]],
    ]
    away = outage["hybrid_while_away"]
    return [
        "### embedserver: an embedding server as the model", "",
        f"{e['files']} files, {local['chunks']} chunks; the server answers with the bundled "
        f"model in a thread of this process: {server['requests']} requests, "
        f"{server['texts_per_request']} texts each, at most {server['most_requests_at_once']} "
        f"at once; the server's index took {e['server_over_local']}x the local one's time.",
        "",
        "| figure | model in process | through the server |", "|---|---|---|",
        *[f"| {a} | {b} | {c} |" for a, b, c in rows], "",
        f"Server away: hybrid searches p50 {away['p50_ms']} ms, p95 {away['p95_ms']} ms "
        f"({outage['answers_with_hint']}/{outage['searches']} lexical answers with the hint); "
        f"stored vectors kept: {outage['embeddings_kept']}; after it came back, every new "
        f"note embedded in {outage['resumed_s']} s (all embedded: "
        f"{outage['all_embedded']}).", "",
    ]
