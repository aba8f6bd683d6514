"""The ``rifflux`` command line: index, search, status, watch, and the MCP server.

Settings come from defaults, then ``RIFFLUX_*`` environment variables, then
flags (``settings_from_env``). Results go to stdout; progress, logs and errors
go to stderr, errors as one line. Exit codes: 0 success, 1 failure or a search
with no results, 2 bad usage or configuration, 130 interrupted, 128 + N stopped
by signal N (SIGTERM, SIGHUP).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from rich.console import Console
from rich.logging import RichHandler
from rich.table import Table

from .actors.jobs import FINISHED
from .api import MODES, Rifflux
from .config import BACKENDS, Settings, default_db_path, settings_from_env
from .errors import InvalidArgumentError, RiffluxError
from .terminal import ProgressView, print_results

if TYPE_CHECKING:
    from .mcp.front import Front

logger = logging.getLogger("rifflux.cli")

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


class CommandError(Exception):
    """A failure to report as one line on stderr, with an exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- entry points


def main(argv: Sequence[str] | None = None, *, mcp_front: Front | None = None) -> int:
    """``rifflux``: parse, build settings, run one command; returns the exit code.

    ``mcp_front`` is the MCP front already answering the handshake (``rifflux
    mcp`` starts there, see ``rifflux.launch``); ``_mcp`` hands off to it.
    """
    args = _parser().parse_args(argv)  # exits 2 on usage errors
    args.mcp_front = mcp_front
    try:
        settings = _settings(args)
    except InvalidArgumentError as exc:
        return _fail(f"{exc} (check the flags and RIFFLUX_* environment variables)", EXIT_USAGE)
    _configure_logging(settings.log_level)
    command: Command = args.run
    try:
        return anyio.run(_until_terminated, command, args, settings)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseException as exc:  # the boundary: every failure becomes one line
        leaf = _leaf(exc)
        if isinstance(leaf, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        if isinstance(leaf, CommandError):
            return _fail(str(leaf), leaf.code)
        if isinstance(leaf, InvalidArgumentError):
            return _fail(str(leaf), EXIT_USAGE)
        if isinstance(leaf, OSError) and leaf.filename:
            return _fail(f"{leaf.strerror or leaf}: {leaf.filename} (check the paths given, "
                         "--db and RIFFLUX_DB_PATH)")
        if isinstance(leaf, RiffluxError | OSError):
            return _fail(str(leaf))
        if not isinstance(leaf, Exception):
            raise
        logger.debug("unexpected error", exc_info=leaf)
        return _fail(f"unexpected {type(leaf).__name__}: {leaf} "
                     "(run with --log-level DEBUG to see where; please report it)")


async def _with_signals(command: Command, args: argparse.Namespace, settings: Settings) -> int:
    if sys.platform == "win32":  # no signal receivers there
        return await command(args, settings)
    received: list[int] = []
    result = EXIT_OK
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                async for signum in signals:
                    logger.info("%s received: shutting down", signal.Signals(signum).name)
                    received.append(int(signum))
                    tg.cancel_scope.cancel()
                    return

        async def run() -> None:
            nonlocal result
            result = await command(args, settings)
            tg.cancel_scope.cancel()

        tg.start_soon(stop_on_signal)
        tg.start_soon(run)
    return 128 + received[0] if received else result


async def _until_terminated(command: Command, args: argparse.Namespace,
                            settings: Settings) -> int:
    """Run the command; SIGTERM or SIGHUP stop it as cleanly as Ctrl-C does (the index
    is closed, the running job gets its grace period) and exit with 128 + the signal."""
    try:
        return await _with_signals(command, args, settings)
    except BaseExceptionGroup as group:
        # One failure comes out as itself, as it would without the signal watcher.
        if len(group.exceptions) != 1:
            raise
        leaf = group.exceptions[0]
        if isinstance(leaf, SystemExit):
            return _exit_code(leaf)
        raise leaf from group
    except SystemExit as exc:
        return _exit_code(exc)


def _exit_code(exc: SystemExit) -> int:
    # A SystemExit (rich's answer to a closed pipe, as in `rifflux search q | head`)
    # becomes a return: raised through asyncio it skips the loop's clean-up, and an
    # idle worker thread then keeps the process alive.
    return exc.code if isinstance(exc.code, int) else EXIT_FAILURE


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _fail(message: str, code: int = EXIT_FAILURE) -> int:
    sys.stderr.write(f"rifflux: error: {message}\n")
    return code


# ---------------------------------------------------------------- arguments


def _parser() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command: every subparser
    # shares them, and SUPPRESS keeps an absent flag from overriding a given one.
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("global options (flags beat RIFFLUX_* variables)")
    g.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                   help=f"index database file [RIFFLUX_DB_PATH; default {default_db_path()}]")
    g.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS,
                   help="embedding backend; auto uses the bundled ONNX model and falls back "
                        "to hashing [RIFFLUX_EMBEDDING_BACKEND; default auto]")
    g.add_argument("--include", metavar="GLOBS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated file globs to index, replacing the defaults; "
                        "repeatable [RIFFLUX_INCLUDE; default *.md,*.markdown,*.mdx]")
    g.add_argument("--exclude", metavar="GLOBS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated globs to skip, replacing the defaults; repeatable "
                        "[RIFFLUX_EXCLUDE]")
    g.add_argument("--rrf-k", metavar="K", type=int, default=argparse.SUPPRESS,
                   help="hybrid ranking constant [RIFFLUX_RRF_K; default 60]")
    g.add_argument("--log-level", choices=_LOG_LEVELS, type=str.upper,
                   default=argparse.SUPPRESS,
                   help="stderr log level [RIFFLUX_LOG_LEVEL; default WARNING]")

    parser = argparse.ArgumentParser(
        prog="rifflux", parents=[common],
        description="Local, offline hybrid (keyword + embedding) search over markdown folders.",
        epilog="Exit codes: 0 ok, 1 failure or no search results, 2 usage, 130 interrupted, "
               "143 terminated (SIGTERM), 129 hung up (SIGHUP).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="index folders or files",
                       description="Bring the index up to date for each PATH (changed files only"
                                   " unless --force); shows progress on a terminal.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--force", action="store_true", help="re-read unchanged files too")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=_index)

    p = sub.add_parser("search", parents=[common], help="search the index",
                       description="Print the best matching chunks: path, heading breadcrumb, "
                                   "score and a snippet with the query terms highlighted.")
    p.add_argument("query")
    p.add_argument("--mode", choices=MODES, default="hybrid",
                   help="hybrid (default), lexical (exact words) or semantic (meaning)")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N",
                   help="number of results (default 10)")
    p.add_argument("--json", action="store_true", help="print the search_rifflux JSON object")
    p.set_defaults(run=_search)

    p = sub.add_parser("status", parents=[common], help="show what is indexed")
    p.add_argument("--json", action="store_true", help="print the index_status JSON object")
    p.set_defaults(run=_status)

    p = sub.add_parser("watch", parents=[common], help="index folders and keep them up to date",
                       description="Index each PATH, then reindex changed files as they change "
                                   "(foreground; Ctrl-C stops). Logs each batch.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.set_defaults(run=_watch)

    p = sub.add_parser("mcp", parents=[common], help="run the MCP server over stdio",
                       description="Serve the MCP tools over stdin/stdout (for Claude Desktop, "
                                   "Claude Code, VS Code and other MCP clients).")
    p.add_argument("--watch", action="append", metavar="PATH", default=argparse.SUPPRESS,
                   help="keep this folder indexed while serving; repeatable "
                        f"[RIFFLUX_WATCH_PATHS, separated by {os.pathsep!r}]")
    p.add_argument("--auto-reindex", action=argparse.BooleanOptionalAction,
                   default=argparse.SUPPRESS,
                   help="on search, reindex the watched or indexed folders in the background "
                        "(throttled), for when a watcher cannot run [RIFFLUX_AUTO_REINDEX]")
    p.add_argument("--auto-reindex-interval", type=float, metavar="SECONDS",
                   default=argparse.SUPPRESS,
                   help="at most one automatic reindex per this many seconds (default 30)")
    p.set_defaults(run=_mcp)
    return parser


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _settings(args: argparse.Namespace) -> Settings:
    def globs(values: list[str] | None) -> tuple[str, ...] | None:
        if values is None:
            return None
        return tuple(g.strip() for v in values for g in v.split(",") if g.strip())

    watch = args.paths if args.command == "watch" else getattr(args, "watch", None)
    return settings_from_env(
        os.environ,
        db_path=getattr(args, "db", None),
        embedding_backend=getattr(args, "backend", None),
        include=globs(getattr(args, "include", None)),
        exclude=globs(getattr(args, "exclude", None)),
        rrf_k=getattr(args, "rrf_k", None),
        log_level=getattr(args, "log_level", None),
        watch_paths=tuple(watch) if watch else None,
        auto_reindex_on_search=getattr(args, "auto_reindex", None),
        auto_reindex_min_interval=getattr(args, "auto_reindex_interval", None),
    )


def _configure_logging(level: str) -> None:
    """Logs go to stderr only: under ``rifflux mcp`` stdout is the protocol channel."""
    handler: logging.Handler
    if sys.stderr is None:  # started with fd 2 closed: nowhere to log
        handler = logging.NullHandler()
    elif sys.stderr.isatty():
        handler = RichHandler(console=Console(stderr=True), show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper() if level.upper() in _LOG_LEVELS else "WARNING",
                        handlers=[handler], force=True)


# ---------------------------------------------------------------- commands


async def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here: the MCP SDK takes over a second to import, which the
    # other commands should not pay.
    from .mcp.handoff import serve_after_front, serve_stdio

    if args.mcp_front is not None:
        await serve_after_front(settings, args.mcp_front)
    else:
        await serve_stdio(settings)
    return EXIT_OK


async def _index(args: argparse.Namespace, settings: Settings) -> int:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    started = time.perf_counter()
    async with Rifflux(settings=settings) as rf:
        submitted = await rf.reindex(paths=args.paths, force=args.force, background=True)
        job_id = str(submitted["job"]["id"])
        watch = ProgressView(rf, job_id, err) if not args.json else None
        job = await (watch.run() if watch else rf.wait_for_job(job_id))
        status = await rf.status()
    if job["status"] != "completed":
        raise CommandError(f"indexing {job['status']}: {job.get('error') or 'no reason given'}")
    result: dict[str, Any] = job["result"]
    if args.json:
        _write_json(result)
    else:
        out = Console(highlight=False, soft_wrap=True)
        out.print(
            f"Indexed {result['indexed_files']} files ({result['skipped_files']} unchanged, "
            f"{result.get('removed_files', 0)} removed) in {time.perf_counter() - started:.1f} s; "
            f"the index now holds {status['files']} files, {status['chunks']} chunks, "
            f"{status['embeddings']} embeddings ({result.get('embedding_model')})"
        )
    for problem in result.get("errors", []):
        err.print(f"warning: {problem.get('path')}: {problem.get('error')}")
    failed = {p.get("path") for p in result.get("errors", [])}
    return EXIT_FAILURE if any(p in failed for p in args.paths) else EXIT_OK


async def _search(args: argparse.Namespace, settings: Settings) -> int:
    await _require_index(settings)
    async with Rifflux(settings=settings) as rf:
        results = await rf.search(args.query, top_k=args.top_k, mode=args.mode)
        label = (await rf.status())["embedding_model"]
    if args.json:
        _write_json({"query": args.query, "mode": args.mode, "count": len(results),
                     "embedding_model": label, "results": results})
    else:
        print_results(Console(highlight=False, soft_wrap=True), args.query, results)
    if not results:
        sys.stderr.write("rifflux: no results (try other words, --mode semantic, or check "
                         "`rifflux status`)\n")
        return EXIT_FAILURE
    return EXIT_OK


async def _status(args: argparse.Namespace, settings: Settings) -> int:
    await _require_index(settings)
    async with Rifflux(settings=settings) as rf:
        # Counts are per model, so wait (bounded) until it is known. The library
        # offers no readiness event to wait on, hence the poll.
        with anyio.move_on_after(60):
            while not (await rf.status())["embedding_model_ready"]:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        status = await rf.status()
    if args.json:
        _write_json(status)
        return EXIT_OK
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    model = f"{status['embedding_model']} ({status['embedding_backend']})"
    if status.get("embedding_error") or status.get("embedding_fallback_reason"):
        model += f" - {status.get('embedding_error') or status['embedding_fallback_reason']}"
    rows = [
        ("index", status["db_path"]),
        ("files", f"{status['files']:,} in {status.get('roots', '?')} folders"),
        ("chunks", f"{status['chunks']:,}"),
        ("embeddings", f"{status['embeddings']:,} ({status['pending_embeddings']:,} pending)"),
        ("model", model),
        ("include", ", ".join(status["include_globs"])),
        ("exclude", ", ".join(status["exclude_globs"])),
    ]
    for key, value in rows:
        table.add_row(key, value)
    Console(highlight=False).print(table)
    return EXIT_OK


async def _require_index(settings: Settings) -> None:
    db = await anyio.to_thread.run_sync(settings.db_path.expanduser().resolve)
    if not await anyio.Path(db).is_file():
        raise CommandError(f"no index at {db}: run `rifflux index PATH` first, "
                           "or point --db (RIFFLUX_DB_PATH) at an existing index")


async def _watch(args: argparse.Namespace, settings: Settings) -> int:
    existing = await anyio.to_thread.run_sync(_folders, args.paths)
    if not existing:
        raise CommandError(f"no folder to watch: {', '.join(args.paths)} not found; "
                           "pass existing folders")
    out = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for missing in sorted(set(args.paths) - set(existing)):
        err.print(f"warning: {missing} does not exist yet; it is watched for when it appears")
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


def _batch_line(job: dict[str, Any]) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(job.get("finished_at") or time.time()))
    result = job.get("result") or {}
    took = (job.get("finished_at") or 0) - (job.get("started_at") or 0)
    what = (f"{result.get('indexed_files', 0)} indexed, {result.get('skipped_files', 0)} "
            f"unchanged, {result.get('removed_files', 0)} removed")
    if job["status"] != "completed":
        what = f"{job['status']}: {job.get('error')}"
    return f"{stamp} {job['source']:<8} {', '.join(job['paths'])}: {what} ({took:.2f} s)"


def _write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
