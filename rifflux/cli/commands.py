"""The ``rifflux`` commands: index, forget, search, status and watch, and (from
``reading``) show, links, neighbors, tags and files. ``rifflux mcp`` is served by
``rifflux.mcp``; arguments are ``arguments``', settings and exit codes ``entry``'s.

Results go to stdout; progress, logs and errors go to stderr.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..api import Rifflux
from ..config import Settings
from ..core.scan import EXCLUDED, EXCLUDED_BY_DEFAULT, IGNORED, NOT_INCLUDED
from ..errors import IndexUnreachableError, InvalidArgumentError, RiffluxError
from ..exits import EXIT_FAILURE, EXIT_OK
from ..locate import missing_locations, refused_by_a_new_index
from ..types import (
    FINISHED,
    ForgetResult,
    JobInfo,
    KindCount,
    ReindexResult,
    RerankStatus,
    Status,
)
from . import reading
from .common import count, index_exists, require_index, write_json
from .entry import Command, CommandError
from .history import history
from .plain import on_terminal
from .results import out
from .search import search

if TYPE_CHECKING:
    from rich.console import Console

#: How long ``rifflux index`` waits for its index's server to answer again at the end.
_SERVER_WAIT = 60.0

async def _index(args: argparse.Namespace, settings: Settings) -> int:
    from .progress import ProgressView

    err = _stderr_console()
    started = time.perf_counter()
    if len(await missing_locations(args.paths)) == len(args.paths):
        # nothing to index: do not create an index file either
        raise CommandError(f"nothing to index: {', '.join(args.paths)} not found; "
                           "pass existing folders or files (notes, PDFs, slides, Word "
                           "files, text or code)")
    if not await index_exists(settings):  # (a refusal makes no index file, no lock)
        refusals = await refused_by_a_new_index(args.paths, settings, yes=args.yes)
        if len(refusals) == len(args.paths):
            raise CommandError("nothing indexed: " + "; ".join(refusals).replace(
                "yes=true (rifflux index --yes)", "--yes"))
    async with Rifflux(settings=settings) as rf:
        submitted = await rf.reindex(paths=args.paths, force=args.force, background=True,
                                     count_left_out=True, yes=args.yes)
        job_id = str(submitted["job"]["id"])
        watch = ProgressView(rf, job_id, err) if not args.json else None
        try:
            job = await (watch.run() if watch else rf.wait_for_job(job_id))
        except anyio.get_cancelled_exc_class():  # Ctrl-C, SIGTERM: say what is kept
            with anyio.move_on_after(2, shield=True):  # (a read of the job's state)
                await _say_interrupted(rf, job_id, err)
            raise
        if settings.history and job["status"] == "completed":
            await rf.wait_for_history()  # (what is new in the folders' git history)
        status = await _reachable_status(rf)
    if job["status"] != "completed":
        raise CommandError(f"indexing {job['status']}: {job.get('error') or 'no reason given'}")
    result: ReindexResult | None = job["result"]
    assert result is not None  # completed jobs have one
    failed = {p.get("path") for p in result.get("errors", [])}
    refused = all(p in failed for p in args.paths)  # (nothing named was read: no summary)
    if args.json:
        write_json(result)
    elif not refused:
        model = result.get("embedding_model") or "no embedding model"
        stdout_console().print(
            f"Indexed {count(result['indexed_files'], 'file')} "
            f"({result['skipped_files']:,} unchanged, {result['removed_files']:,} removed) "
            f"in {time.perf_counter() - started:.1f} s; the index now holds "
            f"{count(status['files'], 'file')}, {count(status['chunks'], 'chunk')}, "
            f"{count(status['embeddings'], 'embedding')} ({model})"
        )
    for skipped in result.get("left_out", []):
        err.print(f"{count(skipped['files'], 'file')} {skipped['reason']}; "
                  f"{_how_to_change(skipped['reason'])}",
                  markup=False)
    empty = {r["path"] for r in status["indexed_roots"] if not r["files"]}
    for given in args.paths:  # (kept as a folder: files added later are indexed)
        if str(await (await anyio.Path(given).expanduser()).resolve()) in empty:
            err.print(f"warning: {given} holds no files of the kinds indexed "
                      f"({', '.join(settings.include)}): nothing in it is searchable; check "
                      "the folder, or --kinds or --include to index other names",
                      markup=False)
    for path, said, error in _problems(result):  # (a path named here: an error)
        kind = "error" if error and path in args.paths else "warning"
        err.print(f"{kind}: {path}: {said}", markup=False)
    return EXIT_FAILURE if any(p in failed for p in args.paths) else EXIT_OK


async def _reachable_status(rf: Rifflux) -> Status:
    """The index's status once its server (PostgreSQL) answers: a job that outlived a
    restart of it ends with the summary, not with the restart (waits at most a minute)."""
    with anyio.fail_after(_SERVER_WAIT):
        while True:
            try:
                return await rf.status()
            except IndexUnreachableError:
                await anyio.sleep(1.0)


async def _say_interrupted(rf: Rifflux, job_id: str, err: Console) -> None:
    """What an interrupted ``rifflux index`` leaves: what it wrote is kept."""
    try:
        info = await rf.job(job_id)
        written, planned = info["indexed_files"], info["planned_files"]
        said = [f"all {count(planned, 'file')} were written, and are searchable"
                if written == planned else f"{written:,} of {count(planned, 'file')} were "
                "written (they are kept, and searchable)"] if planned else []
        if info["pending_embeddings"]:
            said.append(f"{count(info['pending_embeddings'], 'chunk')} still without a "
                        "vector (found by their words, not yet by meaning)")
        done = "; ".join(said) or "nothing was left half done"
    except RiffluxError:  # (the index closing: what was written is kept all the same)
        done = "the files written so far are kept, and searchable"
    err.print(f"rifflux: interrupted: {done}. Run the same `rifflux index` again to finish "
              "(files already written are skipped)", markup=False)


async def _forget(args: argparse.Namespace, settings: Settings) -> int:
    await require_index(settings)
    err = _stderr_console()
    results: list[ForgetResult] = []
    failed = False
    async with Rifflux(settings=settings) as rf:
        for path in args.paths:
            try:
                results.append(await rf.forget(path, yes=args.yes))
            except InvalidArgumentError as exc:
                err.print(f"warning: {exc}", markup=False)
                failed = True
        status = await rf.status()
    if args.json:
        write_json(results)
    else:
        out = stdout_console()
        for r in results:
            what = (f"the folder{'s' if len(r['removed_roots']) > 1 else ''} "
                    f"{', '.join(r['removed_roots'])}" if r["removed_roots"] else r["path"])
            out.print(f"Forgot {what}: {count(r['removed_files'], 'file')} removed from the "
                      f"index", markup=False)
        out.print(f"The index now holds {count(status['files'], 'file')} in "
                  f"{count(status['roots'], 'folder')}", markup=False)
    return EXIT_FAILURE if failed else EXIT_OK


#: How to index what ``rifflux index`` reports it left out, by why (first match wins).
_CHANGE_IT = {
    EXCLUDED_BY_DEFAULT: "RIFFLUX_EXCLUDE replaces the default excludes",
    EXCLUDED: "--exclude to change",
    NOT_INCLUDED: "--kinds or --include to change",
    IGNORED: "--no-ignore-files to change",
}


def _how_to_change(reason: str) -> str:
    why = reason.rsplit("/, ", 1)[-1]  # after "under FOLDER/, "
    return next((hint for start, hint in _CHANGE_IT.items() if why.startswith(start)),
                "--include/--exclude to change")


async def _status(args: argparse.Namespace, settings: Settings) -> int:
    await require_index(settings)
    async with Rifflux(settings=settings) as rf:
        if args.model:  # (else the counts are those of the model the index was embedded with)
            with anyio.move_on_after(60):
                await rf.wait_for_model()
        status = await rf.status()
    if args.json:
        write_json(status)
        return EXIT_OK
    model = (f"{status['embedding_model'] or status['embedding_counts_model'] or 'none'} "
             f"({status['embedding_backend'] or status['embedding_backend_requested']})")
    if status["embedding_model_state"] == "not_loaded":
        model += " - not loaded by this command (`rifflux status --model` loads it)"
    elif status["embedding_model_reason"]:  # loading, a fallback or an error
        model += f" - {status['embedding_model_reason']}"
    rows = [
        ("index", status["db_path"] + (" (read-only)" if settings.read_only else "")),
        ("files", f"{status['files']:,} in {count(status['roots'], 'folder')}"),
        *[("", _kind_line(kind, n)) for kind, n in status["kinds"].items()],
        ("chunks", f"{status['chunks']:,}"),
        ("embeddings", f"{status['embeddings']:,} ({status['pending_embeddings']:,} pending)"),
        ("links", f"{status['links']:,} ({status['unresolved_links']:,} unresolved)"),
        ("model", model),
        *([("server", _server(status))] if status["embedding_server"] else []),
        *([("vectors", _vectors(status))] if status["embedding_dim"] else []),
        *([("reranker", _reranker(status["reranker"]))] if status["reranker"] else []),
        ("include", ", ".join(status["include_globs"])),
        ("exclude", ", ".join(status["exclude_globs"])),
    ]
    for root in status["indexed_roots"]:  # (by kind above)
        rows.append(("folder", f"{root['path']}: {count(root['files'], 'file')}, "
                               f"{count(root['chunks'], 'chunk')}"))
    for other in status["processes"]:  # other agents' servers, a watcher...
        rows.append(("process", f"pid {other['pid']} ({', '.join(other['roles'])}), seen "
                                f"{max(0.0, time.time() - other['last_seen']):.0f} s ago"))
    if not on_terminal():  # plain lines: the keys in a column, each value on its line
        width = max(len(key) for key, _ in rows)
        out().print("\n".join(f"{key:<{width}}  {value}" for key, value in rows))
        return EXIT_OK
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    stdout_console(soft_wrap=False).print(table)
    return EXIT_OK


def _server(status: Status) -> str:
    """The embedding server's line: where, which model, and whether it answers."""
    server = status["embedding_server"]
    assert server is not None
    model = f" ({server['model']})" if server["model"] else ""
    if server["reachable"] is False:
        since = server["unreachable_since"]
        when = "" if since is None else f" since {time.strftime('%H:%M:%S', time.localtime(since))}"
        said = f"unreachable{when}: {server['error']}"
        waiting = status["embedder"]["waiting"]
        if waiting is not None and status["embedder"]["retry_in"] is not None:
            said += f"; embedding asks again in {status['embedder']['retry_in']:.0f} s"
    else:
        said = "reachable" if server["reachable"] else "not asked yet"
    return f"{server['url']}{model} - {said}"


async def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from ..location import index_location
    from ..store.migrate import migrate

    source = settings.db_path if args.source is None else index_location(args.source)
    target = index_location(args.target)
    err = _stderr_console()

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "index" and not done:
            err.print("building the search indexes ...")
        elif stage != "index" and done == total:
            err.print(f"{stage}: {done:,} copied")

    copied = await migrate(source, target, progress=progress)
    if args.json:
        write_json(copied)
    else:
        stdout_console().print(
            f"copied {source} to {target}: "
            f"{count(copied['files'], 'file')} in {count(copied['roots'], 'folder')}, "
            f"{count(copied['chunks'], 'chunk')}, {count(copied['vectors'], 'vector')} of "
            f"{copied['model'] or 'no model'} in {copied['seconds']:.1f} s"
            + (f" ({copied['vectors_left']:,} vectors of other models left behind)"
               if copied["vectors_left"] else ""))
    return EXIT_OK


def stdout_console(*, soft_wrap: bool = True) -> Console:
    """``terminal.stdout_console``, imported (with rich) by the commands that use it."""
    from .terminal import stdout_console as console

    return console(soft_wrap=soft_wrap)


def _stderr_console() -> Console:
    """Progress, warnings and notes, on stderr (rich: imported by the commands that print
    them, not by a search)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def _vectors(status: Status) -> str:
    """How the model makes its vectors, in one line: '384 dimensions, mean pooling, ...'."""
    parts = [f"{status['embedding_dim']} dimensions"]
    if status["embedding_pooling"]:
        parts.append(f"{status['embedding_pooling']} pooling")
    if status["embedding_max_tokens"]:
        parts.append(f"up to {status['embedding_max_tokens']} tokens")
    if status["embedding_query_prefix"]:
        parts.append(f"query prefix {status['embedding_query_prefix']!r}")
    if status["embedding_document_prefix"]:
        parts.append(f"document prefix {status['embedding_document_prefix']!r}")
    return ", ".join(parts)


async def _watch(args: argparse.Namespace, settings: Settings) -> int:
    existing = await anyio.to_thread.run_sync(_folders, args.paths)
    if not existing:
        raise CommandError(f"no folder to watch: {', '.join(args.paths)} not found; "
                           "pass existing folders")
    out = stdout_console()
    err = _stderr_console()
    for later in sorted(set(args.paths) - set(existing)):
        err.print(f"warning: {later} does not exist yet; it is watched for when it appears")
    async with Rifflux(settings=settings) as rf:
        err.print(f"watching {', '.join(args.paths)} (index {settings.db_path}); "
                  "Ctrl-C stops")
        reported: set[str] = set()
        while True:
            for job in reversed((await rf.status())["jobs"]):  # oldest first
                if job["status"] in FINISHED and job["id"] not in reported:
                    reported.add(job["id"])
                    out.print(_batch_line(job))
            # Polling the public status() is the display's refresh rate, not a
            # synchronisation: batches are reported however they interleave.
            await anyio.sleep(0.5)


def _folders(paths: Sequence[str]) -> list[str]:
    return [p for p in paths if Path(p).expanduser().is_dir()]


def _problems(result: ReindexResult | dict[str, Any]
              ) -> list[tuple[str | None, str | None, bool]]:
    """What a job could not read (errors: True), then what it skipped or read with bytes
    replaced (warnings): each path with what is said of it."""
    return ([(e.get("path"), e.get("error"), True) for e in result.get("errors", [])]
            + [(w["path"], w["reason"], False) for w in result.get("warnings", [])])


def _batch_line(job: JobInfo) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(job.get("finished_at") or time.time()))
    result: ReindexResult | dict[str, Any] = job.get("result") or {}
    took = (job.get("finished_at") or 0) - (job.get("started_at") or 0)
    changed = result.get("changed") or {}
    what = ", ".join(
        f"{result.get(key, 0):,} {label}" + (f" ({', '.join(names)})" if names else "")
        for key, label, names in (("indexed_files", "indexed", changed.get("indexed", [])),
                                  ("removed_files", "removed", changed.get("removed", []))))
    what += f", {result.get('skipped_files', 0):,} unchanged"
    problems = [f"{path}: {said}" for path, said, _ in _problems(result)]
    if problems:  # (a file skipped or unreadable is said, not only left out of the counts)
        what += f"; {'; '.join(problems[:3])}" + (
            f" (and {len(problems) - 3:,} more: `rifflux index` lists them)"
            if len(problems) > 3 else "")
    if job["status"] != "completed":
        what = f"{job['status']}: {job.get('error') or 'no reason given'}"
    return f"{stamp} {job['source']:<8} {', '.join(job['paths'])}: {what} ({took:.2f} s)"


COMMANDS: dict[str, Command] = {
    "index": _index,
    "forget": _forget,
    "search": search,
    "show": reading.show,
    "history": history,
    "links": reading.links,
    "neighbors": reading.neighbors,
    "tags": reading.tags,
    "files": reading.files,
    "status": _status,
    "watch": _watch,
    "migrate": _migrate,
}


def _reranker(reranker: RerankStatus) -> str:
    """The reranker: what reranks, how deep, whether every search asks it."""
    how = "every search" if reranker["default"] else "searches that ask (--rerank: every one)"
    return (f"{reranker['by']} ({reranker['api']}), the first {reranker['depth']} hits of "
            f"{how}, within {reranker['timeout']:g} s")


def _kind_line(kind: str, n: KindCount) -> str:
    """``pdf: 12 files, 340 chunks (1 without text: a scan?)``."""
    empty = (f" ({n['without_text']:,} without text: scans? OCR them to search them)"
             if n["without_text"] and kind not in ("markdown", "text", "code") else "")
    return f"{kind}: {count(n['files'], 'file')}, {count(n['chunks'], 'chunk')}{empty}"
