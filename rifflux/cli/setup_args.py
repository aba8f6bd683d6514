"""The arguments of the commands that set Rifflux up and check it: ``setup`` and
``doctor``. Standard library only, as ``arguments`` is; the commands themselves are in
``setup/`` and ``doctor/``, which only these commands import (a search does not)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["SETUP_CLIENTS", "add_setup_parsers"]

#: ``rifflux setup``'s clients (``setup/clients.py`` describes each), and ``skill``.
SETUP_CLIENTS = ("claude-desktop", "claude-code", "cursor", "vscode", "vscode-workspace",
                 "windsurf", "zed", "codex", "gemini")


def add_setup_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """``setup`` and ``doctor``, on the ``rifflux`` command line's subparsers ``sub``."""
    p = sub.add_parser(
        "setup", parents=[common], help="add Rifflux to an MCP client (Claude, Cursor, ...)",
        description="Add (or update) one `rifflux` entry in an MCP client's configuration, "
                    "running this installation's rifflux by absolute path; every other "
                    "entry, its key order and comments are kept, the previous file is kept "
                    "beside it (NAME.rifflux.bak), and a second run changes nothing. "
                    "--global options --db, --writable, --embed-url and --embed-model are "
                    "written into the entry.",
        epilog="Clients: " + ", ".join(SETUP_CLIENTS) + "; `setup skill` installs the "
               "skill file (Claude Code: ~/.claude/skills/rifflux/SKILL.md).")
    p.add_argument("client", nargs="?", choices=[*SETUP_CLIENTS, "skill"], metavar="CLIENT",
                   help="the client to configure (" + ", ".join(SETUP_CLIENTS) + "), or "
                        "skill")
    p.add_argument("--list", action="store_true",
                   help="which clients are here, and whether Rifflux is configured in each")
    p.add_argument("--json", action="store_true", help="with --list: as JSON")
    p.add_argument("--remove", action="store_true", help="take the rifflux entry out again")
    p.add_argument("--dry-run", action="store_true",
                   help="print the change as a diff; write nothing")
    p.add_argument("--print", action="store_true",
                   help="print the entry to paste into a client's configuration (any "
                        "client: without CLIENT, the mcpServers block most clients read)")
    p.add_argument("--config", metavar="PATH",
                   help="the configuration file to change, instead of the client's own")
    p.add_argument("--connect", metavar="auto|URL",
                   help="the entry runs `rifflux mcp --connect auto` (shares a running "
                        "`rifflux serve` on the index, else serves itself) or --connect URL")
    p.add_argument("--url", metavar="URL",
                   help="a running `rifflux serve`'s MCP endpoint "
                        "(http://127.0.0.1:7474/mcp): clients that speak HTTP reach it "
                        "directly, the others through the stdio bridge")
    p.add_argument("--dir", metavar="DIR",
                   help="with `setup skill`: the skills folder to install into (the skill "
                        "goes in DIR/rifflux/SKILL.md)")

    p = sub.add_parser(
        "doctor", parents=[common], help="check the install, model, index and clients",
        description="Check everything Rifflux needs and say how to fix what is wrong: the "
                    "install, the model (and its speed here), the index (integrity, counts, "
                    "pending vectors, folders, a server on it), the watcher's limits, disk "
                    "space, a PostgreSQL URL, and each MCP client's configuration. Exits 0 "
                    "when all is well, 1 when something needs attention.")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
