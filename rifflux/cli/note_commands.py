"""The note commands (arguments in ``note_args``): each opens the index with the writable
folders (without watching them: a command is over in a moment), makes one change, waits
for its vectors (as ``rifflux index`` does: the note is then found by meaning too, and
the process never exits while the model loads), and prints what it did; ``--json``
prints the library's answer."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from ..api import Rifflux
from ..config import Settings
from ..core.note_paths import note_path
from ..core.scan import Globs
from ..errors import InvalidArgumentError, NotFoundError, NotWritableError, RiffluxError
from ..exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from ..note_types import NoteChange
from ..notes.desk import OFF
from .common import require_index
from .entry import Command, CommandError, as_flags, innermost
from .note_args import NOTE_COMMAND_NAMES
from .plain import shown
from .results import out as results_out


async def _text(value: str) -> str:
    """A text argument; ``-`` reads it from stdin."""
    if value != "-":
        return value
    return await anyio.to_thread.run_sync(sys.stdin.read)


def _say(args: argparse.Namespace, done: NoteChange, what: str) -> int:
    if args.json:
        sys.stdout.write(json.dumps(done, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    lines = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in done["lines"])
    vector = "; vectors " + ("stored" if done["vector_stored"] else "pending")
    sha = f"sha256 {done['sha256']}" if done["sha256"] else f"in {done.get('trash_path')}"
    out = results_out()
    out.print(f"{what} {done['folder']}/{done['path']} ({sha}"
              f"{f'; lines {lines} written' if lines else ''}"
              f"{vector if done['sha256'] else ''})", markup=False)
    for link in done.get("links_updated", []):
        out.print(f"  {link['path']}:{link['line']}: {link['before']} -> {link['after']}",
                  markup=False)
    for left in done.get("links_not_updated", []):
        out.print(f"  not updated: {left['path']}: {left['reason']}", markup=False)
    return EXIT_OK


def _opened(settings: Settings, *paths: str) -> Rifflux:
    """The index, for a note command on ``paths``: what the library would refuse without
    looking at the disk (writing is off, a path that may not be a note's) is refused
    before anything is opened, so a refused command makes no index, folder or lock."""
    if not settings.writable:
        raise NotWritableError(OFF)
    globs = Globs(settings.include, settings.exclude)
    for path in paths:
        if not path.startswith(("/", "~")):  # (an absolute one: its folder, once open)
            note_path(path, globs)
    return Rifflux(settings=settings, watch_writable=False)


async def _stored(rf: Rifflux, done: NoteChange) -> NoteChange:
    """The answer once the change's vectors are stored (its job has completed)."""
    if not done["vector_stored"]:
        job = await rf.wait_for_job(done["job_id"])
        done = {**done, "vector_stored": job["status"] == "completed"}
    return done


async def _write(args: argparse.Namespace, settings: Settings) -> int:
    content = await _text(args.content)
    async with _opened(settings, args.path) as rf:
        done = await rf.write_note(args.path, content, title=args.title, tags=args.tags,
                                   if_match=args.if_match, overwrite=args.overwrite,
                                   folder=args.folder)
        done = await _stored(rf, done)
    return _say(args, done, "wrote")


async def _edit(args: argparse.Namespace, settings: Settings) -> int:
    if args.find is not None and args.replace is None:
        raise CommandError("--find needs --replace (the text to put in its place; '' "
                           "deletes it)", EXIT_USAGE)
    edit: dict[str, Any] = {
        "append": None if args.append is None else await _text(args.append),
        "prepend": None if args.prepend is None else await _text(args.prepend),
        "replace_section": None if args.replace_section is None else (
            args.replace_section[0], await _text(args.replace_section[1])),
        "find": args.find, "replace": args.replace}
    async with _opened(settings, args.path) as rf:
        done = await rf.edit_note(args.path, **edit, replace_all=args.replace_all,
                                  if_match=args.if_match, folder=args.folder)
        done = await _stored(rf, done)
    return _say(args, done, "edited")


async def _move(args: argparse.Namespace, settings: Settings) -> int:
    async with _opened(settings, args.src, args.dst) as rf:
        done = await rf.move_note(args.src, args.dst, update_links=args.update_links,
                                  if_match=args.if_match, folder=args.folder)
        done = await _stored(rf, done)
    return _say(args, done, f"moved {done['moved_from']} to")


async def _delete(args: argparse.Namespace, settings: Settings) -> int:
    async with _opened(settings, args.path) as rf:
        done = await rf.delete_note(args.path, if_match=args.if_match, folder=args.folder)
        done = await _stored(rf, done)
    return _say(args, done, "deleted")


async def _restore(args: argparse.Namespace, settings: Settings) -> int:
    async with _opened(settings, args.path) as rf:
        done = await rf.restore_note(args.path, folder=args.folder)
        done = await _stored(rf, done)
    return _say(args, done, "restored")


async def _recent(args: argparse.Namespace, settings: Settings) -> int:
    await require_index(settings)  # (a reading command: it makes no index)
    async with Rifflux(settings=settings, watch_writable=False) as rf:
        notes = await rf.recent(args.limit, args.since, root=args.root)
    if args.json:
        sys.stdout.write(json.dumps(notes, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    out = results_out()
    for note in notes:
        where = shown(Path(note["root"]) / note["path"])
        out.print(f"{note['modified']}  {where}  {note['title']}", markup=False)
    return EXIT_OK


#: The library's words (MCP's too) in its messages, as the command line says them: its
#: calls as commands, its arguments as the note commands' flags (in this order: a longer
#: phrase before the words in it).
_CLI_WORDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bif_match=(\w+)"), r"--if-match \1"),
    (re.compile(r"\bif_match\b"), "--if-match"),
    (re.compile(r"\boverwrite=true\b"), "--overwrite"),
    (re.compile(r"\b(write_note|edit_note) with overwrite\b"),
     "`rifflux write-note --overwrite`"),
    (re.compile(r"\bpass replace_all\b"), "pass --all"),
    (re.compile(r"\breplace_all\b"), "--all"),
    (re.compile(r"\breplace_section\b"), "--replace-section"),
    (re.compile(r"\bupdate_links\b"), "--no-update-links"),
    (re.compile(r"\bappend, prepend, --replace-section or find \(with replace\)"),
     "--append, --prepend, --replace-section or --find (with --replace)"),
    (re.compile(r"^(append|prepend|find) is empty\b"), r"--\1 is empty"),
    (re.compile(r"^find needs replace\b"), "--find needs --replace"),
    (re.compile(r"^find text\b"), "--find's text"),
    (re.compile(r"\bleave title and tags out\b"), "leave --title and --tag out"),
    (re.compile(r"^limit must be\b"), "--limit must be"),
    (re.compile(r"\bget_file\b"), "`rifflux show`"),
    (re.compile(r"\bedit_note\b"), "`rifflux edit-note`"),
    (re.compile(r"\bwrite_note\b"), "`rifflux write-note`"),
    (re.compile(r"\bmove_note\b"), "`rifflux move-note`"),
    (re.compile(r"\bdelete_note\b"), "`rifflux delete-note`"),
    (re.compile(r"\brestore_note\b"), "`rifflux restore-note`"),
    (re.compile(r"\brecent lists\b"), "`rifflux recent` lists"),
    (re.compile(r"\(Rifflux\(writable=\[DIR\]\), --writable DIR,"), "(--writable DIR"),
]


def cli_words(message: str, keep: Sequence[str] = ()) -> str:
    """``message`` with the library's names of calls and arguments as the command line's;
    the strings of ``keep`` (the paths named: ``edit_note.md``) as they are."""
    kept = sorted({k for k in keep if k}, key=len, reverse=True)
    parts = re.split("(" + "|".join(map(re.escape, kept)) + ")", message) if kept else [message]
    for i in range(0, len(parts), 2):  # (the odd parts are the kept strings)
        for pattern, words in _CLI_WORDS:
            parts[i] = pattern.sub(words, parts[i])
    return "".join(parts)


def _in_cli_words(command: Command) -> Command:
    async def run(args: argparse.Namespace, settings: Settings) -> int:
        try:
            return await command(args, settings)
        except BaseException as exc:  # (as ``entry.run`` reads it: the first inside groups)
            error = innermost(exc)
            if not isinstance(error, RiffluxError):
                raise
            code = (EXIT_USAGE if isinstance(error, InvalidArgumentError)
                    and not isinstance(error, NotFoundError) else EXIT_FAILURE)
            named = [str(getattr(args, name, None) or "") for name in ("path", "src", "dst")]
            raise CommandError(cli_words(as_flags(str(error)), named), code) from exc

    return run


_BY_NAME: dict[str, Command] = {
    name: _in_cli_words(command) for name, command in (
        ("write-note", _write), ("edit-note", _edit), ("move-note", _move),
        ("delete-note", _delete), ("restore-note", _restore), ("recent", _recent))}
#: Every note command, under both of its names.
NOTE_COMMANDS: dict[str, Command] = {
    **_BY_NAME, **{NOTE_COMMAND_NAMES[name]: run for name, run in _BY_NAME.items()}}
