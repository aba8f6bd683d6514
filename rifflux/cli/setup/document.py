"""A client's configuration text, read in its own format, and the same text with the
``rifflux`` entry set or taken out.

JSON and JSONC are changed as splices of the text (``json_edit``); TOML with tomlkit,
which keeps comments, order and formatting of what it does not touch. A text that
cannot be read raises ``SetupError`` naming the line and column where it broke.
"""

from __future__ import annotations

from typing import Any

from .clients import Client
from .entry import NAME, OWNED, merged
from .files import SetupError
from .json_edit import remove_member, set_member
from .jsonc import SyntaxProblem, parse

__all__ = ["current_entry", "with_entry", "without_entry"]


def current_entry(client: Client, text: str, where: str) -> Any | None:
    """The ``rifflux`` entry as the file holds it now (None: there is none)."""
    if not text.strip():
        return None
    if client.format == "toml":
        servers = _toml(text, where).get(client.servers)
        found: Any = servers.get(NAME) if hasattr(servers, "get") else None
        return found.unwrap() if hasattr(found, "unwrap") else found
    top = _json(client, text, where)
    servers = top.member(client.servers)
    if servers is None or servers.value.kind != "object":
        return None
    found = servers.value.member(NAME)
    return None if found is None else found.value.value


def with_entry(client: Client, text: str, ours: dict[str, Any], where: str) -> str:
    """``text`` with the ``rifflux`` entry holding ``ours`` (its other keys kept); the same
    text when it already does."""
    old = current_entry(client, text, where)
    wanted = merged(old, ours)
    if old == wanted:
        return text
    if client.format == "toml":
        return _toml_with(client, text, old, wanted, where)
    try:
        return set_member(text, [client.servers, NAME], wanted,
                          comments=client.format == "jsonc")
    except ValueError as exc:  # (SyntaxProblem was raised by current_entry already)
        raise SetupError(f"{where}: {exc}; nothing was changed") from exc


def without_entry(client: Client, text: str, where: str) -> str:
    """``text`` without the ``rifflux`` entry (the same text when it has none)."""
    if current_entry(client, text, where) is None:
        return text
    if client.format == "toml":
        return _toml_without(client, text, where)
    return remove_member(text, [client.servers, NAME], comments=client.format == "jsonc")


# ---------------------------------------------------------------- JSON and JSONC


def _json(client: Client, text: str, where: str) -> Any:
    try:
        top = parse(text, comments=client.format == "jsonc")
    except SyntaxProblem as exc:
        raise SetupError(f"cannot read {where}: {exc}; nothing was changed: fix the file "
                         "there (or pass --config with another one)") from exc
    if top.kind != "object":
        raise SetupError(f"{where} holds a {top.kind}, not an object: it is not a "
                         f"{client.name} configuration; nothing was changed")
    return top


# ---------------------------------------------------------------- TOML


def _toml(text: str, where: str) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise SetupError(f"cannot read {where}: line {exc.line}, column {exc.col}: "
                         f"{str(exc).split(' at line ')[0]}; nothing was changed: fix the "
                         "file there (or pass --config with another one)") from exc


def _toml_with(client: Client, text: str, old: Any, wanted: dict[str, Any],
               where: str) -> str:
    import tomlkit

    doc = _toml(text, where)
    servers = doc.get(client.servers)
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        doc.append(client.servers, servers)
    elif not hasattr(servers, "get"):
        raise SetupError(f"{where}: {client.servers} is not a table: fix it by hand, then run "
                         "this again; nothing was changed")
    if isinstance(old, dict):  # changed in place: its other keys, comments and order stay
        entry = servers[NAME]
        for key in OWNED:
            if key in wanted:
                entry[key] = wanted[key]
            elif key in entry:
                del entry[key]
    else:
        entry = tomlkit.table()
        for key, value in wanted.items():
            entry[key] = value
        if list(doc.keys())[-1] != client.servers:  # (a table follows: a blank line first)
            entry.add(tomlkit.nl())
        servers[NAME] = entry
    return _line_ends_of(text, tomlkit.dumps(doc))


def _toml_without(client: Client, text: str, where: str) -> str:
    import tomlkit

    doc = _toml(text, where)
    servers = doc[client.servers]
    last = list(doc.keys())[-1] == client.servers and list(servers.keys())[-1] == NAME
    del servers[NAME]
    if not servers:
        del doc[client.servers]
    out = tomlkit.dumps(doc)
    if last and out.endswith("\n\n"):  # (the blank line that was added before it)
        out = out[:-1]
    return _line_ends_of(text, out)


def _line_ends_of(original: str, text: str) -> str:
    """``text`` with the original's line ends, where tomlkit wrote its own lines with
    ``\\n`` into a file written with ``\\r\\n``."""
    if "\r\n" not in original or "\n" in original.replace("\r\n", ""):
        return text
    return text.replace("\r\n", "\n").replace("\n", "\r\n")
