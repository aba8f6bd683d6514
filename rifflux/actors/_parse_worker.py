"""Entry point of a parse worker process: pickled calls in on stdin, results out.

Frames are an 8-byte big-endian length and a pickle of (what, arguments, the
extractors' entry points as the parent found them: ``kinds.given``): ``prepare``
(``core.document.prepare_many``: files read, extracted and chunked) or ``languages``
(``core.language.chunk_languages``: the languages of committed chunks). The parent
owns the process and closes stdin to end it.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
from collections.abc import Callable
from typing import Any

from ..core.document import prepare_many
from ..kinds import given


def _languages(chunks: list[tuple[str, str]]) -> list[str | None]:
    from ..core.language import chunk_languages  # (the model loads with the first call)

    return chunk_languages(chunks)


_CALLS: dict[str, Callable[..., Any]] = {"prepare": prepare_many, "languages": _languages}


def main() -> None:
    # Ctrl-C reaches every process of the terminal's group: the parent stops, then ends
    # this one (closing stdin), never a traceback of this one's in the person's terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but frames may reach the parent's pipe
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return
        (size,) = struct.unpack(">Q", head)
        what, args, specs = pickle.loads(stdin.read(size))
        given(specs)  # (the parent's entry points: none of its own looked for)
        try:
            reply: object = ("ok", _CALLS[what](*args))
        except Exception as exc:  # reported to the parent, which raises it
            reply = ("error", f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.write(struct.pack(">Q", len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # the parent is gone (killed): nobody is left to answer
        os._exit(0)
