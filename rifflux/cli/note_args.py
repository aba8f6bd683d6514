"""The note commands' arguments: ``write-note``, ``edit-note``, ``move-note``,
``delete-note``, ``restore-note`` and ``recent`` (each also answers to its library name,
``write_note`` ...). Standard library only, as ``entry`` is; the commands themselves are
``note_commands``."""

from __future__ import annotations

import argparse
from typing import Any

#: Command name -> its other spelling (the library's and the MCP tool's name).
NOTE_COMMAND_NAMES = {"write-note": "write_note", "edit-note": "edit_note",
                      "move-note": "move_note", "delete-note": "delete_note",
                      "restore-note": "restore_note", "recent": "recent"}

_TEXT = "the text, or - to read it from stdin"


def add_note_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """The note commands, on the ``rifflux`` command line's subparsers ``sub``."""

    def command(name: str, help_: str, description: str) -> argparse.ArgumentParser:
        other = NOTE_COMMAND_NAMES[name]
        p: argparse.ArgumentParser = sub.add_parser(
            name, parents=[common], help=help_, description=description,
            aliases=[other] if other != name else [])
        p.add_argument("--json", action="store_true", help="print the answer as JSON")
        return p

    def where(p: argparse.ArgumentParser, *, if_match: bool = True) -> None:
        p.add_argument("--folder", metavar="DIR",
                       help="the writable folder (of several given with --writable)")
        if if_match:
            p.add_argument("--if-match", metavar="SHA256",
                           help="change the note only if its sha256 is this (as you last "
                                "read it): a conflict otherwise, and nothing is written")

    p = command("write-note", "write a note in a writable folder",
                "Create the note PATH (relative to the --writable folder, ending in .md) "
                "and index it; it is searchable when the command returns.")
    p.add_argument("path", metavar="PATH")
    p.add_argument("content", metavar="TEXT", help=_TEXT)
    p.add_argument("--title", help="a title for its front matter")
    p.add_argument("--tag", action="append", dest="tags", metavar="TAG",
                   help="a tag for its front matter; repeatable")
    p.add_argument("--overwrite", action="store_true", help="replace the note if it exists")
    where(p)

    p = command("edit-note", "edit one part of a note",
                "Edit one part of the note PATH, keeping every other byte: give one of "
                "--append, --prepend, --replace-section or --find with --replace.")
    p.add_argument("path", metavar="PATH")
    edit = p.add_mutually_exclusive_group(required=True)
    edit.add_argument("--append", metavar="TEXT", help=f"add a block at the end ({_TEXT})")
    edit.add_argument("--prepend", metavar="TEXT",
                      help=f"add a block at the top, after the front matter ({_TEXT})")
    edit.add_argument("--replace-section", nargs=2, metavar=("HEADING", "TEXT"),
                      help="replace the text under HEADING (its text or 'A > B' breadcrumb)")
    edit.add_argument("--find", metavar="TEXT", help="exact text to replace (with --replace)")
    p.add_argument("--replace", metavar="TEXT", help="what --find's text becomes")
    p.add_argument("--all", action="store_true", dest="replace_all",
                   help="replace every occurrence of --find")
    where(p)

    p = command("move-note", "move or rename a note, fixing the links to it",
                "Move the note SRC to DST within its writable folder; the links to it in "
                "the folder's notes are rewritten unless --no-update-links.")
    p.add_argument("src", metavar="SRC")
    p.add_argument("dst", metavar="DST")
    p.add_argument("--no-update-links", dest="update_links", action="store_false",
                   help="leave the links to it as they are")
    where(p)

    p = command("delete-note", "move a note to the trash",
                "Move the note PATH to .rifflux-trash/ in its writable folder (never "
                "indexed); restore-note brings it back.")
    p.add_argument("path", metavar="PATH")
    where(p)

    p = command("restore-note", "bring a deleted note back",
                "Bring back the note last deleted at PATH.")
    p.add_argument("path", metavar="PATH")
    where(p, if_match=False)

    p = command("recent", "list the notes changed most recently",
                "List the notes changed most recently, by anyone, newest first.")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="how many (default 20, at most 1000)")
    p.add_argument("--since", metavar="WHEN",
                   help="only notes changed at or after WHEN: 2026-11-01, or an age: 7d, 2w")
    p.add_argument("--root", metavar="DIR", help="only notes under this indexed folder")
