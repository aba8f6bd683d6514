"""The command line's arguments: one ``argparse`` parser for every command.

Standard library only, as ``entry`` (``rifflux mcp`` parses its arguments before the
MCP front starts).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ..config import LOG_LEVELS, default_db_path
from ..limits import DUPLICATES, MAX_DEPTH, MODES
from .history_args import add_history
from .model_args import add_model_options
from .note_args import add_note_parsers
from .setup_args import add_setup_parsers

#: The options that take a date or an age, which may be written -7d.
_WHEN_OPTIONS = ("--since", "--before")
_NEGATIVE_AGE = re.compile(r"^-\d+[a-zA-Z]$")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed (usage errors exit 2, as argparse does). An option the command does
    not take is reported with that command's usage, not the whole program's."""
    top = parser()
    args, extra = top.parse_known_args(_ages_joined(argv))
    if extra:
        import difflib  # (a mistake's answer: the closest option)

        command = _subcommands(top).get(getattr(args, "command", ""), top)
        close = [match for arg in extra if arg.startswith("-") for match in
                 difflib.get_close_matches(arg.split("=", 1)[0],
                                           command._option_string_actions, n=1)]
        command.error(f"unrecognized arguments: {' '.join(extra)}"
                      + (f" (did you mean {', '.join(close)}?)" if close else "")
                      + f" (see `{command.prog} --help`)")
    return args


class _Parser(argparse.ArgumentParser):
    """argparse's parser; a mistyped command is answered with the closest one."""

    def error(self, message: str) -> NoReturn:
        wrong = _UNKNOWN_COMMAND.match(message)
        if wrong is not None:
            import difflib  # (a mistyped command's answer: the closest one)

            close = difflib.get_close_matches(wrong["name"], list(_subcommands(self)), n=1)
            message = (f"unknown command {wrong['name']!r}"
                       + (f": did you mean {close[0]}?" if close else "")
                       + f" (`{self.prog} --help` lists them)")
        super().error(message)


#: argparse's words for a command it does not know.
_UNKNOWN_COMMAND = re.compile(r"^argument COMMAND: invalid choice: '(?P<name>[^']*)'")


def _subcommands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands' parsers by name (aliases too)."""
    return {name: parser for action in top._actions
            if isinstance(action, argparse._SubParsersAction)
            for name, parser in action.choices.items()}


def _ages_joined(argv: Sequence[str]) -> list[str]:
    """``--since -5d`` as ``--since=-5d``: argparse would read ``-5d`` as an option."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in _WHEN_OPTIONS and _NEGATIVE_AGE.match(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("rifflux")
        except PackageNotFoundError:
            found = "(not installed: run from a source tree)"
        sys.stdout.write(f"rifflux {found}\n")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command: every subparser
    # shares them, and SUPPRESS keeps an absent flag from overriding a given one.
    common = _Parser(add_help=False)
    g = common.add_argument_group("global options (flags beat RIFFLUX_* variables)")
    g.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                   help=f"index file, or a postgresql:// URL [RIFFLUX_DB_PATH; default "
                        f"{default_db_path()}]")
    add_model_options(g)
    g.add_argument("--include", metavar="GLOBS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated file globs to index, replacing the defaults; "
                        "repeatable [RIFFLUX_INCLUDE; default: markdown, text, PDF, PPTX "
                        "and DOCX files]")
    g.add_argument("--kinds", metavar="KINDS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated kinds of file to index instead: markdown, text, "
                        "pdf, pptx, docx, code, default (the first five); e.g. "
                        "default,code [RIFFLUX_KINDS]")
    g.add_argument("--exclude", metavar="GLOBS", action="append", default=argparse.SUPPRESS,
                   help="comma-separated globs to skip as well as the default ones (VCS, "
                        "virtualenv and cache folders); repeatable [RIFFLUX_EXCLUDE, which "
                        "replaces the defaults]")
    g.add_argument("--no-ignore-files", dest="use_ignore_files", action="store_false",
                   default=argparse.SUPPRESS,
                   help="index files that .gitignore, .ignore or .riffluxignore leave out "
                        "[RIFFLUX_USE_IGNORE_FILES=0]")
    g.add_argument("--no-history", dest="history", action="store_false",
                   default=argparse.SUPPRESS,
                   help="do not index or search the git history of the indexed folders "
                        "[RIFFLUX_HISTORY=0]")
    g.add_argument("--rrf-k", metavar="K", type=int, default=argparse.SUPPRESS,
                   help="the constant of the rrf score hybrid hits report beside their "
                        "fused score [RIFFLUX_RRF_K; default 60]")
    g.add_argument("--log-level", choices=LOG_LEVELS, type=str.upper,
                   default=argparse.SUPPRESS,
                   help="stderr log level [RIFFLUX_LOG_LEVEL; default WARNING]")
    g.add_argument("--writable", action="append", metavar="DIR", default=argparse.SUPPRESS,
                   help="a folder agents may write notes in (mcp, serve and the note "
                        "commands; mcp and serve index and watch it too); repeatable "
                        f"[RIFFLUX_WRITABLE, separated by {os.pathsep!r}]")

    top = _Parser(
        prog="rifflux", parents=[common],
        description="Local, offline hybrid (keyword + embedding) search over markdown folders.",
        epilog="Exit codes: 0 ok, 1 failure or no search results, 2 usage, 130 interrupted, "
               "143 terminated (SIGTERM), 129 hung up (SIGHUP).",
    )
    top.add_argument("--version", action=_Version, help="print the version and exit")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("index", parents=[common], help="index folders or files",
                       description="Bring the index up to date for each PATH (changed files only"
                                   " unless --force); shows progress on a terminal.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--force", action="store_true", help="re-read unchanged files too")
    p.add_argument("--yes", action="store_true",
                   help="index it even when it is / or your home folder")
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
    p.add_argument("--duplicates", choices=DUPLICATES, default="collapse",
                   help="collapse (default): a text held by several chunks is one hit, "
                        "naming the other places; all: every copy")
    p.add_argument("--hypothesis", metavar="TEXT",
                   help="what the answer would look like, as the notes would say it: the "
                        "semantic branch embeds it with the query (the words searched stay "
                        "the query's)")
    p.add_argument("--no-rerank", dest="rerank_search", action="store_false", default=None,
                   help="leave this search in its fused order, whatever --rerank says")
    p.add_argument("--json", action="store_true", help="print the search_rifflux JSON object")
    p.add_argument("--no-server", action="store_true",
                   help="search here even when a `rifflux serve` runs on the index (by "
                        "default it answers: its index, catalog and model are loaded)")
    p.add_argument("--verbose", action="store_true",
                   help="say on stderr whether a running `rifflux serve` answered, and why not")
    f = p.add_argument_group("filters (applied before ranking)")
    f.add_argument("--path", action="append", metavar="GLOB", dest="path_globs",
                   help="only files whose path in its indexed folder matches GLOB, as in "
                        ".gitignore ('docs/**', '**/adr-*.md'); repeatable, any may match")
    f.add_argument("--root", metavar="DIR", help="only files under this indexed folder "
                                                 "(its path, or its name if unique)")
    f.add_argument("--tag", action="append", metavar="TAG", dest="tags",
                   help="only files with this tag (front matter or #inline; 'a' matches "
                        "'a/b'); repeatable, all must be present")
    f.add_argument("--frontmatter", action="append", metavar="KEY=VALUE",
                   help="only files whose front matter has KEY equal to VALUE (or a list "
                        "holding it); repeatable, all must match")
    f.add_argument("--kind", action="append", metavar="KIND", dest="kinds",
                   help="only files of this kind: markdown, text, pdf, pptx, docx, code; "
                        "repeatable, any may match")
    f.add_argument("--lang", action="append", metavar="LANG", dest="lang",
                   help="only text written in this language: en, de, ja (ISO 639-1, as "
                        "hits' lang); repeatable, any may match")
    f.add_argument("--since", metavar="WHEN",
                   help="only files modified at or after WHEN: 2026-11-01, "
                        "2026-11-01T09:30, or an age: 7d (or -7d), 2w, 3m, 1y")
    f.add_argument("--before", metavar="WHEN", help="only files modified before WHEN")
    f.add_argument("--near", metavar="PATH",
                   help="only this note and the notes and files linked to or from it "
                        "(see --depth)")
    f.add_argument("--depth", type=_whole, metavar="N",
                   help=f"with --near: up to N links away, either way (1 to {MAX_DEPTH}; "
                        "default 1)")

    add_history(sub, common, _positive_int)

    p = sub.add_parser("show", parents=[common], help="print lines of a file, or a chunk",
                       description="Print an indexed file's lines with line numbers "
                                   "(PATH:START-END as search prints it, PATH:LINE, or PATH; "
                                   "a PDF's or a deck's range is of pages or slides: "
                                   "paper.pdf:14), a chunk by its CHUNK_ID with where it "
                                   "is, or a commit of the history by its hash (at least "
                                   "its first 4 digits).")
    p.add_argument("target", metavar="PATH[:START[-END]] | CHUNK_ID | COMMIT")
    p.add_argument("--root", metavar="DIR", help="the indexed folder PATH is relative to, "
                                                 "when several hold it")
    p.add_argument("--json", action="store_true",
                   help="print the lines (as MCP get_file gives a range) or the chunk (as "
                        "get_chunk gives it) as JSON")

    p = sub.add_parser("links", parents=[common], help="show a note's links, both ways",
                       description="Print the links a note makes ([[wikilinks]], embeds, "
                                   "markdown links to notes and to the other files the "
                                   "index reads, [[paper.pdf]]), where each resolves, and "
                                   "the notes that link to it (or to a PDF, deck...).")
    p.add_argument("path", metavar="PATH", help="the note, as search prints it")
    p.add_argument("--root", metavar="DIR", help="the indexed folder PATH is relative to, "
                                                 "when several hold it")
    p.add_argument("--json", action="store_true", help="print the links object as JSON")

    p = sub.add_parser("neighbors", parents=[common], help="list the notes near a note",
                       description="Print the notes and files at most --depth links away "
                                   "from a note (or file: the notes citing a PDF), whichever "
                                   "way the links go, nearest first.")
    p.add_argument("path", metavar="PATH", help="the note, as search prints it")
    p.add_argument("--depth", type=_whole, default=1, metavar="N",
                   help=f"how many links away (1 to {MAX_DEPTH}; default 1)")
    p.add_argument("--root", metavar="DIR", help="the indexed folder PATH is relative to, "
                                                 "when several hold it")
    p.add_argument("--json", action="store_true", help="print the list as JSON")

    p = sub.add_parser("tags", parents=[common], help="list the tags in use",
                       description="Print the tags of the indexed notes (front matter and "
                                   "#inline; a nested a/b also counts as a), each with how "
                                   "many files carry it, most used first.")
    p.add_argument("--path", action="append", metavar="GLOB", dest="path_globs",
                   help="count only files whose path in its indexed folder matches GLOB "
                        "('docs/**'); repeatable, any may match")
    p.add_argument("--json", action="store_true", help="print the list as JSON")

    p = sub.add_parser("files", parents=[common], help="list the indexed files",
                       description="Print every indexed file with its number of chunks and "
                                   "its title, folder by folder.")
    p.add_argument("--root", metavar="DIR", help="only the files of this indexed folder "
                                                 "(its path, or its name if unique)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")

    p = sub.add_parser("status", parents=[common], help="show what is indexed")
    p.add_argument("--json", action="store_true", help="print the index_status JSON object")
    p.add_argument("--model", action="store_true",
                   help="load the embedding model (a second or two) to show how it runs and "
                        "whether it loads; without it, status never loads the model")

    p = sub.add_parser("migrate", parents=[common],
                       help="copy an index between SQLite and PostgreSQL, either way",
                       description="Copy an index, vectors included, into a new SQLite file "
                                   "or an empty PostgreSQL database: an SQLite index into "
                                   "PostgreSQL, or a PostgreSQL index back into a file. "
                                   "Nothing is read or embedded again.")
    p.add_argument("--from", dest="source", metavar="INDEX",
                   help="the index to copy: an SQLite file, or a PostgreSQL URL "
                        "postgresql://user@host/dbname (default: --db, or RIFFLUX_DB_PATH)")
    p.add_argument("--to", dest="target", metavar="INDEX", required=True,
                   help="where to copy it: a new SQLite file (or one that holds no "
                        "index), or an empty PostgreSQL database (postgresql://user@host/"
                        "dbname)")
    p.add_argument("--json", action="store_true", help="print what was copied as JSON")

    p = sub.add_parser("watch", parents=[common], help="index folders and keep them up to date",
                       description="Index each PATH, then reindex changed files as they change "
                                   "(foreground; Ctrl-C stops). Logs each batch.")
    p.add_argument("paths", nargs="+", metavar="PATH")

    add_note_parsers(sub, common)
    add_setup_parsers(sub, common)

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
    p.add_argument("--connect", metavar="URL|auto",
                   help="pass everything on to a running `rifflux serve` (its URL, e.g. "
                        "http://127.0.0.1:7474/mcp) instead of opening the index; auto: the "
                        "server running on --db if there is one, else serve as usual")
    p.add_argument("--token", help="with --connect URL: the server's token [RIFFLUX_TOKEN]")
    _serve_parser(sub, common)
    return top


def _serve_parser(sub: argparse._SubParsersAction[_Parser],
                  common: _Parser) -> None:
    p = sub.add_parser("serve", parents=[common], help="serve MCP, a JSON API and a page over HTTP",
                       description="One process for every agent and person: MCP (Streamable "
                                   "HTTP) at /mcp, a JSON API under /api, a search page at /.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; any other needs a token)")
    p.add_argument("--port", type=int, default=7474, help="port (default 7474; 0: any free one)")
    p.add_argument("--watch", action="append", metavar="PATH", default=argparse.SUPPRESS,
                   help="keep this folder indexed while serving; repeatable "
                        f"[RIFFLUX_WATCH_PATHS, separated by {os.pathsep!r}]")
    p.add_argument("--token", help="require `Authorization: Bearer TOKEN` on every route but "
                                   "/healthz [RIFFLUX_TOKEN]")
    p.add_argument("--read-only", action="store_true",
                   help="search and read only: reindex and forget answer 403")
    p.add_argument("--allow-origin", action="append", metavar="ORIGIN",
                   help="let pages of this origin call the server too (http://host:port); "
                        "repeatable")
    p.add_argument("--allow-host", action="append", metavar="NAME",
                   help="answer to this host name too (besides loopback names and IP "
                        "addresses); repeatable")
    p.add_argument("--max-body", type=_positive_int, default=1024 * 1024, metavar="BYTES",
                   help="refuse request bodies over BYTES with 413 (default 1 MiB)")
    p.add_argument("--no-access-log", dest="access_log", action="store_false",
                   help="no line on stderr per request")


def _whole(raw: str) -> int:
    """A whole number (its range is checked where the value is used, with the same
    error whichever side of it a value falls)."""
    try:
        return int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None


def _positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
