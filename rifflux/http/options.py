"""How ``rifflux serve`` is exposed: address, token, read-only, who may call it.

Standard library only: the command line checks these before anything heavy loads.
A local HTTP server can be reached by every web page the user opens, so the
defaults are the safe ones: loopback only, Host and Origin checked on every
request (DNS rebinding, cross-site requests), and a token required before the
server may listen on any other address.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Settings
from ..errors import InvalidArgumentError, RiffluxError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7474
#: Request bodies larger than this are refused with 413 (queries and tool calls are small).
DEFAULT_MAX_BODY = 1024 * 1024

_HOW_TO_SET_A_TOKEN = (
    "set one first: `export RIFFLUX_TOKEN=$(python3 -c 'import secrets; "
    "print(secrets.token_urlsafe(32))')` (or --token), and give clients the same "
    "token as `Authorization: Bearer <token>`")


def is_loopback(host: str) -> bool:
    """``localhost``, ``127.0.0.0/8`` and ``::1`` (brackets or not)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def split_host(header: str) -> str:
    """The name in a ``Host`` header, without its port (``[::1]:7474`` -> ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    #: Every route but /healthz needs ``Authorization: Bearer <token>`` (the page: a
    #: cookie set once from it).
    token: str | None = None
    #: Searches and reads only: reindex, forget and every other write answer 403.
    read_only: bool = False
    #: Origins other than the server's own whose pages may call it (``http://host:port``).
    allow_origins: tuple[str, ...] = ()
    #: Host names (beyond loopback names, IP addresses and the bound host) the server
    #: answers to, e.g. the machine's name on the network when bound to 0.0.0.0.
    allow_hosts: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY
    #: One line per request on stderr (method, path, status, milliseconds).
    access_log: bool = True
    _names: frozenset[str] = field(init=False, default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.port, bool) or not 0 <= self.port <= 65535:
            raise InvalidArgumentError(f"port must be from 0 to 65535, not {self.port!r}")
        if self.token is not None and (not self.token.strip()
                                       or any(c.isspace() for c in self.token)):
            raise InvalidArgumentError("the token is blank or holds spaces: "
                                       + _HOW_TO_SET_A_TOKEN)
        if self.max_body_bytes < 1024:
            raise InvalidArgumentError(f"the body limit must be at least 1024 bytes, not "
                                       f"{self.max_body_bytes}")
        for origin in self.allow_origins:
            scheme, sep, rest = origin.partition("://")
            if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
                raise InvalidArgumentError(
                    f"--allow-origin {origin!r} is not an origin: give scheme, host and "
                    "port only, as a browser sends it (http://localhost:5173)")
        names = {self.host.strip("[]").lower(), *(h.lower() for h in self.allow_hosts)}
        if self.wildcard:  # every interface: the machine's own names too
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        object.__setattr__(self, "_names", frozenset(names))

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def wildcard(self) -> bool:
        return self.host.strip("[]") in ("0.0.0.0", "::", "")

    def check_exposure(self) -> None:
        """Refuse to listen beyond this machine without a token."""
        if not self.loopback and self.token is None:
            raise InvalidArgumentError(
                f"refusing to serve on {self.host} without a token: anyone who can reach "
                f"this machine could read and reindex your notes; {_HOW_TO_SET_A_TOKEN}; "
                "or serve on 127.0.0.1 (the default)")

    def host_allowed(self, name: str) -> bool:
        """A ``Host`` this server answers to. A DNS-rebinding page reaches it under the
        attacker's domain name, never under a loopback name or an IP address."""
        return is_loopback(name) or is_ip_literal(name) or name in self._names

    def origin_allowed(self, origin: str, host_header: str) -> bool:
        """The server's own origin (the page it serves) or one given with --allow-origin."""
        own = host_header.strip().lower()
        return origin.lower() in (f"http://{own}", f"https://{own}") \
            or origin in self.allow_origins


def options_from_args(args: argparse.Namespace,
                      environ: Mapping[str, str] = os.environ) -> ServeOptions:
    """``rifflux serve``'s flags (the token also from ``RIFFLUX_TOKEN``)."""
    return ServeOptions(
        host=args.host, port=args.port,
        token=args.token if args.token is not None else (environ.get("RIFFLUX_TOKEN") or None),
        read_only=args.read_only, allow_origins=tuple(args.allow_origin or ()),
        allow_hosts=tuple(args.allow_host or ()), max_body_bytes=args.max_body,
        access_log=args.access_log)


def refusal(options: ServeOptions, settings: Settings) -> str | None:
    """Why the server must not start with these settings, or None."""
    try:
        options.check_exposure()
    except InvalidArgumentError as exc:
        return str(exc)
    if options.read_only and settings.watch_paths:
        return ("--read-only serves an index without writing to it, and --watch writes: "
                "leave one of them out")
    if options.read_only and settings.writable:
        return ("--read-only serves an index without writing to it, and --writable lets "
                "agents write notes: leave one of them out")
    db = settings.db_path
    if options.read_only and isinstance(db, Path) and not db.expanduser().is_file():
        return (f"no index at {db} to serve read-only: run `rifflux index PATH` first, or "
                "point --db at an existing index")
    return None


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use is an error naming it."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise RiffluxError(f"cannot serve on host {host!r}: {exc.strerror}; give an address "
                           "of this machine (127.0.0.1 by default)") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise RiffluxError(
                f"port {port} on {host} is in use: another `rifflux serve` (or another "
                "program) listens there; stop it, or pass --port N") from None
        raise RiffluxError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock
