"""The ``rifflux`` entry ``setup`` writes: what runs (this installation's ``rifflux``, by
absolute path), with which arguments, or which HTTP endpoint a client reaches, in the
shape each client reads.

The keys written here are Rifflux's (``OWNED``); an entry a person extended keeps its
other keys (``env``, ``disabled``, ``timeout``, ``trust`` ...) where they are.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clients import Client

__all__ = ["NAME", "OWNED", "Launch", "entry_for", "launch", "merged", "this_rifflux"]

#: The entry's name in every client.
NAME = "rifflux"
#: The keys of an entry that ``setup`` writes (and removes when they no longer apply:
#: ``url`` once the entry starts a command again).
OWNED = ("type", "command", "args", "url", "serverUrl", "httpUrl")


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What the client is to run: ``command`` with ``args``, or (for a client that
    speaks HTTP) the endpoint ``url``."""

    command: str
    args: tuple[str, ...]
    url: str | None = None


def this_rifflux() -> tuple[str, tuple[str, ...]]:
    """This installation's ``rifflux``, by absolute path: the console script beside this
    interpreter, else this interpreter running the package (a source checkout)."""
    scripts = Path(sysconfig.get_path("scripts"))
    script = scripts / ("rifflux.exe" if sys.platform == "win32" else "rifflux")
    if script.is_file() and os.access(script, os.X_OK):
        return str(script.absolute()), ()
    return str(Path(sys.executable).absolute()), ("-m", "rifflux")


def launch(*, db: str | None = None, writable: Sequence[str] = (), connect: str | None = None,
           url: str | None = None, embed_url: str | None = None,
           embed_model: str | None = None) -> Launch:
    """The server's command line: ``rifflux mcp`` with ``--db``, ``--writable``,
    ``--embed-url``, ``--embed-model`` and ``--connect`` when given (paths made absolute:
    a client starts servers in a folder of its choosing; an embedding server's key is
    never written: it stays in ``RIFFLUX_EMBED_KEY``); ``url``: the endpoint of a running
    ``rifflux serve``."""
    command, prefix = this_rifflux()
    args = [*prefix, "mcp"]
    if db:
        args += ["--db", db if "://" in db else str(Path(db).expanduser().absolute())]
    for folder in writable:
        args += ["--writable", str(Path(folder).expanduser().absolute())]
    if embed_url:
        args += ["--embed-url", embed_url]
    if embed_model:
        args += ["--embed-model", embed_model]
    if url:  # (a client that only starts commands reaches it through the bridge)
        connect = url
    if connect:
        args += ["--connect", connect]
    return Launch(command=command, args=tuple(args), url=url)


def entry_for(client: Client, how: Launch) -> dict[str, Any]:
    """The entry's keys for ``client``."""
    if how.url and client.http is not None:
        if client.http == "type":
            return {"type": "http", "url": how.url}
        return {client.http: how.url}
    started: dict[str, Any] = {"type": "stdio"} if client.stdio_type else {}
    return {**started, "command": how.command, "args": list(how.args)}


def merged(old: Any, ours: dict[str, Any]) -> dict[str, Any]:
    """``ours`` laid over an existing entry: its other keys kept in their order, ours in
    their places (new ones last), ours that no longer apply dropped."""
    if not isinstance(old, dict):
        return dict(ours)
    out: dict[str, Any] = {}
    for key, value in old.items():
        if key not in OWNED:
            out[key] = value
        elif key in ours:
            out[key] = ours[key]
    for key, value in ours.items():
        out.setdefault(key, value)
    return out
