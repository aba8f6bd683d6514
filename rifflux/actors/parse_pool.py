"""Worker processes that parse files in parallel with the event loop, and tell the
languages of committed chunks (``languages``).

Parsing is pure Python and holds the GIL: in a thread it would stall queries
while a large folder is indexed; in processes it uses both cores. anyio's own
``to_process`` re-runs the parent's ``__main__`` in each worker, which an
embedding application cannot be asked to tolerate, so this small pool starts
``python -m rifflux.actors._parse_worker`` instead. The indexer owns the pool
and closes it at shutdown.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import Process

from ..errors import RiffluxError

if TYPE_CHECKING:  # (the parser loads with the first job: core.document, core.chunker)
    from ..core.document import ParseResult
    from ..core.packing import ChunkLimits


class ParsePool:
    def __init__(self, size: int | None = None) -> None:
        self.size = size or max(1, min(4, os.cpu_count() or 1))
        self._idle: list[Process] = []
        self._all: list[Process] = []
        self._limiter = anyio.CapacityLimiter(self.size)
        #: The extractors' entry points, found here once and handed to each worker with
        #: its calls (``kinds.given``): found while the first workers start.
        self._specs: tuple[tuple[str, str], ...] | None = None
        self._finding = anyio.Lock()

    async def _spawn(self) -> Process:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        proc = await anyio.open_process(
            [sys.executable, "-m", "rifflux.actors._parse_worker"], env=env, stderr=None
        )
        self._all.append(proc)
        return proc

    @property
    def started(self) -> bool:
        """Whether a worker is running (a call now starts none: cheap)."""
        return bool(self._all)

    async def run(self, root: Any, items: list[tuple[str, str | None]], force: bool,
                  limits: ChunkLimits) -> ParseResult:
        result: ParseResult = await self._on_worker("prepare", (root, items, force, limits))
        return result

    async def languages(self, chunks: list[tuple[str, str]]) -> list[str | None]:
        """``core.language.chunk_languages`` of these (breadcrumb, text) pairs."""
        result: list[str | None] = await self._on_worker("languages", (chunks,))
        return result

    async def _on_worker(self, what: str, args: tuple[Any, ...]) -> Any:
        async with self._limiter:
            proc = self._idle.pop() if self._idle else await self._spawn()
            ok = False
            try:
                result = await self._call(proc, what, args)
                ok = True
                return result
            finally:
                if ok:
                    self._idle.append(proc)
                else:
                    await self._kill(proc)

    async def _entry_points(self) -> tuple[tuple[str, str], ...]:
        if self._specs is None:
            async with self._finding:
                if self._specs is None:
                    from ..kinds import entry_point_specs

                    self._specs = await anyio.to_thread.run_sync(entry_point_specs)
        return self._specs

    async def _call(self, proc: Process, what: str, args: tuple[Any, ...]) -> Any:
        assert proc.stdin is not None and proc.stdout is not None
        specs = await self._entry_points()
        data = pickle.dumps((what, args, specs), protocol=pickle.HIGHEST_PROTOCOL)
        await proc.stdin.send(struct.pack(">Q", len(data)) + data)
        head = await self._read(proc, 8)
        (size,) = struct.unpack(">Q", head)
        status, payload = pickle.loads(await self._read(proc, size))
        if status != "ok":
            raise RiffluxError(f"parse worker failed: {payload}")
        return payload

    @staticmethod
    async def _read(proc: Process, n: int) -> bytes:
        assert proc.stdout is not None
        buf = bytearray()
        while len(buf) < n:
            try:
                buf += await proc.stdout.receive(n - len(buf))
            except anyio.EndOfStream:
                raise RiffluxError("a parse worker exited unexpectedly") from None
        return bytes(buf)

    async def _kill(self, proc: Process) -> None:
        with anyio.CancelScope(shield=True):
            if proc in self._all:
                self._all.remove(proc)
            if proc.returncode is None:
                proc.kill()
            with anyio.move_on_after(2):
                await proc.wait()
            await proc.aclose()

    async def aclose(self) -> None:
        """Close every worker: end of input first, a kill if it does not exit."""
        with anyio.CancelScope(shield=True):
            for proc in list(self._all):
                if proc.stdin is not None:
                    await proc.stdin.aclose()
                with anyio.move_on_after(1):
                    await proc.wait()
                await self._kill(proc)
        self._idle.clear()
