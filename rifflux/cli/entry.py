"""From a command line to a finished command: arguments and environment become
``Settings``, and a command runs with signal handling and one-line errors.

Settings come from defaults, then ``RIFFLUX_*`` environment variables, then
flags (``settings_from_env``). The exit codes, ``fail`` and ``configure_logging``
are ``rifflux.exits``' (shared with ``mcp.bridge`` and ``http.serve``).

This module (and ``arguments``, the parser) imports only the standard library and
``rifflux.config``, ``errors`` and ``exits`` at the top: ``rifflux mcp`` parses its
arguments here before the MCP front starts, and the front must start within
milliseconds (see ``rifflux.mcp._fast_start.front``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence

from ..config import Settings, settings_from_env
from ..errors import (
    InvalidArgumentError,
    NotAnIndexError,
    NotFoundError,
    ReadOnlyError,
    RiffluxError,
)
from ..exits import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, configure_logging, fail
from .arguments import parse_args

logger = logging.getLogger("rifflux.cli")

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
    args = parse_args(argv)
    try:
        return args, _settings(args)
    except InvalidArgumentError as exc:
        return args, fail(f"{exc} (check the flags and RIFFLUX_* environment variables)",
                          EXIT_USAGE)


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
        kinds=globs(getattr(args, "kinds", None)),
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

    configure_logging(settings.log_level)
    try:
        return anyio.run(_until_terminated, command, args, settings)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BaseException as exc:  # the boundary: every failure becomes one line
        return failed(exc)


def failed(exc: BaseException) -> int:
    """The exit code of a command that raised ``exc``, its failure said in one line on
    stderr (what is no failure, a KeyboardInterrupt or SystemExit inside no group, is
    raised again)."""
    leaf = innermost(exc)
    if isinstance(leaf, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(leaf, BrokenPipeError):  # the reader left (`| head -1`): done
        stdout_gone()
        return EXIT_OK
    if isinstance(leaf, CommandError):
        return fail(str(leaf), leaf.code)
    if isinstance(leaf, NotFoundError):  # (a note the index does not hold: as `show`)
        return fail(str(leaf))
    if isinstance(leaf, InvalidArgumentError | NotAnIndexError | ReadOnlyError):
        # (--db: not an index; a mistake in the command, as a bad argument is)
        return fail(as_flags(str(leaf)), EXIT_USAGE)
    if isinstance(leaf, OSError) and leaf.filename:
        return fail(f"{leaf.strerror or leaf}: {leaf.filename} (check the paths given, "
                    "--db and RIFFLUX_DB_PATH)")
    if isinstance(leaf, RiffluxError | OSError):
        return fail(str(leaf))
    if not isinstance(leaf, Exception):
        raise exc
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
    # A SystemExit in a command (a library's exit) becomes a return: raised through
    # asyncio it skips the loop's clean-up, and an idle worker thread then keeps the
    # process alive. (A closed stdout is a BrokenPipeError: terminal.stdout_console.)
    return exc.code if isinstance(exc.code, int) else EXIT_FAILURE


def stdout_gone() -> None:
    """stdout's reader has gone, as `rifflux search q | head -1` does: what is still
    buffered goes nowhere, so that the flush at exit cannot fail with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):  # (no stdout at all: nothing to flush)
        pass


#: The library's names of the date filters, which begin their errors, as the flags.
_FLAGS = {"modified_after: ": "--since: ", "modified_before: ": "--before: "}


def as_flags(message: str) -> str:
    """An argument's error with the argument named as the command line's flag."""
    return next((flag + message[len(name):] for name, flag in _FLAGS.items()
                 if message.startswith(name)), message)


def innermost(exc: BaseException) -> BaseException:
    """The first exception inside ``exc``'s groups (``exc`` itself when it is none)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
