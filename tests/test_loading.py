"""A process ends while the model loads in the background, with the real ONNX model:
it exits with its own exit code, at once, and never aborts.

onnxruntime aborts a process whose interpreter exits while it makes a session in
another thread (exit code 134, "terminate called without an active exception"). Each
test ends its process right as the load makes the ONNX session (a test hook in
``rifflux.native`` starts the ending there), and holds the load for ever after
that step: the process can only exit if nothing waits for the load (a wait would end
in the timeout).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from rifflux import Rifflux

from .helpers import cli_env, otters_and_bread

pytestmark = pytest.mark.anyio

#: ``python -c CHILD HOW ARGS``: the command line (or, for ``library``, a program that
#: leaves ``async with Rifflux(ARGS[0])`` early and exits 3), its model's load ended
#: (HOW: search sends itself SIGINT, serve SIGTERM) or reported on stderr (LOADING) as
#: it makes the session, and held for ever at its next step.
_CHILD = textwrap.dedent("""
    import os, signal, sys, threading
    from rifflux import native

    how, argv = sys.argv[1], sys.argv[2:]
    began = threading.Event()

    def before(step):
        if step == "import" and how == "serve":
            sys.stdin.readline()  # until the server is up: the test says go
        if step == "session" and not began.is_set():
            began.set()
            sys.stderr.write("LOADING\\n")
            sys.stderr.flush()
            ending = {"search": signal.SIGINT, "serve": signal.SIGTERM}.get(how)
            if ending is not None:
                os.kill(os.getpid(), ending)
        elif began.is_set():
            threading.Event().wait()  # the load never finishes

    native._before_step = before

    if how == "library":
        import anyio
        from rifflux import Rifflux

        async def main():
            async with Rifflux(argv[0], embedding_backend="onnx"):  # (warms up at once)
                await anyio.to_thread.run_sync(began.wait, 60)
            raise SystemExit(3)

        anyio.run(main)
    from rifflux.cli.launch import main
    raise SystemExit(main(argv))
""")


async def _index(tmp_path: Path) -> Path:
    """A small index (its vectors the hash backend's: the ONNX model still loads)."""
    db = tmp_path / "i.db"
    async with Rifflux(db, embedding_backend="hash") as rf:
        await rf.reindex(otters_and_bread(tmp_path / "kb"))
    return db


def _child(how: str, *args: str) -> list[str]:
    return [sys.executable, "-c", _CHILD, how, *args]


def _ended_cleanly(code: int | None, stderr: str, expected: int) -> None:
    assert "LOADING" in stderr  # (ended during the load, which never finished)
    assert "terminate called" not in stderr, stderr
    assert code == expected, stderr


@pytest.mark.parametrize(("how", "expected"), [("search", 130), ("library", 3)])
async def test_a_process_ended_while_the_model_loads_exits_with_its_own_code(
    tmp_path: Path, how: str, expected: int
) -> None:
    # a one-shot hybrid search interrupted (Ctrl-C) as the model loads, and a program
    # that leaves `async with Rifflux(...)` then exits 3 while the load goes on
    db = await _index(tmp_path)
    args = ["--db", str(db), "search", "otters", "--no-server"] if how == "search" \
        else [str(db)]
    done = await anyio.to_thread.run_sync(lambda: subprocess.run(
        _child(how, *args), cwd=tmp_path, capture_output=True, text=True, timeout=120,
        check=False, env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx")))
    _ended_cleanly(done.returncode, done.stderr, expected)


async def _stderr_until(process: Process, text: bytes, seen: bytearray) -> None:
    assert process.stderr is not None
    while text not in seen:
        seen.extend(await process.stderr.receive())


async def _rest(process: Process, seen: bytearray) -> None:
    assert process.stderr is not None
    async for chunk in process.stderr:
        seen.extend(chunk)


async def test_an_mcp_server_whose_client_leaves_during_the_warm_up_exits_0(
    tmp_path: Path
) -> None:
    db = await _index(tmp_path)
    process = await anyio.open_process(
        _child("mcp", "--db", str(db), "mcp"), cwd=tmp_path,
        env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx"))
    seen = bytearray()
    async with process:
        try:
            with anyio.fail_after(60):
                await _stderr_until(process, b"LOADING", seen)
                assert process.stdin is not None
                await process.stdin.aclose()  # the client has gone
                await _rest(process, seen)
                code = await process.wait()
        finally:  # a failure must fail the test, not leave it waiting for the process
            if process.returncode is None:
                process.kill()
    _ended_cleanly(code, seen.decode(), 0)


async def test_a_server_stopped_by_sigterm_during_the_warm_up_exits_0(tmp_path: Path) -> None:
    db = await _index(tmp_path)
    process = await anyio.open_process(
        _child("serve", "--db", str(db), "serve", "--port", "0", "--no-access-log"),
        cwd=tmp_path, env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx"))
    seen = bytearray()
    async with process:
        try:
            with anyio.fail_after(60):
                await _stderr_until(process, b"rifflux: serving", seen)
                assert process.stdin is not None
                await process.stdin.send(b"go\n")  # the load goes on; SIGTERM as it ends
                await _rest(process, seen)
                code = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    _ended_cleanly(code, seen.decode(), 0)
