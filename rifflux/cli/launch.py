"""The console scripts' entry points: ``rifflux`` and ``rifflux-mcp``.

The arguments are parsed first (``entry``: standard library only). ``rifflux
mcp`` then starts the MCP front, which answers the handshake while the rest
loads, and runs the server behind it (``rifflux.mcp._fast_start``); every other
command runs from ``commands``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..config import Settings
from ..location import DatabaseUrl


def main(argv: Sequence[str] | None = None) -> int:
    """``rifflux``: the command line, or the MCP server for ``rifflux mcp``; the exit code.

    While the model still loads in the background at the end (a search interrupted, an
    MCP client gone during the warm-up, a server stopped), this does not return: the
    process ends with the exit code at once (``exits.end``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Ctrl-C while modules are still importing (before a command's own handling)
    # exits 130 without a traceback too.
    try:
        code = _main(args)
    except KeyboardInterrupt:
        code = 130
    from ..exits import end

    return end(code)


def mcp_main() -> int:
    """``rifflux-mcp``: the same as ``rifflux mcp``."""
    return main(["mcp", *sys.argv[1:]])


#: The commands that embed texts or queries with the model.
_EMBEDS = frozenset({"index", "search", "watch"})
#: The long-lived commands: their model warms up in the background from the start (a
#: one-shot command loads it only if it needs a vector: ``Settings.model_warmup``).
_LONG_LIVED = frozenset({"mcp", "serve", "watch"})
#: The commands that only read the index: they open a file this process cannot write
#: read-only (as `rifflux serve --read-only` does) rather than fail.
_READS = frozenset({"search", "status", "show", "links", "neighbors", "tags", "files"})


def _notes(command: str) -> bool:
    from .note_args import NOTE_COMMAND_NAMES

    return command in NOTE_COMMAND_NAMES or command in NOTE_COMMAND_NAMES.values()


def _main(argv: list[str]) -> int:
    from .. import exits
    from . import entry

    args, settings = entry.parse(argv)
    if isinstance(settings, int):
        return settings
    if args.command not in _LONG_LIVED and getattr(args, "mode", None) in (None, "lexical"):
        # (a semantic or hybrid search needs the model: it loads while the index opens)
        settings = settings.with_overrides(model_warmup=False)
    if args.command not in _LONG_LIVED:
        # (a one-shot command reads the history only where it asks: index, history, show)
        settings = settings.with_overrides(history_unasked=False)
    if settings.writable and args.command not in _LONG_LIVED and not _notes(args.command):
        # (RIFFLUX_WRITABLE set for the servers: a one-shot read neither watches the
        # writable folders nor indexes them, so a lexical search still loads no model)
        settings = settings.with_overrides(writable=())
    if settings.watch_paths and args.command not in _LONG_LIVED:
        # (the same for RIFFLUX_WATCH_PATHS: only mcp, serve and watch watch folders)
        settings = settings.with_overrides(watch_paths=())
    settings = _read_only_if_unwritable(args, settings)
    if args.command in _READS or args.command == "history":
        # (a reading command never re-embeds an index another model's vectors are in:
        # its semantic search is off and says so; `rifflux index` re-embeds it)
        settings = settings.with_overrides(switch_model=False)
    if args.command == "mcp":  # (the server stays up and says what is wrong instead)
        if args.connect:  # a stdio bridge to a running `rifflux serve`
            from ..mcp.bridge import main as bridge

            code = bridge(args, settings)
            if code is not None:
                return code  # (None: auto found no server; serve here as usual)
        return _mcp(args, settings)
    if args.command == "serve":
        return _serve(args, settings)
    if args.command == "setup":  # (no index, no event loop: files of other programs)
        from .setup.command import run as setup

        return setup(args)
    if args.command == "doctor":  # (it opens the index read-only, whatever the command)
        from .doctor.command import doctor

        return entry.run(doctor, args, settings.with_overrides(watch_paths=(), writable=()))
    if args.command == "search":  # a running `rifflux serve` on the index answers at once
        from .remote import search_on_server

        code = search_on_server(args, settings)
        if code is not None:
            return code
    if (args.command in _EMBEDS and settings.model_dir is not None
            and settings.embedding_backend != "hash"):  # (hash reads no model)
        from ..core.model_dir import check_model_dir
        from ..errors import EmbeddingError

        try:  # a model directory given by name that is not there is a configuration error
            check_model_dir(settings.model_dir.absolute())
        except EmbeddingError as exc:
            return exits.fail(str(exc), exits.EXIT_USAGE)
    from . import direct

    # a one-shot read of an SQLite index, answered in this thread (no actors, no loop)
    code = direct.run(args, settings)
    if code is not None:
        return code
    from .commands import COMMANDS  # the slow imports (rich, numpy, aiosqlite) start here
    from .note_commands import NOTE_COMMANDS

    return entry.run({**COMMANDS, **NOTE_COMMANDS}[args.command], args, settings)


def _read_only_if_unwritable(args: argparse.Namespace, settings: Settings) -> Settings:
    """A read command on a PostgreSQL index opens it read-only (it writes nothing there;
    a streaming replica refuses writes). One on an index file this process cannot write
    (or in a folder it cannot write) opens it read-only, saying so with --verbose, and
    reads it as it is now if it cannot follow it (``Settings.read_snapshot``); the
    commands that write keep the error that says to make it writable."""
    db = settings.db_path
    if args.command not in _READS or settings.read_only:
        return settings
    if isinstance(db, DatabaseUrl):  # (a shared database, a streaming replica's too, which
        return settings.with_overrides(read_only=True)  # refuses every write: read only)
    if not isinstance(db, Path):
        return settings
    db = db.expanduser()
    if not db.is_file() or (os.access(db, os.W_OK) and os.access(db.absolute().parent,
                                                                 os.W_OK)):
        return settings
    if getattr(args, "verbose", False) and sys.stderr is not None:
        sys.stderr.write(f"rifflux: this process cannot write the index {db}: "
                         "reading it read-only\n")
    # (a one-shot read: an index it cannot share is read as it is now)
    return settings.with_overrides(read_only=True, read_snapshot=True)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from .. import exits
    from ..errors import RiffluxError
    from ..http.options import listen, options_from_args, refusal

    try:  # (refused in a moment, before anything heavy loads)
        options = options_from_args(args)
        why = refusal(options, settings)
        if why is not None:
            return exits.fail(why, exits.EXIT_USAGE)
        sock = listen(options.host, options.port)
    except RiffluxError as exc:
        return exits.fail(str(exc), exits.EXIT_USAGE if isinstance(exc, ValueError)
                          else exits.EXIT_FAILURE)
    from ..http.serve import main as serve  # (FastAPI, uvicorn and the SDK load here)

    return serve(settings, options, sock)


def _mcp(args: argparse.Namespace, settings: Settings) -> int:
    from .. import exits
    from ..mcp._fast_start.front import start_front
    from ..mcp.instructions import folders_of
    from . import entry

    if sys.stdin is not None and sys.stdin.isatty() and sys.stderr is not None:
        # started by hand: say what this is, since it waits silently for a client
        sys.stderr.write(f"rifflux: serving MCP on stdio (index {settings.db_path}); an MCP "
                         "client starts this command and talks to it over stdin/stdout. "
                         "Ctrl-C stops.\n")
    try:
        # (the searches it takes are answered by mcp._fast_start.early once the index opens)
        front = start_front(take_early=True, writes=bool(settings.writable),
                            folders=lambda: folders_of(settings.db_path))
    except OSError as exc:
        return exits.fail(f"cannot serve MCP: {exc}; an MCP client starts `rifflux mcp` "
                          "with its stdin and stdout connected to pipes")

    async def serve(args: argparse.Namespace, settings: Settings) -> int:
        # Imported here, after the front has started; the SDK is imported in a worker
        # thread while the index opens and the first searches are answered.
        from ..mcp._fast_start.early import serve_with_early_searches

        await serve_with_early_searches(settings, front)
        return exits.EXIT_OK

    return entry.run(serve, args, settings)
