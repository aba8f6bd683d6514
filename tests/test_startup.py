"""Fast from the first call: nothing loads before it is needed, lexical searches never
wait for the model, and a process never waits at exit for a load nothing used."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from rifflux import Rifflux, Settings
from rifflux.core.embedders import HashEmbedder
from rifflux.store.sqlite.reader import Reader
from rifflux.types import SearchResult

from .helpers import (
    CountingEmbedder,
    cli_env,
    cli_then,
    eventually,
    modules_loaded,
    otters_and_bread,
)
from .serving import serving

pytestmark = pytest.mark.anyio

#: What a lexical search, and every read, must never import.
_HEAVY = ("numpy", "onnxruntime", "tokenizers", "rifflux.core.embedders",
          "rifflux.core.vectors")

_CLI_THEN_MODULES = cli_then(_HEAVY)
#: What answering from a running server must not import either: the library, SQLite.
_ASKED_THE_SERVER = cli_then(("rifflux.api", "aiosqlite", "sqlite3", "anyio", *_HEAVY))


async def _python(tmp_path: Path, script: str, *args: str,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -c script args`` in ``tmp_path``, to its end (a hang ends in the timeout)."""
    return await anyio.to_thread.run_sync(lambda: subprocess.run(
        [sys.executable, "-c", script, *args], cwd=tmp_path, env=env or cli_env(tmp_path),
        capture_output=True, text=True, timeout=120, check=False))


async def _indexed(tmp_path: Path) -> Path:
    """An index of two notes with their vectors (the hash backend's)."""
    db = tmp_path / "i.db"
    async with Rifflux(db, embedding_backend="hash") as rf:
        await rf.reindex(otters_and_bread(tmp_path / "kb"))
        assert (await rf.status())["embeddings"] > 0
    return db


#: What a search and the reads do not need either, imported only to do what needs it: the
#: code that writes notes (yaml with it), an index job's (the parser with it) and the
#: watch pipeline's.
_NOT_FOR_READS = ("yaml", "rifflux.notes.ops", "rifflux.core.note_edits", "rifflux.notes.files",
                  "rifflux.actors.index_job", "rifflux.core.document", "rifflux.core.chunker",
                  "rifflux.actors.watch", "rifflux.actors.watcher", "rifflux.actors.debouncer")

#: What only `rifflux setup` and `rifflux doctor` import: the clients' files, tomlkit.
_NOT_FOR_SEARCHES = ("rifflux.cli.setup", "rifflux.cli.setup.document", "rifflux.cli.doctor",
                     "tomlkit")

#: What a command printing into a pipe does not import either: rich draws for terminals,
#: and pathspec reads globs (a search without --path has none).
_PIPED = cli_then((*_HEAVY, *_NOT_FOR_READS, "rich", "pathspec", *_NOT_FOR_SEARCHES))


@pytest.mark.parametrize("command", [
    ["search", "otter", "--mode", "lexical"],
    ["search", "otter", "--mode", "lexical", "--json", "--path", "otters.md"],
    ["status"], ["status", "--json"], ["tags"], ["files"],
    ["show", "otters.md"], ["links", "otters.md"], ["neighbors", "otters.md"],
])
async def test_a_lexical_search_and_reads_into_a_pipe_import_no_model_numpy_or_rich(
    tmp_path: Path, command: list[str]
) -> None:
    db = await _indexed(tmp_path)
    done = await _python(tmp_path, _PIPED, "--db", str(db), *command,
                         env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx"))
    # (1: an empty list: these notes have no tags and no links)
    expected = 1 if command[0] in ("tags", "neighbors") else 0
    assert done.returncode == expected, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    # (the search filtered by --path reads its glob with pathspec)
    allowed = {"pathspec"} if "--path" in command else set()
    assert set(json.loads(line.removeprefix("MODULES "))) <= allowed, done.stderr
    if command[0] == "search":
        assert "otters.md" in done.stdout
    if command[0] in ("status", "show", "files", "links"):  # results, in plain lines
        assert done.stdout.strip() and "\x1b[" not in done.stdout


#: What a one-shot search by words, ``show``, ``links``, ``files`` and ``tags`` never
#: import: they are answered directly (``rifflux.direct``: the store's reads and the
#: ranking on sqlite3 in this thread), without the library's actors, an event loop or
#: aiosqlite (about 200 ms of imports, for one read).
_NOT_DIRECTLY = ("rifflux.api", "rifflux.actors", "rifflux.actors.supervisor",
                 "rifflux.actors.service", "rifflux.actors.events", "rifflux.actors.messages",
                 "rifflux.actors.query", "rifflux.status", "rifflux.store.opening",
                 "rifflux.store.protocols", "anyio", "asyncio", "aiosqlite", "sniffio")
_DIRECTLY = cli_then((*_HEAVY, *_NOT_FOR_READS, *_NOT_DIRECTLY, "rich", *_NOT_FOR_SEARCHES))


@pytest.mark.parametrize("command", [
    ["search", "otter", "--mode", "lexical"],
    ["search", "otter", "--mode", "lexical", "--json", "--explain", "--snippets"],
    ["search", "otter", "--mode", "lexical", "--json", "--path", "otters.md", "--since", "1d"],
    ["show", "otters.md"], ["show", "otters.md:1-2", "--json"], ["links", "otters.md"],
    ["neighbors", "otters.md"], ["files"], ["files", "--json"], ["tags"],
])
async def test_a_one_shot_search_by_words_or_read_imports_no_actor_event_loop_or_aiosqlite(
    tmp_path: Path, command: list[str]
) -> None:
    db = await _indexed(tmp_path)
    done = await _python(tmp_path, _DIRECTLY, "--db", str(db), *command,
                         env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx"))
    # (1: an empty list: these notes have no tags and no links)
    assert done.returncode == (1 if command[0] in ("tags", "neighbors") else 0), done.stderr
    if command[0] not in ("tags", "neighbors"):
        assert "otters.md" in done.stdout
    allowed = {"pathspec"} if "--path" in command else set()
    assert set(modules_loaded(done.stderr)) <= allowed, done.stderr


#: ``rifflux mcp``'s first searches, as it answers them before the MCP SDK has loaded: the
#: tool's own function (``mcp.searching.search``, which ``mcp._fast_start.early`` calls)
#: on the state ``early`` builds, in a process whose model has not loaded.
_EARLY_SEARCH = textwrap.dedent(f"""
    import json, sys
    import anyio
    import rifflux.mcp._fast_start.early
    from rifflux import Rifflux, Settings
    from rifflux.mcp.auto_reindex import AutoReindex
    from rifflux.mcp.other_indexes import OtherIndexes
    from rifflux.mcp.searching import ServerState, search
    async def first_search():
        settings = Settings(db_path=sys.argv[1], model_warmup=False)
        async with Rifflux(settings=settings) as rf, OtherIndexes(settings) as others:
            auto = AutoReindex(rf=rf, enabled=False, min_interval=60, watch_paths=())
            state = ServerState(opened=rf, settings=settings, auto_reindex=auto, others=others)
            return await search(state, "otter", mode="lexical")
    answer = anyio.run(first_search)
    loaded = [m for m in {(*_HEAVY, *_NOT_FOR_READS, "mcp", "pydantic")!r}
              if m in sys.modules]
    print(json.dumps({{"paths": [h["path"] for h in answer["results"]], "loaded": loaded}}))
""")


async def test_the_mcp_servers_first_lexical_searches_import_nothing_a_search_does_not_need(
    tmp_path: Path
) -> None:
    db = await _indexed(tmp_path)
    done = await _python(tmp_path, _EARLY_SEARCH, str(db),
                         env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx"))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["paths"] == ["otters.md"]
    assert answer["loaded"] == [], done.stderr


@pytest.mark.parametrize("command", [["links", "otters.md"], ["status"], ["files"],
                                     ["show", "otters.md"], ["search", "otter"]])
async def test_a_terminal_gets_the_lines_a_pipe_gets_in_colour(
    tmp_path: Path, command: list[str]
) -> None:
    db = await _indexed(tmp_path)
    args = ("--db", str(db), *command)
    piped = await _python(tmp_path, _PIPED, *args)
    coloured = await _python(tmp_path, _PIPED, *args, env=cli_env(tmp_path, FORCE_COLOR="1"))
    assert piped.returncode == coloured.returncode == 0, coloured.stderr
    assert "rich" in coloured.stderr.splitlines()[-1]  # drawn by rich, as on a terminal
    if command[0] != "files":  # (its lines have no style)
        assert "\x1b[" in coloured.stdout
    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured.stdout)
    assert ([x.rstrip() for x in plain.splitlines()]
            == [x.rstrip() for x in piped.stdout.splitlines()])


@pytest.mark.parametrize("command", [["--help"], ["search", "--help"], ["--version"]])
async def test_help_is_answered_from_the_arguments_alone(
    tmp_path: Path, command: list[str]
) -> None:
    heavy = ("anyio", "asyncio", "sqlite3", "rifflux.api", "rich", "mcp")
    script = cli_then(heavy).replace("code = main(sys.argv[1:])", textwrap.dedent("""
        try:
            code = main(sys.argv[1:])
        except SystemExit as exit:
            code = exit.code
    """))
    done = await _python(tmp_path, script, *command)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    assert json.loads(line.removeprefix("MODULES ")) == [], done.stderr


#: What a one-shot command must not import with RIFFLUX_WATCH_PATHS set: the watcher too.
_WATCHING = cli_then(("watchfiles", "onnxruntime", "tokenizers"))


@pytest.mark.parametrize("command", [
    ["search", "otter", "--mode", "lexical"], ["status"], ["show", "otters.md"],
    ["links", "otters.md"], ["tags"], ["files"], ["index", "more", "--backend", "hash"],
])
async def test_with_rifflux_watch_paths_set_a_one_shot_command_neither_watches_nor_loads(
    tmp_path: Path, command: list[str]
) -> None:
    # RIFFLUX_WATCH_PATHS is there for mcp, serve and watch: a one-shot command does what
    # it was asked, and leaves the folder alone (no watcher, no indexing, no model)
    db = await _indexed(tmp_path)
    (tmp_path / "watched").mkdir()
    (tmp_path / "watched" / "heron.md").write_text("# Heron\n\nThe heron waits.\n")
    otters_and_bread(tmp_path / "more")
    env = cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx",
                  RIFFLUX_WATCH_PATHS=str(tmp_path / "watched"))
    done = await _python(tmp_path, _WATCHING, "--db", str(db), *command, env=env)
    assert done.returncode in (0, 1), done.stderr  # (1: no tags)
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    assert json.loads(line.removeprefix("MODULES ")) == [], done.stderr
    async with Rifflux(db, embedding_backend="hash") as rf:
        assert not await rf.search("heron", mode="lexical")
        assert str((tmp_path / "watched").resolve()) not in await rf.roots()


def _held(gate: threading.Event, started: threading.Event) -> CountingEmbedder:
    """The index's own model (``_indexed``'s: its vectors are kept and loaded, none to
    embed again), whose load waits until ``gate`` is set."""
    started.set()
    gate.wait(30)
    return CountingEmbedder(label=HashEmbedder().label)


async def test_a_lexical_search_is_answered_while_the_model_load_is_held_back(
    tmp_path: Path
) -> None:
    db = await _indexed(tmp_path)
    gate, started = threading.Event(), threading.Event()
    try:
        async with Rifflux(db, embedder=lambda: _held(gate, started)) as rf:
            with anyio.fail_after(10):
                await anyio.to_thread.run_sync(started.wait)  # the load has begun
                hits = await rf.search("otter", mode="lexical")
            assert hits and hits[0]["path"] == "otters.md"
            assert (await rf.status())["embedding_model_state"] == "loading"
            assert not gate.is_set()  # answered with the load still held
    finally:
        gate.set()


async def test_a_hybrid_search_made_during_the_load_is_answered_once_it_finishes(
    tmp_path: Path
) -> None:
    db = await _indexed(tmp_path)
    gate, started = threading.Event(), threading.Event()
    answered = anyio.Event()
    hybrid: list[SearchResult] = []
    try:
        async with Rifflux(db, embedder=lambda: _held(gate, started)) as rf:

            async def search_hybrid() -> None:
                hybrid.extend(await rf.search("otters by the river", mode="hybrid"))
                answered.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(search_hybrid)
                with anyio.fail_after(10):
                    await anyio.to_thread.run_sync(started.wait)
                    # a lexical search meanwhile: the hybrid one is still waiting after it
                    assert await rf.search("otter", mode="lexical")
                assert not answered.is_set() and not hybrid
                gate.set()
                with anyio.fail_after(10):
                    await answered.wait()
    finally:
        gate.set()
    assert hybrid and hybrid[0]["score_breakdown"].get("semantic_rank") is not None


async def test_status_reports_the_model_and_the_catalog_loading(tmp_path: Path) -> None:
    db = await _indexed(tmp_path)
    gate, started = threading.Event(), threading.Event()
    try:
        # not warmed up (a one-shot command): nothing loads until something needs a vector
        lazy = Rifflux(settings=Settings(db_path=db, model_warmup=False),
                       embedder=lambda: _held(gate, started))
        async with lazy as rf:
            status = await rf.status()
            assert status["embedding_model_state"] == "not_loaded"
            assert "loads on the first semantic or hybrid search" in str(
                status["embedding_model_reason"])
            await rf.search("otter", mode="lexical")
            assert (await rf.status())["embedding_model_state"] == "not_loaded"

            async with anyio.create_task_group() as tg:
                tg.start_soon(rf.search, "otter", 5, "semantic")  # wants the model
                with anyio.fail_after(10):
                    await anyio.to_thread.run_sync(started.wait)
                loading = await rf.status()
                assert loading["embedding_model_state"] == "loading"
                assert "is loading" in str(loading["embedding_model_reason"])
                gate.set()

            async def ready() -> bool:
                now = await rf.status()
                return (now["embedding_model_state"], now["catalog_state"],
                        now["vectors_in_memory"] > 0) == ("ready", "ready", True)

            await eventually(ready)
    finally:
        gate.set()


async def test_an_embedding_job_loads_the_model_nothing_had_loaded(tmp_path: Path) -> None:
    made: list[CountingEmbedder] = []

    def loader() -> CountingEmbedder:  # (called in the loading thread)
        made.append(CountingEmbedder())
        return made[-1]

    lazy = Rifflux(settings=Settings(db_path=tmp_path / "i.db", model_warmup=False),
                   embedder=loader)
    async with lazy as rf:
        assert (await rf.status())["embedding_model_state"] == "not_loaded"
        assert not made
        await rf.reindex(otters_and_bread(tmp_path / "kb"))  # returns once embedded
        status = await rf.status()
        assert status["embedding_model_state"] == "ready" and status["embeddings"] > 0
    assert len(made) == 1 and made[0].embedded  # loaded once, by the job, and used


async def test_status_reports_the_catalog_loading_and_only_a_filtered_search_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = await _indexed(tmp_path)
    gate, reading = anyio.Event(), anyio.Event()
    real = Reader.catalog

    async def held(self: Reader) -> Any:  # the catalog's read, held until the gate opens
        reading.set()
        await gate.wait()
        return await real(self)

    monkeypatch.setattr(Reader, "catalog", held)
    filtered: list[SearchResult] = []
    answered = anyio.Event()
    async with Rifflux(db, embedder=CountingEmbedder()) as rf, anyio.create_task_group() as tg:
        with anyio.fail_after(10):
            await reading.wait()
            assert (await rf.status())["catalog_state"] == "loading"
            plain = await rf.search("otter", mode="lexical")  # needs no catalog
        assert plain and plain[0]["path"] == "otters.md"
        assert "backlink_count" not in plain[0]  # (counted from the catalog, once loaded)

        async def search_filtered() -> None:
            filtered.extend(await rf.search("otter", mode="lexical", paths=["otters.md"]))
            answered.set()

        tg.start_soon(search_filtered)
        await wait_all_tasks_blocked()  # (asked while the catalog is still held)
        gate.set()
        with anyio.fail_after(10):
            await answered.wait()
        assert (await rf.status())["catalog_state"] == "ready"
    # answered from the whole catalog, not from the empty one it started with
    assert [hit["path"] for hit in filtered] == ["otters.md"]


_NEVER_LOADS = textwrap.dedent("""
    import sys, threading
    import anyio
    from rifflux import Rifflux

    db, marker = sys.argv[1], sys.argv[2]

    def never():  # the model's load, held forever
        with open(marker, "w") as f:
            f.write("loading")
        threading.Event().wait()
        with open(marker, "w") as f:
            f.write("loaded")

    async def main():
        async with Rifflux(db, embedder=never) as rf:  # warmed up: the load starts at once
            with anyio.fail_after(10):
                while (await rf.status())["embedding_model_state"] != "loading":
                    await anyio.sleep(0.01)
                hits = await rf.search("otter", mode="lexical")
        print(len(hits))

    anyio.run(main)
""")


async def test_a_process_whose_model_never_loaded_exits_at_once(tmp_path: Path) -> None:
    db = await _indexed(tmp_path)
    marker = tmp_path / "model-load"
    # The load never ends: the process can only exit if nothing waits for it (a hang
    # would end in the timeout, not in an exit).
    done = await _python(tmp_path, _NEVER_LOADS, str(db), str(marker))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) >= 1
    assert marker.read_text() == "loading"  # exited while the loader was still blocked


async def test_search_asks_a_running_server_and_says_so_unless_no_server(
    tmp_path: Path
) -> None:
    db = await _indexed(tmp_path)
    here = await _python(tmp_path, _CLI_THEN_MODULES, "--db", str(db), "search", "otter",
                         "--json", "--no-server", "--verbose")
    assert "rifflux: searching here (--no-server)" in here.stderr
    with serving(db, token="s3cret-token-for-the-cli"):  # (read from the file beside it)
        asked = await _python(tmp_path, _ASKED_THE_SERVER, "--db", str(db), "search",
                              "otter", "--json", "--verbose")
        assert asked.returncode == 0, asked.stderr
        assert "rifflux: answered by rifflux serve at http://127.0.0.1:" in asked.stderr
        # nothing of the library, SQLite or the model was loaded to answer
        line = next(x for x in asked.stderr.splitlines() if x.startswith("MODULES "))
        assert json.loads(line.removeprefix("MODULES ")) == []
        plain = await _python(tmp_path, _CLI_THEN_MODULES, "--db", str(db), "search",
                              "otter", "--verbose")
        assert "kb/otters.md:1-3" in plain.stdout and "answered by rifflux serve" in plain.stderr
        # beyond the API's bounds (top_k at most 100), as without a server
        many = await _python(tmp_path, _CLI_THEN_MODULES, "--db", str(db), "search",
                             "otter", "--top-k", "500", "--json", "--verbose")
        assert many.returncode == 0, many.stderr
        assert "does not take these arguments" in many.stderr and "searching here" in many.stderr
        assert json.loads(many.stdout)["results"]
        wrong = await _python(tmp_path, _CLI_THEN_MODULES, "--db", str(db), "search",
                              "otter", "--since", "yesterday")  # (wrong here too)
        assert wrong.returncode == 2 and "openapi" not in wrong.stderr, wrong.stderr
    served, local = json.loads(asked.stdout), json.loads(here.stdout)
    assert served.keys() == local.keys()
    assert ([(h["path"], h["chunk_id"]) for h in served["results"]]
            == [(h["path"], h["chunk_id"]) for h in local["results"]])
    gone = await _python(tmp_path, _CLI_THEN_MODULES, "--db", str(db), "search", "otter",
                         "--verbose")  # the server has stopped: searched here again
    assert gone.returncode == 0 and "no rifflux serve runs on" in gone.stderr

