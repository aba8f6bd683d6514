"""Which clients are installed here and whether Rifflux is configured in each: what
``rifflux setup --list`` prints and ``rifflux doctor`` checks."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clients import CLIENTS, Client, Place
from .document import current_entry
from .entry import this_rifflux
from .files import SetupError, load

__all__ = ["ClientState", "client_state", "client_states"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientState:
    client: Client
    path: Path
    installed: bool  # the file or the client's folder is there
    exists: bool  # the file is there
    entry: Any | None = None  # the rifflux entry, as the file holds it
    problem: str | None = None  # the file cannot be read: why
    runs: str | None = None  # what the entry runs (a command line, or a URL)
    stale: str | None = None  # the entry runs something that is not there: why
    note: str | None = None  # worth knowing, not wrong (it runs another installation)

    @property
    def configured(self) -> bool:
        return self.entry is not None

    def as_json(self) -> dict[str, Any]:
        return {"client": self.client.key, "name": self.client.name, "path": str(self.path),
                "installed": self.installed, "exists": self.exists,
                "configured": self.configured, "runs": self.runs, "problem": self.problem,
                "stale": self.stale, "note": self.note}


def client_states(place: Place) -> list[ClientState]:
    return [client_state(client, place) for client in CLIENTS]


def client_state(client: Client, place: Place, path: Path | None = None) -> ClientState:
    path = path or Path(client.path(place))
    exists = path.is_file()
    installed = exists or Path(client.installed_marker(place)).is_dir()
    if not exists:
        return ClientState(client=client, path=path, installed=installed, exists=False)
    try:
        loaded = load(path)
        entry = current_entry(client, loaded.text, str(path))
    except SetupError as exc:
        return ClientState(client=client, path=path, installed=True, exists=True,
                           problem=str(exc))
    if entry is None:
        return ClientState(client=client, path=path, installed=True, exists=True)
    runs, stale, note = _what_it_runs(client, entry)
    return ClientState(client=client, path=path, installed=True, exists=True, entry=entry,
                       runs=runs, stale=stale, note=note)


def _what_it_runs(client: Client, entry: Any) -> tuple[str | None, str | None, str | None]:
    """What the entry runs, why that cannot work (None: it can), and what else is worth
    knowing."""
    again = f"run `rifflux setup {client.key}` again"
    if not isinstance(entry, dict):
        return None, f"the entry is not an object: {again}", None
    for key in ("url", "serverUrl", "httpUrl"):
        if isinstance(entry.get(key), str):
            return entry[key], None, None
    command, args = entry.get("command"), entry.get("args") or []
    if not isinstance(command, str) or not isinstance(args, list):
        return None, f"the entry names no command: {again}", None
    runs = shlex.join([command, *map(str, args)])
    if not os.path.isabs(command):
        return runs, None, None  # (found on the client's PATH: nothing to check here)
    if not (os.path.isfile(command) and os.access(command, os.X_OK)):
        return runs, (f"{command} is not there any more (Rifflux moved or was reinstalled): "
                      f"{again}"), None
    mine, _ = this_rifflux()
    if os.path.realpath(command) != os.path.realpath(mine) and Path(command).name.startswith(
            "rifflux"):
        return runs, None, (f"it runs {command}, another installation than this one ({mine}):"
                            f" `rifflux setup {client.key}` makes it this one")
    return runs, None, None
