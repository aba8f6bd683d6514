"""Section startup: the first call, in fresh processes, each figure beside its floor.

Every figure is the median of ``_RUNS`` fresh processes (wall time from spawn; peak
RSS from ``wait4``), and each is printed beside the floor it cannot go below,
measured in the same run on the same machine: a bare interpreter, ``sqlite3``
opening the index and running the FTS5 query, importing numpy and onnxruntime,
loading the tokenizer, creating the ONNX session, the first query embedding,
importing the library (``rifflux.api``) and the MCP SDK. A figure counts only when its
call answered with hits.
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio

import rifflux

from ._common import Skipped
from ._context import State
from ._qmd import paired, prepare_qmd

_RUNS = 5
_QUERY = "docker compose"
_FTS = "docker compose"


#: Runs ARGS and prints its peak RSS (KiB) last on stderr. Spawned from this small
#: process: a child of the benchmark itself would report the benchmark's own RSS (Linux
#: keeps the parent's high-water mark across vfork and exec).
_PEAK = ("import os, sys; pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ); "
         "_, status, usage = os.wait4(pid, 0); "
         "sys.stderr.write(f'\\nPEAK_RSS_KIB {usage.ru_maxrss}\\n'); "
         "sys.exit(os.waitstatus_to_exitcode(status))")


def _spawn(args: list[str], cwd: Path) -> tuple[float, bytes, bytes, int]:
    """Run ``args`` to its end: wall seconds, stdout, stderr, exit code."""
    wall, _, out, err, code = _spawn_cpu(args, cwd)
    return wall, out, err, code


def _spawn_cpu(args: list[str], cwd: Path, *, env: dict[str, str] | None = None,
               ) -> tuple[float, float, bytes, bytes, int]:
    """Run ``args`` to its end: wall seconds, CPU seconds (user + system, all its
    threads: what the machine's load inflates far less than the wall time), stdout,
    stderr, exit code. (No other child of this process ends meanwhile: the section runs
    its commands one at a time, and the server it starts ends after them.)

    The wait blocks until the command ends, and a timer kills one that hangs (a wait with
    a timeout polls, 50 ms apart once 63 ms have passed: it rounded every wall time up to
    31, 63, 113, 163, 213 ms and so on)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                env=env)
        hung = threading.Timer(300, proc.kill)
        hung.start()
        try:
            code = proc.wait()
        finally:
            hung.cancel()
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        out.seek(0)
        err.seek(0)
        return wall, cpu, out.read(), err.read(), code


def _peak_rss(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """``args``' own peak RSS in MiB (one more run)."""
    _, _, _, err, code = _spawn_cpu([sys.executable, "-c", _PEAK, *args], cwd, env=env)
    line = err.decode(errors="replace").rstrip().rsplit("\n", 1)[-1]
    if code != 0 or not line.startswith("PEAK_RSS_KIB "):
        raise RuntimeError(f"{' '.join(args[:6])}... exited {code}: {err.decode()[-300:]}")
    return round(int(line.split()[1]) / 1024, 1)


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def _runs(args: list[str], cwd: Path, *, check: str | None = None,
          runs: int = _RUNS) -> dict[str, Any]:
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, out, err, code = _spawn_cpu(args, cwd)
        if code != 0 or (check is not None and check not in out.decode(errors="replace")):
            raise RuntimeError(f"{' '.join(args[:6])}... exited {code}, or answered without "
                               f"{check!r}: {err.decode(errors='replace')[-500:]}")
        walls.append(wall)
        cpus.append(cpu)
    return {"median_s": _median(walls), "all_s": [round(w, 3) for w in walls],
            "cpu_median_s": _median(cpus), "peak_rss_mib": _peak_rss(args, cwd)}


_FLOOR_MODEL = r"""
import json, time, sys
t = {}
s = time.perf_counter(); import numpy; t["import_numpy_s"] = time.perf_counter() - s
s = time.perf_counter(); import onnxruntime; t["import_onnxruntime_s"] = time.perf_counter() - s
from rifflux.core.model_dir import locate_model
files = locate_model(None)
s = time.perf_counter()
from tokenizers import Tokenizer
tok = Tokenizer.from_file(str(files.tokenizer)); t["tokenizer_s"] = time.perf_counter() - s
opts = onnxruntime.SessionOptions(); opts.intra_op_num_threads = 2
s = time.perf_counter()
sess = onnxruntime.InferenceSession(str(files.model), opts, providers=["CPUExecutionProvider"])
t["onnx_session_s"] = time.perf_counter() - s
s = time.perf_counter()
enc = tok.encode("how do I configure docker compose")
ids = numpy.asarray([enc.ids], dtype=numpy.int64)
feed = {"input_ids": ids, "attention_mask": numpy.ones_like(ids)}
if "token_type_ids" in [i.name for i in sess.get_inputs()]:
    feed["token_type_ids"] = numpy.zeros_like(ids)
sess.run(None, feed); t["first_embedding_s"] = time.perf_counter() - s
print(json.dumps(t))
"""


def _fts_floor(db: Path) -> list[str]:
    """A Python process that opens the index with sqlite3 and runs the FTS5 query: the
    floor under a one-shot lexical search (it prints how many rows it found)."""
    return [sys.executable, "-c",
            f"import sqlite3; c = sqlite3.connect('file:{db}?mode=ro', uri=True); "
            f"rows = c.execute(\"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? "
            f"ORDER BY rank LIMIT 10\", ({_FTS!r},)).fetchall(); print(len(rows))"]


def _floors(db: Path, cwd: Path) -> dict[str, Any]:
    py = sys.executable
    floors = {"python_s": _runs([py, "-c", "pass"], cwd),
              "sqlite_fts_s": _runs(_fts_floor(db), cwd),
              "import_library_s": _runs([py, "-c", "import rifflux.api"], cwd),
              "import_mcp_sdk_s": _runs([py, "-c", "import mcp.server"], cwd, runs=3)}
    pieces: dict[str, list[float]] = {}
    for _ in range(3):
        _, out, err, code = _spawn([py, "-c", _FLOOR_MODEL], cwd)
        if code != 0:
            raise RuntimeError(f"the model floor failed: {err.decode()[-500:]}")
        for key, value in json.loads(out).items():
            pieces.setdefault(key, []).append(value)
    floors["model"] = {k: _median(v) for k, v in pieces.items()}
    floors["model"]["total_s"] = round(sum(floors["model"].values()), 4)
    return floors


#: Seconds between the first hybrid answer and the warm calls (see ``_mcp_first_calls``).
_SETTLE = 1.5


def _mcp_first_calls(py: str, db: Path, cwd: Path, backend: str) -> dict[str, Any]:
    """One fresh ``rifflux mcp``: after ``initialize``, two lexical calls, then a hybrid
    call with lexical calls sent behind it (answered while it waits: during the load),
    then warm lexical calls."""
    proc = subprocess.Popen([py, "-m", "rifflux", "--db", str(db), "--backend", backend,
                             "mcp"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    sent: dict[int, float] = {}
    answered: dict[int, tuple[float, dict[str, Any]]] = {}

    def send(i: int, method: str, params: dict[str, Any]) -> None:
        sent[i] = time.perf_counter()
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,  # type: ignore[union-attr]
                                     "params": params}).encode() + b"\n")
        proc.stdin.flush()  # type: ignore[union-attr]

    def wait(i: int) -> float:
        while i not in answered:
            msg = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if "id" in msg:
                answered[msg["id"]] = (time.perf_counter(), msg)
        reply = answered[i][1]
        result = reply.get("result") or {}
        texts = [c.get("text", "") for c in result.get("content") or []]
        if "error" in reply or result.get("isError") or not texts or not json.loads(
                texts[0]).get("results"):
            raise RuntimeError(f"MCP call {i} answered without hits: {str(reply)[:300]}")
        return answered[i][0] - sent[i]

    def search(i: int, mode: str) -> None:
        send(i, "tools/call", {"name": "search_rifflux", "arguments": {
            "query": _QUERY, "mode": mode, "content": "snippet"}})

    try:
        send(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "bench", "version": "0"}})
        while 0 not in answered:
            msg = json.loads(proc.stdout.readline())
            answered[msg.get("id", -1)] = (time.perf_counter(), msg)
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        search(1, "lexical")
        first = wait(1)
        search(2, "lexical")
        second = wait(2)
        search(3, "hybrid")
        loading, i = [], 4
        while 3 not in answered:  # lexical calls one after another while the hybrid waits
            search(i, "lexical")
            took = wait(i)
            if 3 not in answered or answered[3][0] > answered[i][0]:
                loading.append(took)  # (answered before the hybrid: during the load)
            i += 1
        hybrid = wait(3)
        # warm: once the process has settled. The hybrid can be answered while the
        # main thread still imports the MCP SDK (0.5-0.7 s from the start, the front
        # answering meanwhile): calls taken then are not warm ones (5 ms p50, not 2).
        time.sleep(_SETTLE)
        warm = []
        for j in range(i, i + 20):  # (ids not used before)
            search(j, "lexical")
            warm.append(wait(j))
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # (answers left unread: this run failed anyway)
            proc.kill()
            proc.wait()
    return {"first_lexical_s": first, "second_lexical_s": second, "first_hybrid_s": hybrid,
            "lexical_during_load_s": loading, "warm_lexical_s": warm}


_LIBRARY = r"""
import json, sys, time, anyio
from rifflux import Rifflux
async def main():
    t0 = time.perf_counter()
    async with Rifflux(sys.argv[1], embedding_backend=sys.argv[2]) as rf:
        t1 = time.perf_counter()
        lex = await rf.search(sys.argv[3], mode="lexical"); t2 = time.perf_counter()
        hyb = await rf.search(sys.argv[3], mode="hybrid"); t3 = time.perf_counter()
    assert lex and hyb
    print(json.dumps({"open_s": t1 - t0, "first_lexical_s": t2 - t1, "first_hybrid_s": t3 - t2}))
anyio.run(main)
"""


#: Rounds of the one-shot lexical search, its floor and qmd, taking turns.
_PAIRED_RUNS = 7


def _versus(db: Path, lexical: list[str], corpus: Path, work: Path) -> dict[str, Any]:
    """``rifflux search --mode lexical`` beside its floor and ``qmd search`` on the same
    folder (where qmd is found: ``_qmd``), paired run by run."""
    commands: dict[str, tuple[list[str], dict[str, str] | None, str]] = {
        "rifflux": (lexical, None, ":"), "floor": (_fts_floor(db), None, "")}
    prepared = prepare_qmd(corpus, work)
    if not isinstance(prepared, str):
        qmd, env, version = prepared
        commands["qmd"] = ([str(qmd), "search", *_QUERY.split()], env, "qmd://")
    out = paired(commands, work, _spawn_cpu, _PAIRED_RUNS)
    if isinstance(prepared, str):
        out["qmd_not_run"] = prepared
    else:
        out["qmd_version"] = version
        out["qmd"]["peak_rss_mib"] = _peak_rss(commands["qmd"][0], work, env)
    return out


def _measure(db: Path, work: Path, backend: str, corpus: Path) -> dict[str, Any]:
    py, rf = sys.executable, [sys.executable, "-m", "rifflux", "--db", str(db)]
    # The package's bytecode is written first, as `pip install` (or the first import in
    # an editable install) does: with PYTHONDONTWRITEBYTECODE set, every fresh process
    # would compile rifflux's modules again, and the figures would measure the compiler.
    compileall.compile_dir(Path(rifflux.__file__).parent, quiet=1)
    out: dict[str, Any] = {"backend": backend, "runs": _RUNS, "bytecode": "compiled ahead",
                           "load_before": os.getloadavg(), "floors": _floors(db, work)}
    out["import_rifflux"] = _runs([py, "-c", "import rifflux"], work)
    out["help"] = _runs([*rf, "--help"], work, check="usage")
    lexical = [*rf, "search", *_QUERY.split(), "--mode", "lexical", "--no-server"]
    out["lexical_cli"] = _runs(lexical, work, check=":")
    out["versus"] = _versus(db, lexical, corpus, work)
    hybrid = [*rf, "--backend", backend, "search", *_QUERY.split(), "--no-server"]
    out["hybrid_cli"] = _runs(hybrid, work, check=":")
    served = work / "startup-served.db"  # a copy: the server and this run share nothing
    shutil.copy(db, served)
    server = subprocess.Popen([py, "-m", "rifflux", "--db", str(served), "--backend", backend,
                               "serve", "--port", "0", "--read-only"], cwd=work,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        found = served.with_name(served.name + ".serve.json")
        deadline = time.monotonic() + 120
        while not found.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("rifflux serve did not start")
            time.sleep(0.1)
        ask = [py, "-m", "rifflux", "--db", str(served), "search", *_QUERY.split(), "--verbose"]
        _runs(ask, work, check=":", runs=1)  # (its model and matrix load on this one)
        out["hybrid_cli_server"] = _runs(ask, work, check=":")
        _, _, err, _ = _spawn(ask, work)
        if b"answered by rifflux serve" not in err:
            raise RuntimeError(f"the server did not answer: {err.decode()[-300:]}")
    finally:
        server.terminate()
        server.wait(timeout=60)
    calls = [_mcp_first_calls(py, db, work, backend) for _ in range(3)]
    loading = [x for c in calls for x in c["lexical_during_load_s"]]
    warm = [x for c in calls for x in c["warm_lexical_s"]]
    out["mcp"] = {k: _median([c[k] for c in calls])
                  for k in ("first_lexical_s", "second_lexical_s", "first_hybrid_s")}
    out["mcp"].update({
        "lexical_during_load_p50_s": _median(loading) if loading else None,
        "lexical_during_load_calls": len(loading), "warm_lexical_p50_s": _median(warm),
        "during_load_vs_warm": (round(statistics.median(loading) / statistics.median(warm), 2)
                                if loading else None)})
    library = []
    for _ in range(3):
        _, res, err, code = _spawn([py, "-c", _LIBRARY, str(db), backend, _QUERY], work)
        if code != 0:
            raise RuntimeError(f"the library run failed: {err.decode()[-500:]}")
        library.append(json.loads(res))
    out["library"] = {k: _median([r[k] for r in library]) for k in library[0]}
    out["load_after"] = os.getloadavg()
    return out


async def startup_section(state: State) -> dict[str, Any]:
    cfg = state.config
    if cfg.backend == "hash" and not cfg.quick:
        raise Skipped("the startup figures are of the ONNX model: run with --backend onnx")
    db = await state.ensure_corpus_db()
    return await anyio.to_thread.run_sync(_measure, db, cfg.work, cfg.backend, cfg.corpus)
