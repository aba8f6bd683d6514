"""From a command line to a finished command: arguments and environment become
``Settings``, and a command runs with signal handling and one-line errors.

Settings come from defaults, then ``RIFFLUX_*`` environment variables, then
flags (``settings_from_env``). Exit codes: 0 success, 1 failure (or a search
with no results), 2 bad usage or configuration, 130 interrupted, 128 + N stopped
by signal N (SIGTERM, SIGHUP).

This module imports only the standard library and ``rifflux.config`` at the top:
``rifflux mcp`` parses its arguments here before the MCP front starts, and the
front must start within milliseconds (see ``rifflux.mcp._fast_start.front``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence

from ..config import BACKENDS, LOG_LEVELS, Settings, default_db_path, settings_from_env
from ..errors import InvalidArgumentError, RiffluxError
from ..types import MODES
from .note_args import add_note_parsers

logger = logging.getLogger("rifflux.cli")

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

Command = Callable[[argparse.Namespace, Settings], Awaitable[int]]


class CommandError(Exception):
    """A failure to report as one line on stderr, with an exit code."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- arguments


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, Settings | int]:
    """The parsed arguments and the settings, or the exit code of a configuration error
    (already reported). Usage errors exit 2 here, as argparse does."""
    args = parser().parse_args(argv)
    try:
        return args, _settings(args)
    except InvalidArgumentError as exc:
        return args, fail(f"{exc} (check the flags and RIFFLUX_* environment variables)",
                          EXIT_USAGE)


def parser() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command: every subparser
    # shares them, and SUPPRESS keeps an absent flag from overriding a given one.
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_argument_group("global options (flags beat RIFFLUX_* variables)")
    g.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                   help=f"index database file [RIFFLUX_DB_PATH; default {default_db_path()}]")
    g.add_argument("--backend", choices=BACKENDS, default=argparse.SUPPRESS,
                   help="embedding backend; auto uses the ONNX model (bundled, or "
                        "--model-dir's) and falls back to hashing "
                        "[RIFFLUX_EMBEDDING_BACKEND; default auto]")
    g.add_argument("--model-dir", metavar="DIR", default=argparse.SUPPRESS,
                   help="your own embedding model: a directory with model.onnx, "
                        "tokenizer.json and optionally rifflux-model.json (see the README) "
                        "[RIFFLUX_MODEL_DIR; default the bundled all-MiniLM-L6-v2]")
    g.add_argument("--include", metavar="GLOBS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated file globs to index, replacing the defaults; "
                        "repeatable [RIFFLUX_INCLUDE; default *.md,*.markdown,*.mdx]")
    g.add_argument("--exclude", metavar="GLOBS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated globs to skip as well as the default ones (VCS, "
                        "virtualenv and cache folders); repeatable [RIFFLUX_EXCLUDE, which "
                        "replaces the defaults]")
    g.add_argument("--no-ignore-files", dest="use_ignore_files", action="store_false",
                   default=argparse.SUPPRESS,
                   help="index files that .gitignore, .ignore or .riffluxignore leave out "
                        "[RIFFLUX_USE_IGNORE_FILES=0]")
    g.add_argument("--rrf-k", metavar="K", type=int, default=argparse.SUPPRESS,
                   help="hybrid ranking constant [RIFFLUX_RRF_K; default 60]")
    g.add_argument("--log-level", choices=LOG_LEVELS, type=str.upper,
                   default=argparse.SUPPRESS,
                   help="stderr log level [RIFFLUX_LOG_LEVEL; default WARNING]")
    g.add_argument("--writable", action="append", metavar="DIR", default=argparse.SUPPRESS,
                   help="a folder agents may write notes in (mcp, serve and the note "
                        "commands; mcp and serve index and watch it too); repeatable "
                        f"[RIFFLUX_WRITABLE, separated by {os.pathsep!r}]")

    top = argparse.ArgumentParser(
        prog="rifflux", parents=[common],
        description="Local, offline hybrid (keyword + embedding) search over markdown folders.",
        epilog="Exit codes: 0 ok, 1 failure or no search results, 2 usage, 130 interrupted, "
               "143 terminated (SIGTERM), 129 hung up (SIGHUP).",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="index folders or files",
                       description="Bring the index up to date for each PATH (changed files only"
                                   " unless --force); shows progress on a terminal.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--force", action="store_true", help="re-read unchanged files too")
    p.add_argument("--yes", action="store_true",
                   help="index it even when it is / or your home folder, or a new folder of "
                        "more than max_root_files (50,000) markdown files")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = sub.add_parser("forget", parents=[common], help="remove folders or files from the index",
                       description="Remove each PATH from the index: an indexed folder with "
                                   "everything under it, or a folder or file inside one. The "
                                   "files on disk are not touched.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--yes", action="store_true",
                   help="forget / or your home folder: every indexed folder inside it")
    p.add_argument("--json", action="store_true", help="print the results as JSON")

    p = sub.add_parser("search", parents=[common], help="search the index",
                       description="Print the best matching chunks: path, heading breadcrumb, "
                                   "score and a snippet with the query terms highlighted.")
    p.add_argument("query", nargs="+", help="words to search for (no quotes needed)")
    p.add_argument("--mode", choices=MODES, default="hybrid",
                   help="hybrid (default), lexical (exact words) or semantic (meaning)")
    p.add_argument("--top-k", type=_positive_int, default=10, metavar="N",
                   help="number of results (default 10)")
    p.add_argument("--max-per-file", type=_positive_int, metavar="N",
                   help="at most N hits from one file (the list goes on down the ranking)")
    p.add_argument("--snippets", action="store_true",
                   help="with --json: each hit's snippet only, not its whole text")
    p.add_argument("--explain", action="store_true",
                   help="show why each hit ranks where it does, and the lexical query")
    p.add_argument("--json", action="store_true", help="print the search_rifflux JSON object")
    f = p.add_argument_group("filters (applied before ranking)")
    f.add_argument("--path", action="append", metavar="GLOB", dest="path_globs",
                   help="only files whose path in its indexed folder matches GLOB, as in "
                        ".gitignore ('docs/**', '**/adr-*.md'); repeatable, any may match")
    f.add_argument("--root", metavar="DIR", help="only files under this indexed folder "
                                                 "(its path, or its name if unique)")
    f.add_argument("--tag", action="append", metavar="TAG", dest="tags",
                   help="only files with this tag (front matter or #inline; 'a' matches "
                        "'a/b'); repeatable, all must be present")
    f.add_argument("--since", metavar="WHEN",
                   help="only files modified at or after WHEN: 2026-11-01, "
                        "2026-11-01T09:30, or an age: 7d, 2w, 3m, 1y")
    f.add_argument("--before", metavar="WHEN", help="only files modified before WHEN")
    f.add_argument("--near", metavar="PATH",
                   help="only this note and the notes linked to or from it (see --depth)")
    f.add_argument("--depth", type=_positive_int, metavar="N",
                   help="with --near: up to N links away, either way (default 1)")

    p = sub.add_parser("show", parents=[common], help="print lines of a file, or a chunk",
                       description="Print an indexed file's lines with line numbers "
                                   "(PATH:START-END as search prints it, PATH:LINE, or PATH), "
                                   "or a chunk by its CHUNK_ID with where it is.")
    p.add_argument("target", metavar="PATH[:START[-END]] | CHUNK_ID")
    p.add_argument("--root", metavar="DIR", help="the indexed folder PATH is relative to, "
                                                 "when several hold it")
    p.add_argument("--json", action="store_true",
                   help="print the lines (as MCP get_file gives a range) or the chunk (as "
                        "get_chunk gives it) as JSON")

    p = sub.add_parser("links", parents=[common], help="show a note's links, both ways",
                       description="Print the links a note makes ([[wikilinks]], embeds, "
                                   "markdown links to notes), where each resolves, and the "
                                   "notes that link to it.")
    p.add_argument("path", metavar="PATH", help="the note, as search prints it")
    p.add_argument("--root", metavar="DIR", help="the indexed folder PATH is relative to, "
                                                 "when several hold it")
    p.add_argument("--json", action="store_true", help="print the links object as JSON")

    p = sub.add_parser("neighbors", parents=[common], help="list the notes near a note",
                       description="Print the notes at most --depth links away from a note, "
                                   "whichever way the links go, nearest first.")
    p.add_argument("path", metavar="PATH", help="the note, as search prints it")
    p.add_argument("--depth", type=_positive_int, default=1, metavar="N",
                   help="how many links away (default 1)")
    p.add_argument("--root", metavar="DIR", help="the indexed folder PATH is relative to, "
                                                 "when several hold it")
    p.add_argument("--json", action="store_true", help="print the list as JSON")

    p = sub.add_parser("status", parents=[common], help="show what is indexed")
    p.add_argument("--json", action="store_true", help="print the index_status JSON object")

    p = sub.add_parser("watch", parents=[common], help="index folders and keep them up to date",
                       description="Index each PATH, then reindex changed files as they change "
                                   "(foreground; Ctrl-C stops). Logs each batch.")
    p.add_argument("paths", nargs="+", metavar="PATH")

    add_note_parsers(sub, common)

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
    return top


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
    settings = settings_from_env(
        os.environ,
        db_path=getattr(args, "db", None),
        embedding_backend=getattr(args, "backend", None),
        model_dir=getattr(args, "model_dir", None),
        include=globs(getattr(args, "include", None)),
        rrf_k=getattr(args, "rrf_k", None),
        log_level=getattr(args, "log_level", None),
        watch_paths=tuple(watch) if watch else None,
        auto_reindex_on_search=getattr(args, "auto_reindex", None),
        auto_reindex_min_interval=getattr(args, "auto_reindex_interval", None),
        use_ignore_files=getattr(args, "use_ignore_files", None),
        writable=tuple(args.writable) if getattr(args, "writable", None) else None,
    )
    more = globs(getattr(args, "exclude", None))
    if more is None:
        return settings
    # on top of the defaults (or RIFFLUX_EXCLUDE): .git stays out
    return settings.with_overrides(exclude=tuple(dict.fromkeys((*settings.exclude, *more))))


# ---------------------------------------------------------------- running


def run(command: Command, args: argparse.Namespace, settings: Settings) -> int:
    """Run one command to its exit code: SIGTERM and SIGHUP stop it as cleanly as
    Ctrl-C, and every failure becomes one line on stderr."""
    import anyio  # here, not at the top: see the module's docstring

    _configure_logging(settings.log_level)
    try:
        return anyio.run(_until_terminated, command, args, settings)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseException as exc:  # the boundary: every failure becomes one line
        leaf = _leaf(exc)
        if isinstance(leaf, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        if isinstance(leaf, CommandError):
            return fail(str(leaf), leaf.code)
        if isinstance(leaf, InvalidArgumentError):
            return fail(str(leaf), EXIT_USAGE)
        if isinstance(leaf, OSError) and leaf.filename:
            return fail(f"{leaf.strerror or leaf}: {leaf.filename} (check the paths given, "
                        "--db and RIFFLUX_DB_PATH)")
        if isinstance(leaf, RiffluxError | OSError):
            return fail(str(leaf))
        if not isinstance(leaf, Exception):
            raise
        logger.debug("unexpected error", exc_info=leaf)
        return fail(f"unexpected {type(leaf).__name__}: {leaf} "
                    "(run with --log-level DEBUG to see where; please report it)")


async def _until_terminated(command: Command, args: argparse.Namespace,
                            settings: Settings) -> int:
    """Run the command; SIGTERM or SIGHUP cancel it (the index is closed, the running
    job gets its grace period) and the exit code is 128 + the signal."""
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


async def _with_signals(command: Command, args: argparse.Namespace, settings: Settings) -> int:
    import signal

    import anyio

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

        async def run_command() -> None:
            nonlocal result
            result = await command(args, settings)
            tg.cancel_scope.cancel()

        tg.start_soon(stop_on_signal)
        tg.start_soon(run_command)
    return 128 + received[0] if received else result


def _exit_code(exc: SystemExit) -> int:
    # A SystemExit (rich's answer to a closed pipe, as in `rifflux search q | head`)
    # becomes a return: raised through asyncio it skips the loop's clean-up, and an
    # idle worker thread then keeps the process alive.
    return exc.code if isinstance(exc.code, int) else EXIT_FAILURE


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def fail(message: str, code: int = EXIT_FAILURE) -> int:
    """Report one failure line on stderr; returns ``code``."""
    if sys.stderr is not None:
        sys.stderr.write(f"rifflux: error: {message}\n")
    return code


def _configure_logging(level: str) -> None:
    """Logs go to stderr only: under ``rifflux mcp`` stdout is the protocol channel."""
    handler: logging.Handler
    if sys.stderr is None:  # started with fd 2 closed: nowhere to log
        handler = logging.NullHandler()
    elif sys.stderr.isatty():
        from rich.console import Console
        from rich.logging import RichHandler

        handler = RichHandler(console=Console(stderr=True), show_path=False)
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)  # (checked)
