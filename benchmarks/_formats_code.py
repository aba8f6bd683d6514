"""Source code: a real repository indexed with ``kinds=("code",)`` beside markdown of the
same bytes, in the same run, and a function's name looked up.

- The repository (``_formats_inputs.code_folder``; in ``--quick`` a seeded sample of 500
  of its source files) must hold 500 source files or more, else this part is not
  measured. Lexically searchable: a fresh index (hash vectors), ``reindex(background=
  True)``, the job polled until its files are committed (a lexical search then
  confirms it), as the cold section measures markdown.
- Markdown of the same bytes: the corpus's markdown files copied again and again
  (``copy000/...``), the last one cut at a line, until they hold as many bytes as the
  files the code index took; indexed the same way, right after.
- Names: every function and method definition of the indexed Python files (``ast``);
  of the names defined once in the repository, ``functions`` drawn with the seed, each
  searched alone, ``mode="lexical"``: a hit when the first result is that file and its
  lines hold the ``def`` line. The same over any definition (names such as ``__init__``
  or ``get`` defined many times, where no first answer can be right for all) is shown
  beside it, for what it says.
"""

from __future__ import annotations

import ast
import random
import re
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rifflux import Rifflux, Settings
from rifflux.kinds import CODE_SUFFIXES

from ._common import Incomplete, job_finished, job_left_indexing
from ._context import State
from ._corpus import markdown_files

MIN_FILES = 500
_TIMEOUT = 3600.0

Definition = tuple[str, str, int]  # name, path, the def line


def _source_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in CODE_SUFFIXES
                  and p.is_file() and not any(part.startswith(".")
                                              for part in p.relative_to(folder).parts))


def sampled_repository(folder: Path, dest: Path, files: int, seed: int) -> Path:
    """``files`` of ``folder``'s source files drawn with ``seed``, copied to ``dest``."""
    chosen = _source_files(folder)
    chosen = sorted(random.Random(seed).sample(chosen, min(files, len(chosen))))
    for path in chosen:
        target = dest / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return dest


def markdown_of(corpus: Path, dest: Path, size: int) -> dict[str, int]:
    """The corpus's markdown copied into ``dest`` until it holds ``size`` bytes."""
    files = markdown_files(corpus)
    if not files or size <= 0:
        return {"files": 0, "bytes": 0}
    written = count = copy = 0
    while written < size:
        for path in files:
            room = size - written
            if room <= 0:
                break
            data = path.read_bytes()
            if len(data) > room:
                data = data[: data.rfind(b"\n", 0, room) + 1] or data[:room]
            target = dest / f"copy{copy:03d}" / path.relative_to(corpus)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += len(data)
            count += 1
        copy += 1
    return {"files": count, "bytes": written}


async def cold(folder: Path, db: Path, kinds: tuple[str, ...],
               probe: str) -> tuple[dict[str, Any], list[str]]:
    """Index ``folder`` from nothing: seconds until lexically searchable; the files."""
    settings = Settings(db_path=db, embedding_backend="hash", kinds=kinds, model_warmup=False)
    async with Rifflux(settings=settings) as rf:
        started = time.perf_counter()
        job_id = (await rf.reindex(folder, background=True))["job"]["id"]
        await job_left_indexing(rf, job_id, within=_TIMEOUT)
        seconds = time.perf_counter() - started
        probe_hits = len(await rf.search(probe, mode="lexical"))
        snap = await job_finished(rf, job_id, within=_TIMEOUT, interval=0.01)
        status = await rf.status()
        paths = [f["path"] for f in await rf.files()]
    size = sum((folder / p).stat().st_size for p in paths)
    return {"lexically_searchable_s": round(seconds, 3), "files": status["files"],
            "chunks": status["chunks"], "bytes": size, "probe_hits": probe_hits,
            "job": snap["status"]}, paths


def _probe(path: Path) -> str:
    """A word of ``path`` for a lexical search (the longest: it is rare)."""
    words = re.findall(r"[A-Za-z]{3,}", path.read_text(errors="replace"))
    return max(words, key=len, default=path.stem)


def definitions(folder: Path, paths: list[str]) -> list[Definition]:
    """Every function and method definition of the Python files among ``paths``."""
    out: list[Definition] = []
    for rel in paths:
        if not rel.endswith(".py"):
            continue
        try:
            tree = ast.parse((folder / rel).read_bytes())
        except (SyntaxError, ValueError):
            continue
        out += [(node.name, rel, node.lineno) for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    return out


async def _looked_up(db: Path, chosen: list[Definition]) -> dict[str, Any]:
    settings = Settings(db_path=db, embedding_backend="hash", kinds=("code",),
                        model_warmup=False)
    first = 0
    misses: list[dict[str, Any]] = []
    async with Rifflux(settings=settings) as rf:
        for name, path, line in chosen:
            hits = await rf.search(name, mode="lexical", top_k=10)
            top = hits[0] if hits else None
            if top and top["path"] == path and top["line_start"] <= line <= top["line_end"]:
                first += 1
            else:
                misses.append({"name": name, "path": path, "line": line, "top": top and
                               [top["path"], top["line_start"], top["line_end"]]})
    return {"names": len(chosen), "first": first,
            "share_first": round(first / len(chosen), 4) if chosen else None,
            "misses": misses[:20]}


async def code_part(state: State) -> dict[str, Any]:
    """The figures of this part; ``error`` says why what it needed was not there."""
    from ._formats_inputs import Missing, code_folder

    cfg = state.config
    work = cfg.work / "formats"
    try:
        folder, source = code_folder(cfg)
        markdown_probe = state.queries.take(1)[0]
    except (Missing, Incomplete) as exc:  # (Incomplete: the markdown corpus is missing)
        return {"error": f"not measured: {exc}"}
    if cfg.quick:  # (a few more than the least: a minified file is skipped)
        drawn = MIN_FILES + 50
        folder = sampled_repository(folder, work / "code-sample", drawn, cfg.seed)
        source += f", {drawn} files drawn with the seed"
    out: dict[str, Any] = {"source": source}
    candidates = len(_source_files(folder))
    if candidates < MIN_FILES:
        return {**out, "error": f"not measured: {folder} holds {candidates} source files, "
                                f"fewer than the {MIN_FILES} the target asks"}
    probe = _probe(_source_files(folder)[0])
    out["code"], paths = await cold(folder, work / "code.db", ("code",), probe)
    defs = definitions(folder, paths)
    named = Counter(name for name, _, _ in defs)
    once = [d for d in defs if named[d[0]] == 1]
    rng = random.Random(cfg.seed)
    n = cfg.formats_functions
    out["names_once"] = await _looked_up(work / "code.db", rng.sample(once, min(n, len(once))))
    out["names_any"] = await _looked_up(work / "code.db", rng.sample(defs, min(n, len(defs))))
    out["definitions"], out["names_defined_once"] = len(defs), len(once)
    made = markdown_of(cfg.corpus, work / "markdown-same-bytes", out["code"]["bytes"])
    out["markdown"], _ = await cold(work / "markdown-same-bytes", work / "markdown.db",
                                    ("markdown",), markdown_probe)
    out["markdown"]["copied"] = made
    out["ratio"] = round(out["code"]["lexically_searchable_s"]
                         / out["markdown"]["lexically_searchable_s"], 3)
    if out["code"]["files"] < MIN_FILES:
        out["error"] = (f"the code index holds {out['code']['files']} files, fewer than "
                        f"{MIN_FILES}: not measured")
    elif not once:
        out["error"] = "not measured: no Python function or method is defined once"
    elif not made["bytes"] or out["markdown"]["bytes"] < 0.95 * out["code"]["bytes"]:
        out["error"] = (f"the markdown index holds {out['markdown']['bytes']:,} bytes of the "
                        f"{out['code']['bytes']:,} of code: not measured")
    return out
