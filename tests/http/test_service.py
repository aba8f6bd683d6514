"""``rifflux serve`` as a service: SIGTERM in the middle of a reindex stops it cleanly, the
index is consistent afterwards, a request in flight gets its whole answer, and the file
that lets bridges find it comes and goes with it (a second server on the same index leaves
a live one's file alone)."""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import stat
import threading
import time
from pathlib import Path

import anyio
import httpx2
import pytest

from rifflux import Rifflux, discovery
from rifflux.http.serve import CLAIM_AGAIN_EVERY

from ..helpers import rifflux_cli
from ..serving import serving, until

FILES = 400
#: A note whose parsing the server holds back (``held_parse/sitecustomize.py``): the
#: reindex is still indexing when the signal comes, however fast the machine.
HELD = "held-back.md"


def _corpus(root: Path) -> Path:
    notes = root / "notes"
    notes.mkdir()
    for name in [f"n{i:04d}.md" for i in range(FILES)] + [HELD]:
        (notes / name).write_text(
            f"# Note {name}\n\n" + "".join(f"## Part {j}\n\nWords about topic {name}, part "
                                         f"{j}: retry and backoff.\n\n" for j in range(6)),
            encoding="utf-8")
    return notes


def _holding_back(held: str) -> dict[str, str]:
    """The environment of a server that never parses ``held``."""
    path = [str(Path(__file__).parent / "held_parse"), os.environ.get("PYTHONPATH", "")]
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p),
            "RIFFLUX_TEST_HOLD_PARSE": held}


def test_sigterm_during_a_reindex_stops_cleanly_and_leaves_the_index_consistent(
        tmp_path: Path) -> None:
    notes = _corpus(tmp_path)
    db = tmp_path / "index.db"
    with serving(db, token="t0ken-for-the-file", env=_holding_back(HELD)) as served:
        found = discovery.find(db)
        assert found is not None and found.pid == served.proc.pid
        assert found.url == served.url and found.token == "t0ken-for-the-file"
        assert stat.S_IMODE(discovery.discovery_path(db).stat().st_mode) == 0o600
        with httpx2.Client(base_url=served.url, headers=served.headers(), timeout=30) as http:
            job_id = http.post("/api/reindex", json={"path": str(notes)}).json()["job"]["id"]
            job = until(lambda: (j := http.get(f"/api/jobs/{job_id}").json())[
                "indexed_files"] >= 50 and j, within=60)
        assert (job["status"], job["phase"]) == ("running", "indexing")
        assert served.stop(signal.SIGTERM) == 0
    log = served.log_text()
    assert "SIGTERM received" in log and "Traceback" not in log
    assert not discovery.discovery_path(db).exists()

    with sqlite3.connect(db) as conn:  # every file written whole, or not at all
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        files = conn.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        bare = conn.execute("SELECT COUNT(*) FROM files f WHERE NOT EXISTS "
                            "(SELECT 1 FROM chunks c WHERE c.file_id = f.id)").fetchone()[0]
        held = conn.execute("SELECT COUNT(*) FROM files WHERE rel_path = ?", (HELD,)).fetchone()
    assert 50 <= files < FILES and bare == 0 and held == (0,)

    async def reopened() -> None:  # (what was written is there, and found)
        async with Rifflux(db, embedding_backend="hash") as rf:
            status = await rf.status()
            assert (status["files"], status["chunks"]) == (files, chunks)
            hits = await rf.search("topic retry", mode="lexical", top_k=3)
            assert len(hits) == 3

    anyio.run(reopened)


def test_sigterm_lets_a_request_in_flight_finish_with_its_whole_answer(
        tmp_path: Path) -> None:
    # A read that takes as long as the test wants: a note that became a named pipe
    # after it was indexed. The server reads it (in a worker thread) until the test,
    # after the signal, writes the note and closes the pipe.
    notes = tmp_path / "notes"
    slow = notes / "slow.md"
    text = "".join(f"Line {i} of a note read slowly.\n" for i in range(1, 2001))
    (notes / "fast.md").parent.mkdir()
    (notes / "fast.md").write_text("# Fast\n\nRead at once.\n", encoding="utf-8")
    slow.write_text(text, encoding="utf-8")
    db = tmp_path / "index.db"

    async def index() -> None:
        async with Rifflux(db, embedding_backend="hash") as rf:
            await rf.reindex(notes)

    anyio.run(index)
    slow.unlink()
    os.mkfifo(slow)
    answers: list[httpx2.Response | BaseException] = []

    def read_slow(url: str) -> None:
        try:
            answers.append(httpx2.get(url + "api/file", params={"path": "slow.md",
                                                                "start_line": 1},
                                      timeout=60))
        except BaseException as exc:  # (the test's thread: what happened, for the assert)
            answers.append(exc)

    def reader_opened() -> int | None:  # (a writer opens only once the server reads)
        try:
            return os.open(slow, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            return None

    with serving(db) as served:
        thread = threading.Thread(target=read_slow, args=(served.url,), name="slow-read")
        thread.start()
        fd = until(reader_opened)
        try:
            served.proc.send_signal(signal.SIGTERM)
            # (uvicorn's line once it has stopped listening and waits for what is open)
            until(lambda: "Waiting for connections to close" in served.log_text())
            assert served.proc.poll() is None  # (it waits: the read cannot have ended)
            # The note's bytes exist only from now on, after the signal: a whole answer
            # (below) is one the server finished after it was told to stop.
            os.set_blocking(fd, True)
            os.write(fd, text.encode())
        finally:
            os.close(fd)
            thread.join(timeout=60)
        served.exit_code = served.proc.wait(timeout=30)
    assert len(answers) == 1 and isinstance(answers[0], httpx2.Response), answers
    assert answers[0].status_code == 200, answers[0].text
    lines = answers[0].json()
    assert lines["text"] == text.rstrip("\n") and lines["total_lines"] == 2000
    assert served.exit_code == 0


def test_a_stale_discovery_file_is_ignored(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    discovery.write(db, discovery.Running(url="http://127.0.0.1:9/", pid=2 ** 22 + 7,
                                          started_at=0.0))
    assert json.loads(discovery.discovery_path(db).read_text())["pid"] == 2 ** 22 + 7
    assert discovery.find(db) is None  # (no such process, nothing answers there)


def _searched_by(db: Path) -> str:
    """What ``rifflux search --verbose`` on ``db`` says about where it searched (the index
    is empty: it exits 1 with no results, wherever it searched)."""
    return rifflux_cli(db.parent, "--db", str(db), "search", "retry", "--verbose").stderr


def test_a_second_server_on_the_index_leaves_the_first_one_discoverable(
        tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    with serving(db) as first:
        named_first = discovery.discovery_path(db).read_text()
        with serving(db, announced=False) as second:
            assert second.url != first.url
            assert httpx2.get(second.url + "healthz").status_code == 200  # (it serves too)
            assert (f"a rifflux serve already runs on this index at {first.url} (pid "
                    f"{first.proc.pid}); this one is not announced in "
                    f"{discovery.discovery_path(db)}") in second.log_text()
            assert discovery.discovery_path(db).read_text() == named_first
            found = discovery.find(db)
            assert found is not None and (found.pid, found.url) == (first.proc.pid, first.url)
        assert second.exit_code == 0
        assert discovery.discovery_path(db).read_text() == named_first  # (not removed)
        assert (f"answered by rifflux serve at {first.url} (pid {first.proc.pid})"
                in _searched_by(db))
        assert "already runs" not in first.log_text()
    assert not discovery.discovery_path(db).exists()  # (the first removes its own)


def test_a_second_server_is_announced_once_the_first_one_stops(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    with serving(db) as first, serving(db, announced=False) as second:
        named_first = discovery.discovery_path(db).read_text()
        os.kill(first.proc.pid, signal.SIGSTOP)  # (paused: it answers nothing, yet runs)
        try:
            time.sleep(2 * CLAIM_AGAIN_EVERY + 0.5)  # (the second looks twice meanwhile)
            assert discovery.discovery_path(db).read_text() == named_first  # (kept)
        finally:
            os.kill(first.proc.pid, signal.SIGCONT)
        assert first.stop() == 0  # (it removes its own file)

        def names_the_second() -> discovery.Running | None:
            found = discovery.find(db)
            return found if found is not None and found.pid == second.proc.pid else None

        found = until(names_the_second, within=30)
        assert found.url == second.url
        assert (f"the rifflux serve announced on this index stopped: this one is announced "
                f"in {discovery.discovery_path(db)} now") in second.log_text()
        assert (f"answered by rifflux serve at {second.url} (pid {second.proc.pid})"
                in _searched_by(db))
    assert not discovery.discovery_path(db).exists()  # (the second removes its own)


def test_a_server_replaces_a_stale_discovery_file_and_removes_it_when_it_stops(
        tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    discovery.write(db, discovery.Running(url="http://127.0.0.1:9/", pid=2 ** 22 + 7,
                                          started_at=0.0))
    with serving(db) as served:  # (it waits for the file to name this server)
        assert "already runs" not in served.log_text()
    assert not discovery.discovery_path(db).exists()


def test_a_server_removes_the_discovery_file_only_while_it_names_that_server(
        tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    mine = discovery.Running(url="http://127.0.0.1:7475/", pid=os.getpid(), started_at=1.0)
    theirs = discovery.Running(url="http://127.0.0.1:7474/", pid=os.getpid() + 1,
                               started_at=0.0)
    same_pid_elsewhere = discovery.Running(url="http://127.0.0.1:7476/", pid=os.getpid(),
                                           started_at=2.0)
    discovery.write(db, theirs)
    discovery.remove(db, mine)
    discovery.remove(db, same_pid_elsewhere)
    assert json.loads(discovery.discovery_path(db).read_text())["url"] == theirs.url
    discovery.write(db, mine)
    discovery.remove(db, same_pid_elsewhere)
    assert discovery.discovery_path(db).exists()
    discovery.remove(db, mine)
    assert not discovery.discovery_path(db).exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_ctrl_c_and_hangup_stop_it_with_exit_0(tmp_path: Path, sig: int) -> None:
    with serving(tmp_path / "index.db", stop_with=sig) as served:
        assert httpx2.get(served.url + "healthz").status_code == 200
    assert served.exit_code == 0


def test_sigterm_ends_an_event_stream_cleanly_before_the_server_stops(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    with serving(db) as served:
        with httpx2.Client(base_url=served.url, timeout=30) as http, \
                http.stream("GET", "/api/events") as stream:
            lines = stream.iter_lines()
            assert next(lines) == "event: hello"
            served.proc.send_signal(signal.SIGTERM)
            rest = list(lines)  # (a stream cut off raises: an incomplete chunked read)
        served.exit_code = served.proc.wait(timeout=30)
    assert rest[0].startswith("data: {")
    log = served.log_text()
    assert "SIGTERM received" in log and "without completing response" not in log, log
