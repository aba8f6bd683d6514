"""``rifflux serve``: bind, open the index, serve until a signal, stop cleanly.

The port is bound before anything heavy loads (``options.listen``, called by the
command line), so that a port in use is one clear line at once. Then the index
opens (the model loads in the background), the app starts on uvicorn, and the
discovery file is written, unless another live server's is there (a warning then
names that one, and its file stays as it is). SIGTERM, SIGHUP or Ctrl-C start a
graceful stop: no new connections, streams end, requests in flight finish (for at
most ``GRACE`` seconds), the discovery file goes if it names this server, then the
index closes (a running job gets its own grace period and stops between
transactions) and the process exits 0. A second signal stops at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import uvicorn

from .. import discovery
from ..api import Rifflux
from ..config import Settings
from ..errors import RiffluxError
from ..exits import EXIT_FAILURE, EXIT_OK, configure_logging, fail
from ..location import IndexLocation
from .app import create_app
from .options import ServeOptions

__all__ = ["GRACE", "main", "serve"]

logger = logging.getLogger(__name__)

#: How long requests in flight may take to finish once a stop is asked for.
GRACE = 10.0


def main(settings: Settings, options: ServeOptions, sock: socket.socket) -> int:
    """Serve on ``sock`` (``options.bind``) until a signal; the exit code."""
    configure_logging(settings.log_level)
    _keep_the_heap_small()
    logging.getLogger("rifflux.http.access").setLevel(
        logging.INFO if options.access_log else logging.WARNING)
    try:
        return anyio.run(serve, settings.with_overrides(read_only=options.read_only or None),
                         options, sock, backend_options={"use_uvloop": _UVLOOP})
    except KeyboardInterrupt:
        return EXIT_OK  # (a second Ctrl-C while stopping)
    except BaseException as exc:  # the boundary: every failure becomes one line
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, RiffluxError | OSError):
            return fail(str(leaf))
        if not isinstance(leaf, Exception):
            raise
        logger.debug("unexpected error", exc_info=leaf)
        return fail(f"unexpected {type(leaf).__name__}: {leaf} (run with --log-level DEBUG "
                    "to see where; please report it)", EXIT_FAILURE)
    finally:
        sock.close()


def _keep_the_heap_small() -> None:
    """A server lives long: freed heap goes back to the system, but not after every request.

    glibc raises its thresholds after every large free (mmap up to 32 MB, trim up to
    64 MB), so a warm server kept about 40 MB it no longer used. Fixed thresholds end
    that, and must stay above what one search allocates and frees: with a trim threshold
    of 128 KiB alone (glibc's mmap threshold then stays 128 KiB too), each semantic or
    hybrid search on awesome-copilot mapped and unmapped four arrays of 0.6-0.8 MB (the
    exact cosines of its candidates, in float64) and moved the heap's top about four
    times: about 10 system calls and 700 fresh pages a search, 1.5-2.5 ms on 2 cores,
    which was most of the HTTP overhead of hybrid over lexical. With 1 MiB / 4 MiB a
    search's arrays are reused from the heap (about 20 such calls in 300 searches) and a
    warm server holds about 7 MB more than at 128 KiB, 30 MB less than glibc's own.
    glibc only; elsewhere nothing to do."""
    if sys.platform != "linux":
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)
    except (OSError, AttributeError):
        pass  # another C library (musl): it keeps what it keeps


#: The event loop of uvloop (libuv) where it is installed (not on Windows), and HTTP
#: parsed by httptools (uvicorn takes it when installed) instead of h11: together about
#: 0.5 ms less per request here (`--sections serve`: hybrid p50 over HTTP 1.9 ms above
#: in process instead of 2.4-2.7).
_UVLOOP = sys.platform != "win32" and importlib.util.find_spec("uvloop") is not None
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # (glibc's malloc.h)
#: Blocks at least this large get their own mapping, given back when freed.
_MMAP_THRESHOLD = 1024 * 1024
#: Free heap at the top beyond this goes back to the system.
_TRIM_THRESHOLD = 4 * 1024 * 1024


#: How often a server another one's announcement left out looks whether that one stopped.
CLAIM_AGAIN_EVERY = 2.0


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: ``serve`` handles signals (see there)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve(settings: Settings, options: ServeOptions, sock: socket.socket) -> int:
    host, port = sock.getsockname()[:2]
    url = f"http://{_url_host(options.host, host)}:{port}/"
    async with Rifflux(settings=settings) as rf:
        app = create_app(rf, options)
        config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on",
                                timeout_graceful_shutdown=int(GRACE), server_header=False)
        server = _Server(config)
        db = settings.db_path
        signalled: list[int] = []
        announced: list[discovery.Running] = []  # (this server's file, once written)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signals, server, rf, signalled,
                              name="rifflux.serve.signals")
                tg.start_soon(_announce, server, db, url, options, announced,
                              name="rifflux.serve.announce")
                await server.serve(sockets=[sock])
                tg.cancel_scope.cancel()
        finally:  # (once the announcement has ended: a file being written is then written)
            with contextlib.suppress(OSError):
                for running in announced:
                    assert isinstance(db, Path)
                    discovery.remove(db, running)
        if not server.started and not signalled:
            raise RiffluxError("the server did not start (the log above says why)")
        logger.info("stopped; closing the index")
    return EXIT_OK


async def _announce(server: uvicorn.Server, db: IndexLocation, url: str,
                    options: ServeOptions, announced: list[discovery.Running]) -> None:
    while not server.started:
        if server.should_exit:
            return
        await anyio.sleep(0.02)  # (uvicorn says it has started by this flag only)
    running = discovery.Running(url=url, pid=os.getpid(), started_at=time.time(),
                                read_only=options.read_only, token=options.token)
    other = None
    try:  # (beside an index file; a database has none: --connect URL finds the server)
        if isinstance(db, Path):
            other = await _claim(db, running, announced)
            if other is not None:
                logger.warning("a rifflux serve already runs on this index at %s (pid %d); "
                               "this one is not announced in %s: clients that find servers "
                               "by it go on using that one (until it stops)", other.url,
                               other.pid, discovery.discovery_path(db))
    except OSError as exc:
        assert isinstance(db, Path)
        logger.warning("cannot write %s (rifflux mcp --connect auto will not find this "
                       "server): %s", discovery.discovery_path(db), exc)
    if sys.stderr is not None:
        sys.stderr.write(
            f"rifflux: serving {url} (index {db}{', read-only' if options.read_only else ''}"
            f"{', token required' if options.token else ''}): the page at {url}, MCP at "
            f"{url}mcp, the JSON API under {url}api/; Ctrl-C stops\n")
        sys.stderr.flush()
    while other is not None and isinstance(db, Path):  # announced once the other stops
        await anyio.sleep(CLAIM_AGAIN_EVERY)
        if not await anyio.to_thread.run_sync(discovery.vacant, db):
            continue  # (its server runs, if slow to answer: it keeps the file)
        with contextlib.suppress(OSError):  # (the folder unwritable now: tried again)
            other = await _claim(db, running, announced)
            if other is None:
                logger.warning("the rifflux serve announced on this index stopped: this one "
                               "is announced in %s now", discovery.discovery_path(db))


async def _claim(db: Path, running: discovery.Running,
                 announced: list[discovery.Running]) -> discovery.Running | None:
    """``discovery.claim`` in a thread; once written, the file is in ``announced`` even
    when the server stops meanwhile (so that it is removed)."""
    # (shielded whole, not cut by a deadline: a claim cut after its write would leave the
    # file behind; it is bounded all the same, by its probe's 1 s timeout)
    with anyio.CancelScope(shield=True):
        other = await anyio.to_thread.run_sync(discovery.claim, db, running)
        if other is None:
            announced.append(running)
    return other


async def _stop_on_signals(server: uvicorn.Server, rf: Rifflux,
                           signalled: list[int]) -> None:
    if sys.platform == "win32":  # (no signal receivers there: Ctrl-C ends it)
        return
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            signalled.append(signum)
            if server.should_exit:
                logger.warning("%s again: stopping now", signal.Signals(signum).name)
                server.force_exit = True
                continue
            logger.warning("%s received: finishing requests in flight, then stopping",
                           signal.Signals(signum).name)
            # the event streams end first, each with its last event (sse-starlette would
            # cut them off: a client read a broken response), then uvicorn's own handler
            rf.end_events()
            server.handle_exit(signum, None)


def _url_host(asked: str, bound: str) -> str:
    if asked.strip("[]") in ("0.0.0.0", ""):
        return "127.0.0.1"
    if asked.strip("[]") == "::":
        return "[::1]"
    return f"[{bound}]" if ":" in bound else (asked if asked == "localhost" else bound)
