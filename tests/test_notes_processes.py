"""Notes written by processes that die or race (issue 26): a process killed at any step of
a write leaves the old note or the new one, and two processes editing one note with
``if_match`` never both pass the check."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rifflux import Rifflux
from rifflux.config import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, TEMP_SUFFIX
from rifflux.core.scan import Globs
from rifflux.notes import files as notefiles

from .helpers import REPO, CountingEmbedder, cli_env

#: The steps of a write, in order (``notefiles.write_atomically``).
STEPS = ["opened", "half-written", "written", "synced", "renamed", "folder-synced"]
GLOBS = Globs(DEFAULT_INCLUDE, DEFAULT_EXCLUDE)


def kill_at(folder: Path, rel: str, new: bytes, step: str, tmp: Path) -> None:
    """A process writing ``new`` over the note, killed (SIGKILL) at ``step``."""
    (tmp / "new.bin").write_bytes(new)
    with subprocess.Popen(
            [sys.executable, "-m", "tests.note_children", "killed", str(folder), rel,
             str(tmp / "new.bin"), step], cwd=REPO, env=cli_env(tmp), stdout=subprocess.PIPE,
            text=True) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == step  # it waits there now
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL


def temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(f"*{TEMP_SUFFIX}")]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(step=st.sampled_from(STEPS), old=st.binary(min_size=1, max_size=3000),
       new=st.binary(min_size=1, max_size=300_000))
def test_a_writer_killed_at_any_step_leaves_the_old_note_or_the_new_one(
    tmp_path_factory: pytest.TempPathFactory, step: str, old: bytes, new: bytes,
) -> None:
    tmp = tmp_path_factory.mktemp("killed")
    folder = tmp / "notes"
    folder.mkdir()
    (folder / "n.md").write_bytes(old)
    kill_at(folder, "n.md", new, step, tmp)
    left = (folder / "n.md").read_bytes()
    assert left == (new if STEPS.index(step) >= STEPS.index("renamed") else old)
    assert notefiles.list_notes(folder, GLOBS) == ["n.md"]  # a temporary file is no note
    notefiles.sweep(folder, GLOBS)
    assert temp_files(folder) == []
    assert (folder / "n.md").read_bytes() == left


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(after=st.floats(min_value=0.0, max_value=0.03),
       a=st.binary(min_size=1, max_size=200_000), b=st.binary(min_size=1, max_size=200_000))
def test_a_writer_killed_at_a_random_moment_leaves_one_whole_version(
    tmp_path_factory: pytest.TempPathFactory, after: float, a: bytes, b: bytes,
) -> None:
    # (no step named: the kill lands wherever the writer is, ``after`` seconds into its
    # loop of writes: within a write, between two, during an fsync or a rename)
    tmp = tmp_path_factory.mktemp("random-kill")
    folder = tmp / "notes"
    folder.mkdir()
    (tmp / "a.bin").write_bytes(a)
    (tmp / "b.bin").write_bytes(b)
    with subprocess.Popen(
            [sys.executable, "-m", "tests.note_children", "looping", str(folder), "n.md",
             str(tmp / "a.bin"), str(tmp / "b.bin")], cwd=REPO, env=cli_env(tmp),
            stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "looping"
            time.sleep(after)  # the random kill point (not a wait for anything)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert (folder / "n.md").read_bytes() in (a, b)
    assert notefiles.list_notes(folder, GLOBS) == ["n.md"]
    notefiles.sweep(folder, GLOBS)
    assert temp_files(folder) == []


@pytest.mark.anyio
async def test_a_temporary_file_left_by_a_killed_writer_is_swept_and_never_indexed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "notes"
    (folder / "deep").mkdir(parents=True)
    (folder / "deep" / "n.md").write_text("# Old\n\nthe old tern\n")
    kill_at(folder, "deep/n.md", b"# New\n\nthe new skua\n", "synced", tmp_path)
    assert len(temp_files(folder)) == 1
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder(), writable=[folder],
                       watch_writable=False) as rf:
        assert temp_files(folder) == []  # swept at open
        result = await rf.reindex(folder)
        assert result["indexed_files"] == 1
        assert [h["path"] for h in await rf.search("tern", mode="lexical")] == ["deep/n.md"]
        assert await rf.search("skua", mode="lexical") == []


@pytest.mark.anyio
async def test_two_processes_editing_one_note_lose_no_accepted_edit(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    db = tmp_path / "i.db"
    async with Rifflux(db, embedder=CountingEmbedder(), writable=[folder],
                       watch_writable=False) as rf:
        await rf.write_note("race.md", "start\n")
    edits = 15
    processes = []
    async with anyio.create_task_group() as tg:
        for tag in ("heron", "egret"):
            processes.append(await anyio.open_process(
                [sys.executable, "-m", "tests.note_children", "editor", str(db), str(folder),
                 "race.md", tag, str(edits)], cwd=REPO, env=cli_env(tmp_path), stderr=None))
        outs: dict[int, bytes] = {}

        async def read_all(i: int) -> None:
            stream = processes[i].stdout
            assert stream is not None
            chunks = [chunk async for chunk in stream]
            outs[i] = b"".join(chunks)

        with anyio.fail_after(120):
            lines = []
            for p in processes:  # both open before either starts
                assert p.stdout is not None
                lines.append(await p.stdout.receive())
            assert all(line.startswith(b"ready") for line in lines), lines
            for p in processes:
                assert p.stdin is not None
                await p.stdin.send(b"go\n")
            for i in range(2):
                tg.start_soon(read_all, i)
    for p in processes:
        await p.aclose()
    results = [json.loads(outs[i].decode().strip().splitlines()[-1]) for i in range(2)]
    text = (folder / "race.md").read_text()
    markers = [line for line in text.splitlines() if line and line != "start"]
    accepted = [f"{tag}-{i}" for tag, r in zip(("heron", "egret"), results, strict=True)
                for i in r["accepted"]]
    assert sorted(markers) == sorted(accepted)  # every accepted edit, whole, once
    assert all(len(r["accepted"]) + r["conflicts"] == edits for r in results)
    assert len(accepted) >= edits  # (each round, somebody wins)
