"""``rifflux setup``: the command, from its arguments to its exit code.

``rifflux setup CLIENT`` adds (or updates) the ``rifflux`` entry in the client's
configuration file; ``--remove`` takes it out, ``--dry-run`` prints the diff instead of
writing, ``--list`` says which clients are here and whether each is configured,
``--print`` prints the block to paste into any other client, and ``setup skill``
installs the skill file. Nothing here is asynchronous and nothing opens the index.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from ...exits import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, fail
from .clients import CLIENTS, Client, client_named, here
from .document import current_entry, with_entry, without_entry
from .entry import NAME, Launch, entry_for, launch
from .files import BACKUP_SUFFIX, Loaded, SetupError, diff, load, save
from .skill import skill_folder, skill_text
from .states import ClientState, client_states

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """The command; its exit code (0 done or nothing to do, 1 a file refused, 2 usage)."""
    try:
        return _run(args)
    except SetupError as exc:
        return fail(str(exc), EXIT_FAILURE)
    except _Usage as exc:
        return fail(str(exc), EXIT_USAGE)


class _Usage(Exception):
    pass


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _run(args: argparse.Namespace) -> int:
    place = here()
    if args.list or (args.client is None and not args.print):
        return _list(client_states(place), args.json, hint=args.client is None
                     and not args.list)
    if args.url and args.connect:
        raise _Usage("give --url (the client reaches a running `rifflux serve` over HTTP) or "
                     "--connect (it starts the stdio bridge), not both")
    if (args.remove or args.client == "skill") and (args.url or args.connect or args.print):
        raise _Usage("--remove and `setup skill` take no --url, --connect or --print")
    if args.client == "skill":
        return _skill(args, place)
    if args.dir:
        raise _Usage("--dir is for `rifflux setup skill`")
    how = launch(db=getattr(args, "db", None), writable=getattr(args, "writable", None) or (),
                 connect=args.connect, url=args.url, embed_url=getattr(args, "embed_url", None),
                 embed_model=getattr(args, "embed_model", None))
    if args.print:
        return _print(None if args.client is None else client_named(args.client), how)
    client = client_named(args.client)
    path = (Path(args.config).expanduser().absolute() if args.config
            else Path(client.path(place)))
    loaded = load(path)
    where = str(loaded.target)
    if args.remove:
        text = without_entry(client, loaded.text, where)
        done = f"removed the {NAME} entry from {path}"
        same = f"{path} has no {NAME} entry: nothing changed"
    else:
        text = with_entry(client, loaded.text, entry_for(client, how), where)
        done = (f"{'updated the' if _has_entry(client, loaded) else 'added a'} {NAME} entry "
                f"in {path}")
        same = f"the {NAME} entry in {path} is already as asked: nothing changed"
    if text == loaded.text:
        _out(f"{client.name}: {same}")
        return EXIT_OK
    if args.dry_run:
        sys.stdout.write(diff(loaded, text))
        sys.stderr.write(f"rifflux: dry run: {path} was not changed\n")
        return EXIT_OK
    backup = save(loaded, text)
    _out(f"{client.name}: {done}" + (f" (the previous file is {backup.name}, beside it)"
                                     if backup else ""))
    if not args.remove:
        _out(f"  it runs: {how.url if how.url and client.http else _command_line(how)}")
        if how.url and client.http is None:
            _out(f"  ({client.name} starts commands only: the bridge passes everything on "
                 f"to {how.url})")
    _out(f"  next: {client.restart}" + ("" if args.remove else
                                        "; `rifflux doctor` checks the whole setup"))
    return EXIT_OK


def _has_entry(client: Client, loaded: Loaded) -> bool:
    return current_entry(client, loaded.text, str(loaded.target)) is not None


def _command_line(how: Launch) -> str:
    return shlex.join([how.command, *how.args])


def _print(client: Client | None, how: Launch) -> int:
    """The block to paste: a client's own, or the ``mcpServers`` shape most clients read."""
    if client is not None and client.format == "toml":
        import tomlkit

        doc = tomlkit.document()
        servers = tomlkit.table(is_super_table=True)
        servers[NAME] = entry_for(client, how)
        doc[client.servers] = servers
        sys.stdout.write(tomlkit.dumps(doc))
        return EXIT_OK
    key = client.servers if client else "mcpServers"
    entry = entry_for(client, how) if client else {"command": how.command,
                                                     "args": list(how.args)}
    _out(json.dumps({key: {NAME: entry}}, indent=2, ensure_ascii=False))
    return EXIT_OK


def _list(states: list[ClientState], as_json: bool, *, hint: bool) -> int:
    if as_json:
        _out(json.dumps([s.as_json() for s in states], indent=2))
        return EXIT_OK
    width = max(len(c.key) for c in CLIENTS)
    for state in states:
        _out(f"{state.client.key:<{width}}  {_word(state):<14}  {_home(state.path)}")
        for said in (state.runs and f"runs {state.runs}", state.problem, state.stale,
                     state.note):
            if said:
                _out(f"{'':<{width}}  {'':<14}  {said}")
    if hint:
        _out("\n`rifflux setup CLIENT` adds Rifflux to a client (--dry-run shows the change "
             "first); `rifflux setup --print` prints the block for any other client.")
    return EXIT_OK


def _word(state: ClientState) -> str:
    if state.problem:
        return "unreadable"
    if state.stale:
        return "broken"
    if state.configured:
        return "configured"
    return "not configured" if state.installed else "not installed"


def _home(path: Path) -> str:
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if text.startswith(home + os.sep) else text


def _skill(args: argparse.Namespace, place: Any) -> int:
    folder = skill_folder(place, args.dir)
    path = folder / "SKILL.md"
    loaded = load(path)
    text = "" if args.remove else skill_text()
    if text == loaded.text or (args.remove and not loaded.exists):
        _out(f"skill: {path} {'is not there' if args.remove else 'is up to date'}: "
             "nothing changed")
        return EXIT_OK
    if args.dry_run:
        sys.stdout.write(diff(loaded, text))
        sys.stderr.write(f"rifflux: dry run: {path} was not changed\n")
        return EXIT_OK
    if args.remove:
        shutil.copy2(loaded.target, loaded.target.with_name(path.name + BACKUP_SUFFIX))
        os.unlink(loaded.target)
        _out(f"skill: removed {path} (kept as {path.name}{BACKUP_SUFFIX} beside it)")
        return EXIT_OK
    backup = save(loaded, text, new_mode=0o644)
    _out(f"skill: {'updated' if backup else 'installed'} {path}"
         + (f" (the previous one is {backup.name}, beside it)" if backup else ""))
    _out("  next: Claude Code loads it in its next session (`/skills` lists it)")
    return EXIT_OK
