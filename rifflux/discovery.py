"""The file beside the index that says a ``rifflux serve`` runs on it: ``index.db.serve.json``.

``rifflux serve`` writes it once it listens and removes it when it stops; ``rifflux
mcp --connect auto`` reads it to find the server. A file whose process is gone,
or whose server does not answer ``/healthz``, is stale and ignored (a server that
was killed could not remove it). The file names one server: a second ``rifflux serve``
on the same index (allowed: the index is shared between processes) leaves a live
server's file alone (``claim``), and a server removes only a file that names itself.

It holds the URL, the pid, when it started, whether the server is read-only, and
the token when the server has one: it is created with mode 0600 (only its owner
may read it, whatever the umask), like an SSH key, so that a bridge started by the
same user finds the token without it being written into every client's
configuration. Standard library only: the bridge must stay small. It lies below the
surfaces that share it: ``http.serve`` writes it, ``mcp.bridge`` and ``cli.remote``
read it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["Running", "claim", "discovery_path", "find", "remove", "vacant", "write"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Running:
    url: str  # http://127.0.0.1:7474/ (the MCP endpoint is url + "mcp")
    pid: int
    started_at: float
    read_only: bool = False
    token: str | None = None


def discovery_path(db_path: Path) -> Path:
    db = db_path.expanduser().absolute()
    return db.with_name(db.name + ".serve.json")


def write(db_path: Path, running: Running) -> Path:
    """Write the file atomically, readable by its owner only."""
    path = discovery_path(db_path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(asdict(running), out)
    os.replace(tmp, path)
    return path


def claim(db_path: Path, running: Running, timeout: float = 1.0) -> Running | None:
    """Write the file for ``running`` unless another live server's is there: then that one.

    A file whose process is gone or whose server does not answer is stale and replaced.
    Check, then write: two servers that both check before either writes could both
    write (the last one's file stays, whole: ``write`` is atomic); servers started that
    close together are not a case this guards against."""
    found = find(db_path, timeout=timeout)
    if found is not None and (found.pid, found.url) != (running.pid, running.url):
        return found
    write(db_path, running)
    return None


def vacant(db_path: Path) -> bool:
    """Whether no server holds the file: there is none, or its process is gone (a server
    that only answers slowly, paused or busy, keeps it)."""
    found = _read(discovery_path(db_path))
    return found is None or not _alive(found.pid)


def remove(db_path: Path, running: Running) -> None:
    """Remove the file if it still names ``running`` (its pid and URL), never another's."""
    path = discovery_path(db_path)
    found = _read(path)
    if found is not None and (found.pid, found.url) == (running.pid, running.url):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def find(db_path: Path, timeout: float = 1.0) -> Running | None:
    """The server running on this index, or None (no file, or a stale one)."""
    found = _read(discovery_path(db_path))
    if found is None or not _alive(found.pid) or not _answers(found, timeout):
        return None
    return found


def _read(path: Path) -> Running | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return Running(url=str(raw["url"]), pid=int(raw["pid"]),
                       started_at=float(raw.get("started_at", time.time())),
                       read_only=bool(raw.get("read_only", False)),
                       token=raw.get("token") if isinstance(raw.get("token"), str) else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # (someone else's process: it exists)
    return True


def _answers(running: Running, timeout: float) -> bool:
    import http.client  # (only when a file says a server runs)

    url = urlsplit(running.url)
    if url.hostname is None:
        return False
    conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
