"""What happens when something fails where nobody expected it: one request or one job
fails, with an error that says so, and the instance keeps serving. Also: counts that
are true from the first moment, and shutdown while requests are in flight. And the
boundaries of the code itself: no module over 400 lines, imports only down the layers
(read from the source with ``ast``, lazy imports included), and no circle of imports."""

from __future__ import annotations

import ast
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import rifflux
from rifflux import ClosedError, InternalError, Rifflux, RiffluxError, Settings
from rifflux.actors import index_job
from rifflux.core import plan as core_plan
from rifflux.core.vectors import F32
from rifflux.store.records import Records
from rifflux.store.sqlite.missing import Missing
from rifflux.store.sqlite.reader import Reader

from .helpers import CountingEmbedder, eventually, otters_and_bread, write

pytestmark = pytest.mark.anyio


def failing_once(original: Callable[..., Any], trigger: Callable[..., bool],
                 exc: BaseException) -> Callable[..., Any]:
    """``original``, except that the first call for which ``trigger(*args)`` holds raises."""
    fired = False

    async def patched(*args: Any, **kwargs: Any) -> Any:
        nonlocal fired
        if not fired and trigger(*args):
            fired = True
            raise exc
        return await original(*args, **kwargs)

    return patched


async def still_serving(rf: Rifflux, root: Path) -> None:
    assert (await rf.search("otters", mode="lexical"))[0]["path"] == "otters.md"
    assert (await rf.search("river sleep", mode="hybrid"))
    write(root, "new.md", "# New\n\nA note about herons.\n")
    assert (await rf.reindex(root))["indexed_files"] == 1
    assert (await rf.status())["files"] == 3


async def test_an_unexpected_error_in_the_lexical_branch_fails_only_that_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        monkeypatch.setattr(Reader, "lexical", failing_once(
            Reader.lexical, lambda _self, match, *_: "explode" in match,
            sqlite3.DatabaseError("unmapped driver failure")))
        with pytest.raises(InternalError, match="hybrid search for 'explode'.*keeps serving"):
            await rf.search("explode", mode="hybrid")
        await still_serving(rf, root)


async def test_an_unexpected_error_making_the_query_vector_fails_only_that_search(
    tmp_path: Path
) -> None:
    class BrokenQueries(CountingEmbedder):
        def embed_query(self, text: str) -> F32:
            if "explode" in text:
                raise ValueError("onnxruntime said no (injected)")
            return super().embed_query(text)

    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=BrokenQueries()) as rf:
        await rf.reindex(root)
        with pytest.raises(RiffluxError, match="ValueError: onnxruntime said no"):
            await rf.search("explode", mode="semantic")
        await still_serving(rf, root)
        assert (await rf.search("otters in rivers", mode="semantic"))


async def test_an_unexpected_error_in_a_read_fails_only_that_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        chunk_id = (await rf.search("otters", mode="lexical"))[0]["chunk_id"]
        monkeypatch.setattr(Records, "chunk", failing_once(
            Records.chunk, lambda _self, _key: True, KeyError("a bug (injected)")))
        with pytest.raises(InternalError, match="reading chunk"):
            await rf.get_chunk(chunk_id)
        chunk = await rf.get_chunk(chunk_id)
        assert chunk is not None and chunk["path"] == "otters.md"
        await still_serving(rf, root)


async def test_an_unexpected_error_inside_a_job_fails_that_job_and_the_next_one_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = otters_and_bread(tmp_path / "docs")
    real_plan = core_plan.plan_scan  # (as index_job calls it)
    calls = 0

    def plan_scan(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("planner bug (injected)")
        return real_plan(*args, **kwargs)

    monkeypatch.setattr(index_job, "plan_scan", plan_scan)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        with pytest.raises(RiffluxError, match="internal error.*planner bug"):
            await rf.reindex(root)
        failed = (await rf.status())["jobs"][0]
        assert failed["status"] == "failed" and "RuntimeError" in (failed["error"] or "")
        assert (await rf.reindex(root))["indexed_files"] == 2
        await still_serving(rf, root)


async def test_a_slow_vector_load_holds_up_neither_lexical_search_nor_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    release = anyio.Event()
    loading = anyio.Event()
    real_load = Reader.stream_vectors

    async def slow_load(self: Reader, model: str, dim: int, *into: Any) -> Any:
        loading.set()
        await release.wait()
        return await real_load(self, model, dim, *into)

    monkeypatch.setattr(Reader, "stream_vectors", slow_load)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        with anyio.fail_after(5):
            await loading.wait()
            assert (await rf.search("otters", mode="lexical"))[0]["path"] == "otters.md"
            status = await rf.status()
        assert status["vectors_in_memory"] == 0 and status["embeddings"] == 2
        release.set()
        hits = await rf.search("otters sleeping in a river", mode="semantic")
        assert hits and (await rf.status())["vectors_in_memory"] == 2


async def test_the_matrix_loads_while_the_texts_lacking_a_vector_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (reading them takes 0.5 s at a million chunks: a load that waited for it began late)
    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    loaded = anyio.Event()
    seen: list[bool] = []
    real_load, real_lacking = Reader.stream_vectors, Missing._lacking

    async def load(self: Reader, *args: Any) -> Any:
        try:
            return await real_load(self, *args)
        finally:
            loaded.set()

    async def lacking(self: Missing, model: str) -> dict[str, str]:
        with anyio.move_on_after(5):
            await loaded.wait()
        seen.append(loaded.is_set())
        return await real_lacking(self, model)

    monkeypatch.setattr(Reader, "stream_vectors", load)
    monkeypatch.setattr(Missing, "_lacking", lacking)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        hits = await rf.search("otters sleeping in a river", mode="semantic")
        assert hits and (await rf.status())["vectors_in_memory"] == 2
    assert seen[:1] == [True]


async def test_status_right_after_opening_an_embedded_index_reports_true_counts(
    tmp_path: Path
) -> None:
    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        embedded = await rf.status()
    assert embedded["embeddings"] == 2 and embedded["pending_embeddings"] == 0

    gate = threading.Event()

    def slow_model() -> CountingEmbedder:
        gate.wait(10)
        return CountingEmbedder()

    async with Rifflux(tmp_path / "i.db", embedder=slow_model) as rf:
        loading = await rf.status()
        assert loading["embedding_model_ready"] is False
        assert loading["embedding_counts_model"] == "counting-v1"
        assert (loading["embeddings"], loading["pending_embeddings"]) == (2, 0)
        gate.set()

        async def ready() -> bool:
            return (await rf.status())["embedding_model_ready"]

        await eventually(ready)
        loaded = await rf.status()
    assert (loaded["embeddings"], loaded["pending_embeddings"]) == (2, 0)
    assert loaded["embedding_model"] == loaded["embedding_counts_model"] == "counting-v1"


async def test_status_says_the_model_is_loading_and_why_until_it_has_loaded(
    tmp_path: Path
) -> None:
    gate = threading.Event()

    def slow_model() -> CountingEmbedder:
        gate.wait(10)
        return CountingEmbedder()

    async with Rifflux(tmp_path / "i.db", embedder=slow_model) as rf:
        loading = await rf.status()
        assert loading["embedding_model"] is None
        assert loading["embedding_model_state"] == "loading"
        reason = loading["embedding_model_reason"]
        assert reason is not None and "is loading" in reason
        assert "lexical searches answer now" in reason
        gate.set()

        async def loaded() -> bool:
            return (await rf.status())["embedding_model_state"] == "ready"

        await eventually(loaded)
        ready = await rf.status()
    assert ready["embedding_model"] == "counting-v1" and ready["embedding_model_reason"] is None

    def no_model() -> CountingEmbedder:
        raise OSError("model.onnx is unreadable (injected)")

    async with Rifflux(tmp_path / "i.db", embedder=no_model) as rf:

        async def failed() -> Any:
            status = await rf.status()
            return status if status["embedding_model_state"] == "failed" else None

        status = await eventually(failed)
    assert "model.onnx is unreadable" in status["embedding_model_reason"]
    assert status["embedding_model_reason"] == status["embedding_error"]


async def test_requests_in_flight_at_shutdown_get_closed_error(tmp_path: Path) -> None:
    root = otters_and_bread(tmp_path / "docs")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
    gate = threading.Event()

    def never_loads() -> CountingEmbedder:
        gate.wait(30)  # released at the end: the shutdown must not wait for it
        return CountingEmbedder()

    outcomes: list[BaseException | None] = []

    async def semantic_search(rf: Rifflux) -> None:
        try:
            await rf.search("otters", mode="semantic")  # waits for the model
            outcomes.append(None)
        except RiffluxError as exc:
            outcomes.append(exc)

    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                rf = Rifflux(tmp_path / "i.db", embedder=never_loads)
                async with rf:
                    tg.start_soon(semantic_search, rf)
                    await anyio.wait_all_tasks_blocked()
    finally:
        gate.set()
    assert len(outcomes) == 1 and isinstance(outcomes[0], ClosedError)
    with pytest.raises(ClosedError, match="async with Rifflux"):
        await rf.search("otters")


async def test_200_edits_during_a_background_reindex_all_complete(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    for i in range(300):
        write(root, f"bulk/f{i}.md", f"# File {i}\n\n" + f"words of file {i}. " * 40)
    target = write(root, "edited.md", "# Edited\n\nversion zero\n")
    settings = Settings(db_path=tmp_path / "i.db", job_history=300)
    async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
        bulk = (await rf.reindex(root, background=True))["job"]["id"]
        edits = []
        for n in range(1, 201):
            target.write_text(f"# Edited\n\nversion {n} of the text, rev{n}\n", encoding="utf-8")
            edits.append((await rf.reindex(target, background=True))["job"]["id"])
            if n == 1:
                assert (await rf.job(bulk))["status"] != "completed"  # edits during it
        with anyio.fail_after(60):
            for job_id in [bulk, *edits]:
                assert (await rf.wait_for_job(job_id))["status"] == "completed"
        hits = await rf.search("rev200", mode="lexical")
        stale = await rf.search("rev199", mode="lexical")
        status = await rf.status()
    assert hits and hits[0]["path"] == "edited.md" and not stale
    assert status["pending_embeddings"] == 0 and status["files"] == 301


# ---------------------------------------------------------------- the shape of the package

PACKAGE = Path(rifflux.__file__).parent
#: A module over this many lines is a question: is it two things? (STYLE.md)
MOST_LINES = 400
#: The modules over ``MOST_LINES`` that were asked, and why each is one thing. The number
#: is a question, not a rule: a module is cut where its responsibilities part, never to
#: get under it (no squeezed docstring, no mixin with a stub).
ONE_THING = {
    "rifflux/actors/indexer.py": "one actor: its inbox's loop and each message it handles "
                                 "(jobs, a model adopted, vectors stored or refused with a "
                                 "lost lease, other processes' writes followed)",
    "rifflux/api.py": "the facade: every public method of Rifflux, each handing its call to "
                      "the service, the notes or the status; cutting it would make a mixin",
    "rifflux/types.py": "the contract: one TypedDict per shape an answer has",
    "rifflux/store/protocols.py": "what the actors need of a store: one Protocol per part "
                                  "of it (writer, missing texts, following, reads, legs, "
                                  "lease, presence), each method's promise in its docstring",
}

#: The layers, lowest first: a module imports only from its own layer or a lower one.
#: The ground is below everything (the contract's shapes, settings, errors, and the
#: standard-library-only helpers that processes start with); ``note_types`` is part of
#: it as ``types`` is (the note operations' shapes: the actors' messages carry them).
#: The surfaces are layered too: the HTTP server serves the MCP server, the command
#: line starts either. The history's room spans layers as chunks' do: reading git and
#: making documents (core), the rows both stores keep (store), following and searching
#: commits (actors), its answers (api).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("rifflux.config", "rifflux.types", "rifflux.errors", "rifflux.limits",
                "rifflux.location", "rifflux.kinds", "rifflux.model_servers",
                "rifflux.exits", "rifflux.discovery", "rifflux.loading", "rifflux.native",
                "rifflux.note_types", "rifflux.history_types")),
    ("core", ("rifflux.core", "rifflux.history.git", "rifflux.history.document",
              "rifflux.history.repos", "rifflux.history.lines", "rifflux.history.matching",
              "rifflux.history.ignored")),
    ("store", ("rifflux.store", "rifflux.history.rows")),
    ("query", ("rifflux.query",)),
    ("actors", ("rifflux.actors", "rifflux.history.sync", "rifflux.history.search")),
    ("api", ("rifflux", "rifflux.api", "rifflux.direct", "rifflux.status", "rifflux.locate",
             "rifflux.answers", "rifflux.notes", "rifflux.history")),
    ("mcp", ("rifflux.mcp",)),
    ("http", ("rifflux.http",)),
    ("cli", ("rifflux.cli", "rifflux.__main__")),
)


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """For each module, the package's modules it imports, with the line of the first such
    import: at the top, under ``TYPE_CHECKING`` or inside a function (a lazy import is a
    dependency too). ``from .x import y`` names the module ``x.y`` if there is one."""
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                           else base for alias in node.names]
            for target in targets:
                while target and target not in modules:  # (a name inside a module)
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.setdefault(target, node.lineno)
        graph[name] = found
    return graph


def _layer(module: str) -> int:
    best, where = -1, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, where = len(prefix), rank
    assert where >= 0, f"{module} is in no layer: add it to LAYERS in {__name__}"
    return where


def test_a_module_over_400_lines_has_been_asked_whether_it_is_two_things() -> None:
    lengths = {path.relative_to(PACKAGE.parent).as_posix():
               len(path.read_text(encoding="utf-8").splitlines())
               for path in _modules().values()}
    assert len(lengths) > 50  # (the whole package was read)
    over = {path: n for path, n in lengths.items() if n > MOST_LINES}
    unasked = {path: n for path, n in over.items() if path not in ONE_THING}
    assert not unasked, (f"over {MOST_LINES} lines: cut each where its responsibilities "
                         f"part, or say in ONE_THING why it is one thing: {unasked}")
    assert ONE_THING.keys() <= over.keys(), "ONE_THING names a module no longer that long"


def test_nothing_under_http_imports_mcp_but_the_app_that_mounts_it() -> None:
    graph = _imports(_modules())
    reaching = {source for source, targets in graph.items()
                if source.startswith("rifflux.http")
                and any(t == "rifflux.mcp" or t.startswith("rifflux.mcp.") for t in targets)}
    assert reaching == {"rifflux.http.app"}


def test_every_import_runs_down_the_layers_or_stays_in_its_own() -> None:
    modules = _modules()
    graph = _imports(modules)
    assert graph["rifflux.http.app"].keys() >= {"rifflux.mcp.server", "rifflux.api"}
    assert "rifflux.http.serve" in graph["rifflux.cli.launch"]  # (a lazy import, counted)
    broken = [
        f"{modules[source].relative_to(PACKAGE.parent)}:{line}: {source} "
        f"({LAYERS[_layer(source)][0]}) imports {target} ({LAYERS[_layer(target)][0]}), "
        "a layer above it"
        for source, targets in sorted(graph.items())
        for target, line in sorted(targets.items())
        if _layer(target) > _layer(source)]
    order = " < ".join(name for name, _ in LAYERS)
    assert not broken, f"imports that run up the layers ({order}):\n" + "\n".join(broken)


def test_no_modules_of_the_package_import_each_other_in_a_circle() -> None:
    modules = _modules()
    graph = _imports(modules)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(module: str) -> None:  # (depth first; a module on the path again: a circle)
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                walk(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module)
    described = [" -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(c, c[1:],
                                                                         strict=False))
                 + f" -> {c[-1]}" for c in cycles]
    assert not cycles, "imports in a circle (each arrow is an import, at that line):\n" + \
        "\n".join(described)
