"""The ``rifflux`` command line, run as a subprocess on a temporary folder."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from rifflux import Rifflux
from rifflux.actors.index_job import _PROCESS_THRESHOLD
from rifflux.cli.arguments import parse_args
from rifflux.store.sqlite.lease import Lease

from .helpers import GatedEmbedder, cli_env, eventually, rifflux_cli


def write_notes(root: Path) -> Path:
    notes = root / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "garden.md").write_text(
        "# Garden\n\n## Tomatoes\n\n" + "Tomatoes want full sun and deep watering. " * 6
        + "\n\n## Compost\n\n" + "Turn the compost pile every week. " * 8 + "\n",
        encoding="utf-8")
    (notes / "sub" / "guide.md").write_text(
        "# Guide\n\n## Install\n\n### Linux\n\nRun the wombat installer with sudo.\n",
        encoding="utf-8")
    (notes / "todo.csv").write_text("wombat shopping list\n", encoding="utf-8")
    return notes


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    """A temporary folder with notes/ indexed into index.db."""
    notes = write_notes(tmp_path)
    done = rifflux_cli(tmp_path, "--db", "index.db", "index", str(notes))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Indexed 2 files (0 unchanged, 0 removed)")
    return tmp_path


def test_search_json_has_the_search_rifflux_fields(indexed: Path) -> None:
    done = rifflux_cli(indexed, "search", "wombat installer", "--json", "--top-k", "1",
                       "--db", "index.db")
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert (out["query"], out["mode"], out["count"]) == ("wombat installer", "hybrid", 1)
    assert out["embedding_model"] == "hash-384-v1"
    hit = out["results"][0]
    assert (hit["path"], hit["heading_path"]) == ("sub/guide.md", "Guide > Install > Linux")
    assert set(hit["score_breakdown"]) == {"rrf", "lexical_rank", "semantic_rank", "fused"}


def test_search_prints_path_breadcrumb_score_and_snippet(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--mode", "lexical")
    assert done.returncode == 0, done.stderr
    first, snippet = done.stdout.splitlines()[:2]
    assert "notes/garden.md" in first and "Garden > Compost" in first and "bm25" in first
    assert "Turn the compost pile" in snippet


def test_search_filters_and_prints_clickable_locations(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "search", "wombat installer",
                       "--path", "sub/**", "--since", "1d", "--mode", "lexical")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].split()[1] == "notes/sub/guide.md:1-7"
    elsewhere = rifflux_cli(indexed, "--db", "index.db", "search", "wombat installer",
                            "--path", "nowhere/**", "--mode", "lexical")
    assert elsewhere.returncode == 1 and "no results" in elsewhere.stderr
    assert "within these filters" in elsewhere.stderr
    as_json = rifflux_cli(indexed, "--db", "index.db", "search", "wombat installer",
                          "--path", "nowhere/**", "--json")
    assert as_json.returncode == 1 and "relax them" in json.loads(as_json.stdout)["hint"]
    bad = rifflux_cli(indexed, "--db", "index.db", "search", "wombat", "--before", "someday")
    assert bad.returncode == 2 and "cannot read 'someday' as a date" in bad.stderr
    assert bad.stderr.startswith("rifflux: error: --before: ")  # (the flag, not the argument)


def test_a_search_while_texts_lack_vectors_says_semantic_results_are_partial(
    indexed: Path,
) -> None:
    with sqlite3.connect(indexed / "index.db") as conn:
        conn.execute("DELETE FROM embeddings")  # as an interrupted `rifflux index` leaves it
        texts = conn.execute("SELECT COUNT(DISTINCT content_hash) FROM chunks").fetchone()[0]
    # Another process holds the embedding lease, so this search embeds nothing itself.
    lease = Lease(indexed / "index.db")
    assert lease.try_acquire()
    try:
        done = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--json")
    finally:
        lease.release()
    assert done.returncode == 0, done.stderr
    assert texts > 1 and json.loads(done.stdout)["pending_embeddings"] == texts
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"rifflux: {texts} chunks without a vector yet: semantic results "
                           "cover part of the index")


@pytest.mark.anyio
async def test_a_search_while_another_process_embeds_says_which_one(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    gated = GatedEmbedder("hash-384-v1")  # (the command line's model: no vector dropped)
    async with Rifflux(tmp_path / "index.db", embedder=gated) as rf:
        await rf.reindex(notes, background=True)

        def embedding() -> bool:  # (as its heartbeat, every 5 s, wrote its roles)
            with sqlite3.connect(tmp_path / "index.db") as conn:
                rows = conn.execute("SELECT roles FROM processes WHERE pid = ?",
                                    (os.getpid(),)).fetchall()
            return gated.entered.is_set() and bool(rows) and "embedder" in rows[0][0]

        try:
            await eventually(embedding, within=20)
            done = await anyio.to_thread.run_sync(partial(
                rifflux_cli, tmp_path, "--db", "index.db", "search", "compost"))
        finally:
            gated.gate.set()
    assert done.returncode == 0, done.stderr
    assert re.search(r"chunks without a vector yet: semantic results cover part of the index "
                     rf"\(process {os.getpid()} is embedding them now\)", done.stderr), \
        done.stderr


def test_show_prints_the_lines_of_a_hit_with_their_numbers(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "show", "notes/sub/guide.md:3-7")
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.endswith("notes/sub/guide.md:3-7 (of 7 lines)")
    assert lines[0].split("│") == ["3 ", " ## Install"]
    assert lines[-1].split("│") == ["7 ", " Run the wombat installer with sudo."]
    whole = rifflux_cli(indexed, "--db", "index.db", "show", "sub/guide.md")  # root-relative
    assert whole.returncode == 0 and len(whole.stdout.splitlines()) == 8
    outside = rifflux_cli(indexed, "--db", "index.db", "show", "../x.md:1")
    assert outside.returncode == 2 and "leaves its indexed folder" in outside.stderr
    lines = json.loads(rifflux_cli(indexed, "--db", "index.db", "show", "sub/guide.md:3-4",
                                   "--json").stdout)
    assert (lines["path"], lines["start_line"], lines["end_line"]) == ("sub/guide.md", 3, 4)
    assert lines["text"] == "## Install\n" and lines["total_lines"] == 7


def test_search_with_no_results_exits_1(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "search", "zzyzx", "--mode", "lexical",
                       "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["count"] == 0
    assert "no results: nothing matched: try other words" in done.stderr
    # hybrid: the semantic branch always finds something; the answer says it is all it is
    meaning = rifflux_cli(indexed, "--db", "index.db", "search", "zzyzx", "--json")
    assert meaning.returncode == 0 and json.loads(meaning.stdout)["count"] > 0
    assert "only close in meaning" in json.loads(meaning.stdout)["hint"]
    assert "only close in meaning" in meaning.stderr
    found = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--json")
    assert "hint" not in json.loads(found.stdout) and not found.stderr


def test_a_closed_stdout_ends_a_search_quietly(indexed: Path) -> None:
    # as in `rifflux search q | head -1`: the reader is gone before the results are written
    with subprocess.Popen(
        [sys.executable, "-m", "rifflux", "search", "water", "--db", "index.db"], cwd=indexed,
        env=cli_env(indexed), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as search:
        assert search.stdout is not None and search.stderr is not None
        search.stdout.close()
        code = search.wait(timeout=120)
        stderr = search.stderr.read().decode()
    assert code == 0, stderr  # as Unix tools end when their reader has gone
    assert not stderr


def test_status_json_reports_the_index(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "status", "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["files"] == 2 and status["chunks"] >= 3
    assert status["pending_embeddings"] == 0 and status["embeddings"] > 0
    assert status["db_path"] == str((indexed / "index.db").resolve())
    # counted for the model the index was embedded with, which status does not load
    assert status["embedding_counts_model"] == "hash-384-v1"
    assert (status["embedding_model_state"], status["embedding_model"]) == ("not_loaded", None)
    loaded = json.loads(rifflux_cli(indexed, "--db", "index.db", "status", "--json",
                                    "--model").stdout)
    assert (loaded["embedding_backend"], loaded["embedding_model"]) == ("hash", "hash-384-v1")


def test_status_prints_a_summary(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "status")
    assert done.returncode == 0, done.stderr
    assert "files" in done.stdout and "hash-384-v1" in done.stdout
    assert re.search(r"^files +2 in 1 folder *$", done.stdout, re.MULTILINE), done.stdout


def test_flags_beat_environment_which_beats_defaults(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    env = cli_env(tmp_path, RIFFLUX_DB_PATH=str(tmp_path / "from-env.db"))
    assert rifflux_cli(tmp_path, "index", str(notes), env=env).returncode == 0
    assert (tmp_path / "from-env.db").is_file()
    assert rifflux_cli(tmp_path, "index", str(notes), "--db", "flag.db", env=env).returncode == 0
    assert (tmp_path / "flag.db").is_file()
    assert not (tmp_path / "xdg").exists()  # the default location was never used
    included = rifflux_cli(tmp_path, "--db", "csv.db", "--include", "*.csv", "index",
                           str(notes), "--json", env=env)
    assert json.loads(included.stdout)["indexed_files"] == 1  # todo.csv only


def test_index_json_and_a_second_run_skips_unchanged_files(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "index", "notes", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["indexed_files"], result["skipped_files"]) == (0, 2)
    assert result["embedding_backend"] == "hash"


def test_missing_index_path_is_a_one_line_error(tmp_path: Path) -> None:
    done = rifflux_cli(tmp_path, "--db", "index.db", "index", "no-such-folder")
    assert done.returncode == 1
    assert "no-such-folder" in done.stderr and "Traceback" not in done.stderr


def test_search_without_an_index_says_how_to_make_one(tmp_path: Path) -> None:
    done = rifflux_cli(tmp_path, "--db", "absent.db", "search", "anything")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"rifflux: error: no index at {tmp_path / 'absent.db'}: run `rifflux index PATH` "
        "first, or point --db (RIFFLUX_DB_PATH) at an existing index"
    ]
    assert not (tmp_path / "absent.db").exists()


@pytest.mark.parametrize("args", [
    ["search", "q", "--top-k", "0"],
    ["search", "q", "--mode", "fuzzy"],
    ["frobnicate"],
    ["index"],
    ["--backend", "gpu", "status"],
    ["mcp", "--rrf-k", "many"],
])
def test_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    done = rifflux_cli(tmp_path, *args)
    assert done.returncode == 2
    assert "usage:" in done.stderr and "Traceback" not in done.stderr


def test_mcp_help_goes_to_stdout_without_starting_a_server(tmp_path: Path) -> None:
    done = rifflux_cli(tmp_path, "mcp", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage:") and "--watch" in done.stdout


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("RIFFLUX_RRF_K", "many", "setting rrf_k: cannot use 'many'"),
    ("RIFFLUX_LOG_LEVEL", "LOUD", "log_level must be one of DEBUG, INFO"),
    ("RIFFLUX_AUTO_REINDEX", "maybe",
     "setting auto_reindex_on_search: cannot use 'maybe' (say 1/true/yes/on or 0/false"),
    ("RIFFLUX_MAX_FILE_BYTES", "-5", "max_file_bytes must be a whole number of at least 1"),
])
def test_bad_environment_values_are_usage_errors(
    tmp_path: Path, variable: str, value: str, message: str
) -> None:
    done = rifflux_cli(tmp_path, "status", env=cli_env(tmp_path, **{variable: value}))
    assert done.returncode == 2
    assert done.stderr.startswith(f"rifflux: error: {message}")
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_model_directory_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "model.onnx").write_bytes(b"")
    typo = rifflux_cli(tmp_path, "--db", "i.db", "--backend", "auto", "index", str(notes),
                       "--model-dir", "modle")
    half = rifflux_cli(tmp_path, "--db", "i.db", "search", "sun",
                       env=cli_env(tmp_path, RIFFLUX_MODEL_DIR=str(tmp_path / "half"),
                                   RIFFLUX_EMBEDDING_BACKEND="onnx"))
    assert typo.returncode == 2 and half.returncode == 2
    assert f"model directory {tmp_path / 'modle'} not found" in typo.stderr
    assert "half/tokenizer.json not found" in half.stderr
    assert not (tmp_path / "i.db").exists()  # nothing indexed without the model asked for


@pytest.mark.anyio
async def test_watch_logs_each_batch_until_interrupted(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    process = await anyio.open_process(
        [sys.executable, "-m", "rifflux", "--db", "index.db", "watch", str(notes)],
        cwd=tmp_path, env=cli_env(tmp_path),
    )
    async with process:
        assert process.stdout is not None
        lines = BufferedByteReceiveStream(process.stdout)
        try:
            with anyio.fail_after(60):
                startup = (await lines.receive_until(b"\n", 1 << 16)).decode()
                assert "startup" in startup and "2 indexed (garden.md, sub/guide.md)" in startup
                (notes / "new.md").write_text("# New\n\nA fresh note.\n", encoding="utf-8")
                batch = ""
                while "new.md" not in batch:  # (a watcher restart adds a rescan line first)
                    batch = (await lines.receive_until(b"\n", 1 << 16)).decode()
                assert "watcher" in batch and "1 indexed (new.md)" in batch
                process.send_signal(signal.SIGINT)
                assert await process.wait() == 130
        finally:  # a failure must fail the test, not leave it waiting for the process
            if process.returncode is None:
                process.kill()


@pytest.mark.anyio
async def test_an_interrupted_index_says_what_it_kept_and_how_to_finish(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    for n in range(_PROCESS_THRESHOLD + 6):  # (parsed in worker processes: Ctrl-C reaches them)
        (notes / f"n{n}.md").write_text(f"# Note {n}\n\nA line of note {n}.\n",
                                        encoding="utf-8")
    lease = Lease(tmp_path / "index.db")  # another process embeds: the job waits for it
    assert lease.try_acquire()
    process = await anyio.open_process(
        [sys.executable, "-m", "rifflux", "--db", "index.db", "index", str(notes)],
        cwd=tmp_path, env=cli_env(tmp_path), start_new_session=True)
    try:
        async with process:
            assert process.stderr is not None
            lines = BufferedByteReceiveStream(process.stderr)
            with anyio.fail_after(60):
                line = ""
                while not line.startswith("embedding:"):  # (its files written: it waits)
                    line = (await lines.receive_until(b"\n", 1 << 16)).decode()
                os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C does: the whole group
                assert await process.wait() == 130
                rest = b""
                with contextlib.suppress(anyio.EndOfStream, anyio.IncompleteRead):
                    while True:
                        rest += await lines.receive(1 << 16)
    finally:  # a failure must fail the test, not leave it waiting for the process
        lease.release()
        if process.returncode is None:
            process.kill()
    said = rest.decode()
    assert re.search(rf"rifflux: interrupted: all {_PROCESS_THRESHOLD + 8} files were written, "
                     r"and are searchable; "
                     r"\d+ chunks still without a vector \(found by their words, not yet by "
                     r"meaning\)\. Run the same `rifflux index` again to finish", said), said
    assert "Traceback" not in said  # (nor the parse workers', which Ctrl-C reaches too)


def test_index_says_what_the_globs_left_out_and_counts_in_plurals(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    (notes / "node_modules" / "pkg").mkdir(parents=True)
    for name in ("readme.md", "index.js", "more.md"):
        (notes / "node_modules" / "pkg" / name).write_text("x\n", encoding="utf-8")
    done = rifflux_cli(tmp_path, "--db", "i.db", "index", str(notes / "sub"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Indexed 1 file (0 unchanged, 0 removed)")
    assert "1 chunk," in done.stdout and "(None)" not in done.stdout
    whole = rifflux_cli(tmp_path, "--db", "i.db", "index", str(notes))
    assert "3 files under node_modules/, excluded by default (node_modules); " \
           "RIFFLUX_EXCLUDE replaces the default excludes" in whole.stderr
    assert "1 file not matching the include globs (the default kinds: markdown, text, pdf, " \
           "pptx, docx); --kinds or --include to change" in whole.stderr
    (notes / ".gitignore").write_text("drafts/\n", encoding="utf-8")
    (notes / "drafts").mkdir()
    (notes / "drafts" / "d.md").write_text("# Draft\n", encoding="utf-8")
    ignored = rifflux_cli(tmp_path, "--db", "i.db", "index", str(notes))
    assert "1 file ignored by an ignore file (.gitignore, .ignore, .riffluxignore); " \
           "--no-ignore-files to change" in ignored.stderr


def test_exclude_adds_to_the_default_excludes(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    (notes / ".git").mkdir()
    (notes / ".git" / "x.md").write_text("# Git internals\n", encoding="utf-8")
    (notes / "bulk").mkdir()
    (notes / "bulk" / "b.md").write_text("# Bulk\n", encoding="utf-8")
    done = rifflux_cli(tmp_path, "--db", "i.db", "index", str(notes), "--exclude", "bulk")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Indexed 2 files")  # garden.md and sub/guide.md only
    assert "1 file under bulk/, excluded (bulk); --exclude to change" in done.stderr
    assert "1 file under .git/, excluded by default (.git)" in done.stderr
    empty = rifflux_cli(tmp_path, "--db", "j.db", "index", str(notes), "--exclude", "")
    assert "1 file under .git/, excluded by default (.git)" in empty.stderr  # still


def test_a_flag_replaces_a_bad_environment_value_and_hash_needs_no_model(
    tmp_path: Path,
) -> None:
    notes = write_notes(tmp_path)
    env = cli_env(tmp_path, RIFFLUX_LOG_LEVEL="verbose", RIFFLUX_MODEL_DIR="nowhere")
    done = rifflux_cli(tmp_path, "--db", "i.db", "--log-level", "ERROR", "--backend", "hash",
                       "index", str(notes), env=env)
    assert done.returncode == 0, done.stderr  # flags beat the environment, checked after


def test_search_takes_words_without_quotes_and_refuses_an_empty_query(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "search", "run", "the", "wombat",
                       "installer", "--json", "--explain", "--snippets", "--max-per-file", "1")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["query"] == "run the wombat installer"
    assert out["explain"]["fts_query"] == '"run" OR "wombat" OR "installer"'
    assert out["explain"]["stopwords_dropped"] == ["the"]
    assert out["explain"]["fts_every"] is None
    assert len({(r["root"], r["path"]) for r in out["results"]}) == out["count"]
    hit = out["results"][0]
    assert "content" not in hit and "**wombat** **installer**" in hit["snippet"]
    assert {"lexical_rank", "bm25"} <= set(hit["explain"])
    for empty in ([], ["  "]):
        refused = rifflux_cli(indexed, "--db", "index.db", "search", *empty)
        assert refused.returncode == 2, refused.stderr
        assert "rifflux: error" in refused.stderr or "usage:" in refused.stderr


def test_explain_prints_what_the_search_ran(indexed: Path) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", "search", "the", "wombat", "教程",
                       "--explain", "--tag", "none", "--path", "sub/**", "--mode", "lexical")
    assert done.returncode == 1  # (no note has that tag)
    assert done.stdout.splitlines() == [
        'lexical query: "wombat" OR "教程"',
        'holding every word first: "wombat" AND "教程"',
        "stopwords left out: the",
        "filters: paths sub/**; tags none",
    ]


def test_show_prints_a_chunk_by_its_id_with_where_it_is(indexed: Path) -> None:
    found = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--json")
    hit = json.loads(found.stdout)["results"][0]
    done = rifflux_cli(indexed, "--db", "index.db", "show", hit["chunk_id"])
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.endswith(f"notes/garden.md:{hit['line_start']}-{hit['line_end']}  "
                          f"{hit['heading_path']}")
    assert "\n".join(rest) == hit["content"]
    as_json = rifflux_cli(indexed, "--db", "index.db", "show", hit["chunk_id"], "--json")
    chunk = json.loads(as_json.stdout)
    same = {"chunk_id", "root", "path", "heading_path", "content", "line_start", "line_end"}
    assert {k: chunk[k] for k in same} == {k: hit[k] for k in same}
    gone = rifflux_cli(indexed, "--db", "index.db", "show", "0" * 20)
    assert gone.returncode == 1 and "no chunk" in gone.stderr
    short = rifflux_cli(indexed, "--db", "index.db", "show", hit["chunk_id"][:8])
    assert short.returncode == 1 and "neither an indexed file, nor a chunk id, nor an " \
        "indexed commit: a chunk id has 20 hex digits" in short.stderr
    # a note without headings: its chunk's line names no breadcrumb, and ends there
    (indexed / "notes" / "plain.md").write_text("Just a line about quinces.\n")
    assert rifflux_cli(indexed, "--db", "index.db", "index", "notes").returncode == 0
    plain = json.loads(rifflux_cli(indexed, "--db", "index.db", "search", "quinces",
                                   "--json").stdout)["results"][0]
    first = rifflux_cli(indexed, "--db", "index.db", "show", plain["chunk_id"]).stdout
    assert first.splitlines()[0].endswith("notes/plain.md:1-1")


def test_mcp_started_by_hand_says_what_it_is_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    import pty

    controller, terminal = pty.openpty()  # stdin is a terminal, as when typed at a prompt
    try:
        with subprocess.Popen(
            [sys.executable, "-m", "rifflux", "--db", "i.db", "mcp"], cwd=tmp_path,
            env=cli_env(tmp_path), stdin=terminal, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as server:
            assert server.stderr is not None
            said = server.stderr.readline().decode()
            assert "serving MCP on stdio" in said and "Ctrl-C stops" in said
            server.send_signal(signal.SIGINT)
            assert server.wait(timeout=60) == 130
            assert b"Traceback" not in server.stderr.read()
    finally:
        os.close(controller)
        os.close(terminal)


def test_index_of_home_needs_yes_and_forget_removes_it_again(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    env = cli_env(tmp_path, HOME=str(notes))
    refused = rifflux_cli(tmp_path, "--db", "index.db", "index", str(notes), env=env)
    assert refused.returncode == 1
    assert "your home folder" in refused.stderr and "--yes" in refused.stderr
    assert refused.stderr.startswith(f"rifflux: error: nothing indexed: {notes}: ")
    assert refused.stdout == "" and not (tmp_path / "index.db").exists()
    allowed = rifflux_cli(tmp_path, "--db", "index.db", "index", str(notes), "--yes", env=env)
    assert allowed.returncode == 0 and allowed.stdout.startswith("Indexed 2 files")
    status = rifflux_cli(tmp_path, "--db", "index.db", "status", env=env)
    assert f"{notes}: 2 files, " in status.stdout
    part = rifflux_cli(tmp_path, "--db", "index.db", "forget", str(notes / "sub"), env=env)
    assert part.returncode == 0, part.stderr
    assert part.stdout.splitlines() == [f"Forgot {notes / 'sub'}: 1 file removed from the index",
                                        "The index now holds 1 file in 1 folder"]
    whole = rifflux_cli(tmp_path, "--db", "index.db", "forget", str(notes), "nowhere", env=env)
    assert whole.returncode == 1
    assert f"Forgot the folder {notes}: 1 file removed" in whole.stdout
    assert "'nowhere' is not in the index: relative paths are read against" in whole.stderr
    assert "The index now holds 0 files in 0 folders" in whole.stdout


# ---------------------------------------------------------------- small things (issue 22)


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    done = rifflux_cli(tmp_path, "--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"rifflux {version('rifflux')}\n",
                                                           "")


def write_tagged(root: Path) -> Path:
    """notes/ with tags in front matter and inline, and front matter fields."""
    notes = root / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "beans.md").write_text(
        "---\ntags: [garden, veg/beans]\nstatus: draft\nowners: [ann, bo]\n---\n# Beans\n\n"
        "Beans want water. #summer\n", encoding="utf-8")
    (notes / "sub" / "peas.md").write_text(
        "---\ntags: [garden]\nstatus: done\nowners: [ann]\n---\n# Peas\n\nPeas want water "
        "too.\n", encoding="utf-8")
    (notes / "plain.md").write_text("# Plain\n\nNo tags, and water.\n" + "More words. " * 200,
                                    encoding="utf-8")
    done = rifflux_cli(root, "--db", "index.db", "index", str(notes))
    assert done.returncode == 0, done.stderr
    return notes


def test_tags_lists_the_tags_in_use_most_used_first(tmp_path: Path) -> None:
    write_tagged(tmp_path)
    done = rifflux_cli(tmp_path, "--db", "index.db", "tags")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["2  garden", "1  summer", "1  veg", "1  veg/beans"]
    as_json = json.loads(rifflux_cli(tmp_path, "--db", "index.db", "tags", "--json").stdout)
    assert as_json[0] == {"tag": "garden", "files": 2} and len(as_json) == 4
    narrowed = rifflux_cli(tmp_path, "--db", "index.db", "tags", "--path", "sub/**")
    assert narrowed.stdout.splitlines() == ["1  garden"]
    none = rifflux_cli(tmp_path, "--db", "index.db", "tags", "--path", "nowhere/**")
    assert none.returncode == 1 and "no tags in the indexed files matching --path" in none.stderr


def test_files_lists_what_is_indexed_with_chunk_counts(tmp_path: Path) -> None:
    notes = write_tagged(tmp_path)
    write_notes(tmp_path / "other")
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", "other/notes").returncode == 0
    done = rifflux_cli(tmp_path, "--db", "index.db", "files", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    status = json.loads(rifflux_cli(tmp_path, "--db", "index.db", "status", "--json").stdout)
    assert len(listed) == status["files"] == 5
    assert sum(f["chunks"] for f in listed) == status["chunks"]
    plain = next(f for f in listed if f["path"] == "plain.md")
    assert plain["chunks"] > 1 and plain["title"] == "Plain"
    assert plain["root"] == str(notes.resolve())
    text = rifflux_cli(tmp_path, "--db", "index.db", "files", "--root", str(notes))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [  # chunks, the file as a person opens it, its title
        f"{f['chunks']}  notes/{f['path']}  {f['title']}"
        for f in listed if f["root"] == str(notes.resolve())]
    bad = rifflux_cli(tmp_path, "--db", "index.db", "files", "--root", "attic")
    assert bad.returncode == 2 and "'attic' is not an indexed folder" in bad.stderr


def test_search_filters_by_front_matter_key_value(tmp_path: Path) -> None:
    write_tagged(tmp_path)

    def found(*filters: str) -> list[str]:
        done = rifflux_cli(tmp_path, "--db", "index.db", "search", "water", "--json",
                           "--mode", "lexical", *filters)
        return sorted(r["path"] for r in json.loads(done.stdout)["results"])

    assert found("--frontmatter", "status=draft") == ["beans.md"]
    assert found("--frontmatter", "owners=ann") == ["beans.md", "sub/peas.md"]
    assert found("--frontmatter", "owners=ann", "--frontmatter", "owners=bo") == ["beans.md"]
    assert found("--frontmatter", "owners=ann", "--frontmatter", "status=done") == [
        "sub/peas.md"]
    bad = rifflux_cli(tmp_path, "--db", "index.db", "search", "water", "--frontmatter", "draft")
    assert bad.returncode == 2
    assert bad.stderr == ("rifflux: error: --frontmatter 'draft': write KEY=VALUE, e.g. "
                          "--frontmatter status=draft\n")


@pytest.mark.parametrize("option", ["--since", "--before"])
def test_an_age_written_negative_needs_no_equals_sign(indexed: Path, option: str) -> None:
    spaced = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--json",
                         "--mode", "lexical", option, "-5d")
    joined = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--json",
                         "--mode", "lexical", f"{option}=5d")
    assert "error" not in spaced.stderr and spaced.returncode == joined.returncode
    assert json.loads(spaced.stdout)["count"] == json.loads(joined.stdout)["count"]
    assert json.loads(spaced.stdout)["count"] == (1 if option == "--since" else 0)


@pytest.mark.parametrize("depth", ["0", "11"])
@pytest.mark.parametrize("command", [["neighbors", "notes/garden.md"],
                                     ["search", "compost", "--near", "notes/garden.md"]])
def test_a_depth_out_of_range_is_one_usage_error_naming_the_range(
    indexed: Path, command: list[str], depth: str,
) -> None:
    done = rifflux_cli(indexed, "--db", "index.db", *command, "--depth", depth)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"rifflux: error: depth must be a whole number from 1 to 10, "
                           f"not {depth}")


def test_show_with_a_range_that_is_not_one_says_so(indexed: Path) -> None:
    for bad in ("abc", "5-", "x-3"):
        done = rifflux_cli(indexed, "--db", "index.db", "show", f"notes/sub/guide.md:{bad}")
        assert done.returncode == 2, done.stderr
        assert done.stderr == (f"rifflux: error: {bad!r} is not a range of lines: write "
                               "notes/sub/guide.md:START-END, notes/sub/guide.md:LINE or "
                               "notes/sub/guide.md (lines count from 1)\n")
    unknown = rifflux_cli(indexed, "--db", "index.db", "show", "notes/nowhere.md:abc")
    assert unknown.returncode == 1 and "is not in the index" in unknown.stderr


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_a_shell_pipe_closed_early_ends_the_search_quietly(indexed: Path,
                                                          output: list[str]) -> None:
    # `| head -n 0` has gone before the search writes a line (a write then always fails
    # with EPIPE); `| head -1` goes after the first line
    search = f"{sys.executable} -m rifflux --db index.db search compost {' '.join(output)}"
    script = (f"{search} | head -n 0; echo \"status ${{PIPESTATUS[0]}}\"; "
              f"{search} | head -1; echo \"status ${{PIPESTATUS[0]}}\"")
    done = subprocess.run(["bash", "-c", script], cwd=indexed, env=cli_env(indexed),
                          capture_output=True, text=True, timeout=120, check=False)
    first = "{" if output else " 1. notes/garden.md:"
    lines = done.stdout.splitlines()
    assert lines[0] == "status 0" and lines[1].startswith(first) and lines[2] == "status 0"
    assert done.stderr == ""


@pytest.mark.parametrize(("args", "message"), [
    (["--db", "notes", "status"], "is a folder: give the path of an index file"),
    (["--db", "notes", "index", "notes"], "is a folder: give the path of an index file"),
    (["--db", "notes/garden.md", "status"], "garden.md is not a Rifflux index"),
    (["--db", "index.db", "--include", "", "index", "notes"], "include names no glob"),
    (["--db", "index.db", "mcp", "--auto-reindex-interval", "-5"],
     "auto_reindex_min_interval must be a number of seconds of at least 0"),
])
def test_configuration_errors_exit_2_with_one_line(indexed: Path, args: list[str],
                                                    message: str) -> None:
    done = rifflux_cli(indexed, *args)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("rifflux: error: ") and message in line
    assert (indexed / "notes" / "garden.md").read_text(encoding="utf-8").startswith("# Garden")


def test_plain_progress_counts_with_separators_and_no_files_when_none_were_planned() -> None:
    from rifflux.cli.progress import plain_line

    status: Any = {"chunks": 12536, "embeddings": 8878, "pending_embeddings": 3658}
    resumed: Any = {"phase": "embedding", "indexed_files": 0, "planned_files": 0}
    assert plain_line(resumed, status, "21 embeddings/s", 174.2) == (
        "embedding: 12,536 chunks, 8,878 embeddings (3,658 pending), 21 embeddings/s, "
        "ETA 174 s")
    fresh: Any = {"phase": "indexing", "indexed_files": 1200, "planned_files": 3640}
    assert plain_line(fresh, status, "300.0 files/s", None).startswith(
        "indexing: 1,200/3,640 files, 12,536 chunks, ")


def test_indexing_a_folder_without_files_of_the_kinds_indexed_says_so(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("a table, not notes\n", encoding="utf-8")
    done = rifflux_cli(tmp_path, "--db", "index.db", "index", str(other))
    assert done.returncode == 0, done.stderr
    assert f"warning: {other} holds no files of the kinds indexed (*.md, " in done.stderr
    assert "--kinds or --include" in done.stderr
    notes = write_notes(tmp_path)
    fine = rifflux_cli(tmp_path, "--db", "index.db", "index", str(notes))
    assert fine.returncode == 0 and "holds no files" not in fine.stderr, fine.stderr


def test_an_option_a_command_does_not_take_is_reported_with_that_commands_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["search", "-x", "compost"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rifflux search ") and "--top-k N" in err
    assert err.endswith("rifflux search: error: unrecognized arguments: -x "
                        "(see `rifflux search --help`)\n")
    assert parse_args(["search", "--since", "-5d", "compost"]).query == ["compost"]
    with pytest.raises(SystemExit):  # a mistyped option or command: the closest is named
        parse_args(["search", "compost", "--tpo-k", "3"])
    assert capsys.readouterr().err.endswith("unrecognized arguments: --tpo-k 3 (did you mean "
                                            "--top-k?) (see `rifflux search --help`)\n")
    with pytest.raises(SystemExit):
        parse_args(["serach", "compost"])
    assert capsys.readouterr().err.endswith("rifflux: error: unknown command 'serach': did "
                                            "you mean search? (`rifflux --help` lists them)\n")


def test_reading_commands_answer_while_another_process_holds_the_write_lock(
    indexed: Path,
) -> None:
    holder = sqlite3.connect(indexed / "index.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # (as a long transaction of another process's)
    try:
        hybrid = rifflux_cli(indexed, "--db", "index.db", "search", "compost", "--json")
        shown = rifflux_cli(indexed, "--db", "index.db", "show", "notes/sub/guide.md:7")
        status = rifflux_cli(indexed, "--db", "index.db", "status", "--json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for done in (hybrid, shown, status):
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr and "locked" not in done.stderr
    hit = json.loads(hybrid.stdout)["results"][0]  # (both branches: the model was adopted)
    assert (hit["path"], hit["score_breakdown"]["semantic_rank"]) == ("garden.md", 1)
    assert shown.stdout.splitlines()[1].endswith("Run the wombat installer with sudo.")
    assert json.loads(status.stdout)["files"] == 2


def test_index_and_watch_say_which_files_they_skipped_and_why(tmp_path: Path) -> None:
    notes = write_notes(tmp_path)
    (notes / "binary.md").write_bytes(b"not\x00text")
    done = rifflux_cli(tmp_path, "--db", "i.db", "index", str(notes))
    assert done.returncode == 0, done.stderr
    assert f"warning: {notes / 'binary.md'}: not text: it contains NUL bytes" in done.stderr
    from rifflux.cli.commands import _batch_line

    job: Any = {"id": "j1", "status": "completed", "source": "watcher", "paths": [str(notes)],
                "started_at": 1.0, "finished_at": 1.5,
                "result": {"indexed_files": 0, "removed_files": 0, "skipped_files": 0,
                           "errors": [{"path": "secret.md", "error": "cannot read file"}],
                           "warnings": [{"path": "binary.md", "reason": "not text"}]}}
    assert _batch_line(job).endswith("0 indexed, 0 removed, 0 unchanged; secret.md: cannot "
                                     "read file; binary.md: not text (0.50 s)")


@pytest.mark.parametrize(("args", "code", "said"), [
    (["index", "/"], 1, "/ is the whole file system"),
    (["index", "HOME"], 1, "is your home folder"),
    (["index", "/", "no-such-folder"], 1, "path not found"),
    (["write-note", "a.md", "text"], 2, "writing notes is off"),
    (["--writable", "notes", "write-note", "../a.md", "text"], 2, "goes up out of the folder"),
    (["--writable", "notes", "edit-note", "a.txt", "--append", "x"], 2, "not a markdown note"),
    (["--writable", "notes", "move-note", "a.md", "../b.md"], 2, "goes up out of the folder"),
    (["recent"], 1, "no index at"),
    (["search", "otter"], 1, "no index at"),
])
def test_a_refused_command_creates_nothing(tmp_path: Path, args: list[str], code: int,
                                           said: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    args = [str(home) if a == "HOME" else a for a in args]
    done = rifflux_cli(work, "--db", "x.db", *args, env=cli_env(tmp_path, HOME=str(home)))
    assert done.returncode == code, done.stderr
    assert done.stderr.startswith("rifflux: error: ") and said in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert list(work.iterdir()) == [] and list(home.iterdir()) == []  # no index, lock, folder


def test_search_gives_a_text_once_and_says_where_else_it_is_unless_duplicates_all(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a", "b", "c"):
        (notes / f"{name}.md").write_text("# Wombats\n\nWombats dig burrows with claws.\n",
                                          encoding="utf-8")
    assert rifflux_cli(tmp_path, "--db", "index.db", "index", str(notes)).returncode == 0
    once = rifflux_cli(tmp_path, "--db", "index.db", "search", "wombat", "burrows")
    every = rifflux_cli(tmp_path, "--db", "index.db", "search", "wombat", "burrows",
                        "--duplicates", "all", "--json")
    assert once.returncode == 0 and every.returncode == 0, once.stderr + every.stderr
    lines = once.stdout.splitlines()
    assert len([line for line in lines if "Wombats" in line and ":1-3" in line]) == 1
    assert "    also in: notes/b.md:1, notes/c.md:1" in lines
    assert [h["path"] for h in json.loads(every.stdout)["results"]] == ["a.md", "b.md", "c.md"]
