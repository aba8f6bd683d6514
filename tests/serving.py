"""A real ``rifflux serve`` in a subprocess, on a free port, for the tests that talk HTTP."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rifflux import discovery

#: Long enough for a cold start under load (two cores shared with other test runs).
START_SECONDS = 60.0


@dataclass
class Served:
    url: str  # http://127.0.0.1:PORT/
    proc: subprocess.Popen[bytes]
    log: Path
    db: Path
    token: str | None = None
    exit_code: int | None = field(default=None)

    @property
    def mcp(self) -> str:
        return self.url + "mcp"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Signal the server and wait for its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.exit_code = self.proc.wait(timeout=timeout)
        return self.exit_code


def serve_command(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "rifflux", "serve", "--db", str(db), "--port", "0",
            "--backend", "hash", *args]


@contextmanager
def serving(db: Path, *args: str, token: str | None = None,
            env: Mapping[str, str] | None = None,
            stop_with: int = signal.SIGTERM, announced: bool = True,
            url: str | None = None) -> Iterator[Served]:
    """``rifflux serve --port 0 --backend hash ARGS`` on ``db`` until the block ends, then
    ``stop_with`` (SIGTERM), after which the server must have exited 0. The URL comes from
    the file the server writes beside the index, or (``announced=False``: another server's
    file is there) from the line it writes once it serves. ``url``: the index is that
    PostgreSQL database (``db`` then names where the server's log goes, and the URL comes
    from its line)."""
    log = db.with_name(db.name + f".serve-{time.monotonic_ns()}.log")
    command = serve_command(Path(url) if url else db, *args,
                            *(["--token", token] if token else []))
    if url:
        command[command.index("--db") + 1] = url
        announced = False
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                env={**os.environ, "RIFFLUX_LOG_LEVEL": "INFO", **(env or {})})
    served = Served(url="", proc=proc, log=log, db=db, token=token)
    try:
        served.url = _wait_for_url(served) if announced else _wait_for_line(served)
        yield served
    finally:
        if proc.poll() is None:
            served.stop(stop_with)
    assert served.exit_code in (0, None), f"exit {served.exit_code}:\n{served.log_text()}"


def _wait_for_url(served: Served) -> str:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if served.proc.poll() is not None:
            raise AssertionError(f"rifflux serve exited {served.proc.returncode}:\n"
                                 f"{served.log_text()}")
        running = discovery.find(served.db, timeout=1.0)
        if running is not None and running.pid == served.proc.pid:
            return running.url
        time.sleep(0.05)  # (polling a file another process writes, under a deadline)
    raise AssertionError(f"rifflux serve did not start within {START_SECONDS} s:\n"
                         f"{served.log_text()}")


def _wait_for_line(served: Served) -> str:
    def line() -> str | None:
        if served.proc.poll() is not None:
            raise AssertionError(f"rifflux serve exited {served.proc.returncode}:\n"
                                 f"{served.log_text()}")
        found = re.search(r"rifflux: serving (http://\S+/) ", served.log_text())
        return found[1] if found else None

    url: str = until(line, within=START_SECONDS)
    return url


def until(check: Callable[[], Any], within: float = 30.0) -> Any:
    """Poll ``check`` until it returns something truthy (state in the server process, which
    no event of ours reaches); the deadline, not the pause, decides failure."""
    deadline = time.monotonic() + within
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {within} s: {check}")
        time.sleep(0.02)
    return value
