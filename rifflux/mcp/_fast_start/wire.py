"""The protocol's private ends of stdin and stdout: ``rifflux mcp`` claims fds 0 and 1 for
the MCP client before anything else loads, and points them elsewhere (fd 0 at the null
device, fd 1 at stderr), so that nothing a library or child process prints can reach the
client. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import BinaryIO

if sys.platform != "win32":
    import fcntl

__all__ = ["Wire"]


class Wire:
    """The protocol's private ends of stdin and stdout (fds 0 and 1 point elsewhere)."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO, *, claimed: bool = False) -> None:
        self.reader = reader
        self._writer = writer
        self._lock = threading.Lock()
        self._claimed = claimed  # fds 0 and 1 were redirected by claim()

    @classmethod
    def claim(cls) -> Wire:
        """Take fds 0 and 1 for the protocol; point fd 0 at the null device and fd 1
        at stderr. Raises OSError when stdin or stdout is not open."""
        if sys.stdin is None or sys.stdout is None:
            raise OSError("stdin or stdout is closed")
        wire_in = _dup_above_std(0)
        try:
            wire_out = _dup_above_std(1)
        except OSError:
            os.close(wire_in)
            raise
        sys.stdout.flush()
        _point(0, os.open(os.devnull, os.O_RDONLY))
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr either
            _point(1, os.open(os.devnull, os.O_WRONLY))
        return cls(os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"), claimed=True)

    def close(self, *, reader: bool = True) -> None:
        """Point fds 0 and 1 back at the wire (after ``claim``) and close the private ends.

        ``reader=False`` leaves the reading end open: closing it while another
        thread is blocked reading it would block until that read returns.
        """
        with self._lock:
            if self._claimed:
                self._claimed = False
                if sys.stdout is not None:
                    sys.stdout.flush()
                os.dup2(self.reader.fileno(), 0)
                os.dup2(self._writer.fileno(), 1)
            # (a client gone away leaves an answer unsent: no error of this server's)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._writer.close()
        if reader:
            self.reader.close()

    def send(self, line: str) -> None:
        """Write one message (a JSON text without newlines) and flush it."""
        data = line.encode("utf-8") + b"\n"
        with self._lock:
            self._writer.write(data)
            self._writer.flush()


def _dup_above_std(fd: int) -> int:
    """A private duplicate of ``fd`` that is never 0-2 and not inherited by children."""
    if sys.platform != "win32":
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    duplicate = os.dup(fd)  # non-inheritable; the lowest free descriptor
    if duplicate <= 2:
        os.close(duplicate)
        raise OSError(f"fd {fd} cannot be duplicated above the standard streams")
    return duplicate


def _point(fd: int, target: int) -> None:
    os.dup2(target, fd)
    os.close(target)
