"""End to end: a real MCP client spawns ``python -m rifflux mcp`` and talks stdio to it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession

from rifflux.answers.budget import ENVELOPE, answer_text
from rifflux.config import Settings
from rifflux.core.fusion import combine
from rifflux.mcp._fast_start.handoff import capture_handshake
from rifflux.mcp.server import build_server

from .helpers import (
    TOOLS,
    call,
    call_error,
    eventually,
    mcp_session,
    server_env,
    text_of,
    write,
    write_corpus,
)

pytestmark = pytest.mark.anyio



async def job_status(session: ClientSession, job_id: str) -> str:
    jobs = (await call(session, "index_status"))["jobs"]
    return str(next(j for j in jobs if j["id"] == job_id)["status"])


# ---------------------------------------------------------------- schemas


async def test_tools_are_listed_with_mode_enum_and_top_k_bounds(tmp_path: Path) -> None:
    async with mcp_session(tmp_path) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    assert all(len(t.description or "") > 60 for t in tools.values())
    search = tools["search_rifflux"].input_schema
    assert search["required"] == ["query"]
    props = search["properties"]
    assert set(props["mode"]["enum"]) == {"hybrid", "lexical", "semantic"}
    assert props["mode"]["default"] == "hybrid"
    assert (props["top_k"]["minimum"], props["top_k"]["maximum"]) == (1, 100)
    assert props["top_k"]["default"] == 10
    assert "db_path" in props
    reindex = tools["reindex"].input_schema["properties"]
    assert {"path", "paths", "force", "background", "yes"} <= set(reindex)
    forget = tools["forget"]
    assert forget.input_schema["required"] == ["path"]
    assert forget.annotations is not None and forget.annotations.destructive_hint is True
    many = tools["reindex_many"].input_schema
    assert many["required"] == ["paths"]
    assert many["properties"]["paths"]["minItems"] == 1
    assert tools["search_rifflux"].annotations is not None
    assert tools["search_rifflux"].annotations.read_only_hint is True


async def test_the_tool_list_is_light_and_its_schemas_stay_strict() -> None:
    # what the SDK answers to tools/list (and the front serves from handshake.json)
    captured = await capture_handshake(build_server(Settings()))
    for version, answers in captured["results"].items():
        listed = answers["tools/list"]
        # was 17,618; 9,922 before the history's two tools; 12,497 with them and lang, hypothesis
        assert len(json.dumps(listed, ensure_ascii=False)) < 12_500, version
    tools = {t["name"]: t for t in listed["tools"]}
    for tool in tools.values():
        assert 60 < len(tool["description"]) <= 320, tool["name"]
        schema = tool["inputSchema"]
        assert schema["additionalProperties"] is False and "title" not in schema
        for name, prop in schema["properties"].items():
            assert 10 < len(prop["description"]) <= 100, (tool["name"], name)
            assert "title" not in prop and "type" in prop, (tool["name"], name)
    search = tools["search_rifflux"]["inputSchema"]["properties"]
    assert (search["top_k"]["minimum"], search["top_k"]["maximum"]) == (1, 100)
    assert search["mode"]["enum"] == ["hybrid", "lexical", "semantic"]
    assert search["content"]["enum"] == ["full", "snippet"]
    assert (search["max_chars"]["minimum"], search["max_chars"]["maximum"]) == (1000, 10**7)
    assert search["depth"] == {"description": search["depth"]["description"],
                               "type": "integer", "minimum": 1, "maximum": 10}
    assert search["paths"]["type"] == "array" and search["paths"]["items"] == {"type": "string"}
    assert search["frontmatter"]["additionalProperties"]["items"]["type"] == [
        "string", "integer", "number", "boolean"]
    assert search["max_per_file"]["minimum"] == 1 and search["max_per_file"]["type"] == "integer"
    read = tools["get_file"]["inputSchema"]["properties"]
    assert "minimum" not in read["start_line"] and read["end_line"]["minimum"] == 1
    assert tools["reindex_many"]["inputSchema"]["properties"]["paths"]["minItems"] == 1
    assert tools["forget"]["inputSchema"]["properties"]["path"]["minLength"] == 1


async def test_get_file_reads_from_line_1_for_a_start_before_it_as_the_library_does(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(corpus["docs"]))
        for start in (0, -4):  # (a hit's line_start - 5, as the README reads it)
            lines = await call(session, "get_file", path="install.md", start_line=start,
                               end_line=3)
            assert (lines["start_line"], lines["end_line"]) == (1, 3)
            assert lines["text"] == "# Guide\n\n## Install"
        before = await call_error(session, "get_file", path="install.md", end_line=0)
        null = await call(session, "get_file", path="install.md", start_line=None,
                          end_line=None)  # (left out: the whole file)
    assert "end_line" in before and "greater than or equal to 1" in before
    assert null["path"] == "install.md" and "chunks" in null


# ---------------------------------------------------------------- search (criteria 6, 7)


async def test_search_output_has_the_contract_fields(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(corpus["notes"]))
        out = await call(session, "search_rifflux", query="water the soil", top_k=3)
    assert {"query", "mode", "count", "embedding_model", "results"} <= set(out)
    assert (out["query"], out["mode"]) == ("water the soil", "hybrid")
    assert out["embedding_model"] == "hash-384-v1"
    assert out["count"] == len(out["results"]) == 3
    assert "auto_reindex" not in out  # only when the opt-in is on
    for hit in out["results"]:
        assert {"chunk_id", "path", "heading_path", "chunk_index", "content",
                "score_breakdown"} <= set(hit)
        assert hit["path"] in ("garden.md", "seasons.md")
        assert set(hit["score_breakdown"]) == {"rrf", "lexical_rank", "semantic_rank", "fused"}


async def test_hybrid_order_is_the_fusion_of_the_lexical_and_semantic_lists(
    tmp_path: Path
) -> None:
    corpus = write_corpus(tmp_path)
    k, top_k, query = 10, 3, "water soil compost"
    async with mcp_session(tmp_path, "--rrf-k", str(k)) as session:
        await call(session, "reindex", path=str(corpus["notes"]))
        # each branch as hybrid reads it: 100 deep, every copy
        lexical = await call(session, "search_rifflux", query=query, top_k=100,
                             mode="lexical", duplicates="all")
        semantic = await call(session, "search_rifflux", query=query, top_k=100,
                              mode="semantic", duplicates="all")
        hybrid = await call(session, "search_rifflux", query=query, top_k=top_k)
    lex_ids = [h["chunk_id"] for h in lexical["results"]]
    sem_ids = [h["chunk_id"] for h in semantic["results"]]
    assert len(lex_ids) > top_k and len(sem_ids) > top_k
    assert all(set(h["score_breakdown"]) == {"bm25"} for h in lexical["results"])
    assert all(set(h["score_breakdown"]) == {"cosine"} for h in semantic["results"])

    expected: dict[str, float] = {}
    for ranked in (lex_ids, sem_ids):
        for rank, cid in enumerate(ranked, start=1):
            expected[cid] = expected.get(cid, 0.0) + 1.0 / (k + rank)
    combined = combine([(h["chunk_id"], h["score_breakdown"]["bm25"])
                        for h in lexical["results"]],
                       [(h["chunk_id"], h["score_breakdown"]["cosine"])
                        for h in semantic["results"]], depth=100, k=k)

    got = hybrid["results"]
    assert [h["chunk_id"] for h in got] == [c.key for c in combined][:top_k]
    assert [h["score_breakdown"]["fused"] for h in got] == pytest.approx(
        [c.score for c in combined][:top_k])
    for hit in got:
        cid, breakdown = hit["chunk_id"], hit["score_breakdown"]
        assert breakdown["rrf"] == pytest.approx(expected[cid])
        assert breakdown["lexical_rank"] == (lex_ids.index(cid) + 1 if cid in lex_ids else None)
        assert breakdown["semantic_rank"] == (sem_ids.index(cid) + 1 if cid in sem_ids else None)


async def test_search_gives_a_text_once_naming_its_copies_unless_duplicates_all(
    tmp_path: Path
) -> None:
    notes = tmp_path / "notes"
    for name in ("a", "b", "c"):
        write(notes, f"{name}.md", "# Wombats\n\nWombats dig burrows with their claws.\n")
    write(notes, "d.md", "# Burrows\n\nA burrow is a tunnel some animals dig.\n")
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(notes))
        once = await call(session, "search_rifflux", query="wombat burrows")
        look = await call(session, "search_rifflux", query="wombat burrows", content="snippet")
        every = await call(session, "search_rifflux", query="wombat burrows", duplicates="all")
    assert [h["path"] for h in once["results"]] == ["a.md", "d.md"]
    assert once["results"][0]["also_in"] == [
        {"path": "b.md", "root": str(notes), "line_start": 1},
        {"path": "c.md", "root": str(notes), "line_start": 1}]
    assert once["results"][0]["also_in_count"] == 2
    assert look["results"][0]["also_in_count"] == 2  # a first look says so too
    assert [h["path"] for h in every["results"]] == ["a.md", "b.md", "c.md", "d.md"]


# ---------------------------------------------------------------- reindex (criteria 8-10)


async def test_reindex_with_several_paths_aggregates_the_counts(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        out = await call(session, "reindex", paths=[str(corpus["notes"]), str(corpus["docs"])])
        status = await call(session, "index_status")
        again = await call(session, "reindex_many",
                            paths=[str(corpus["notes"]), str(corpus["docs"])])
    assert out["indexed_files"] == 3  # 2 in notes + 1 in docs
    assert out["indexed_paths"] == [str(corpus["notes"]), str(corpus["docs"])]
    assert out["embedding_backend"] == "hash" and out["embedding_model"] == "hash-384-v1"
    assert status["files"] == 3
    assert status["pending_embeddings"] == 0 and status["embeddings"] > 0
    assert (again["indexed_files"], again["skipped_files"]) == (0, 3)


async def test_a_reindex_of_a_moment_still_reports_its_progress_up_to_its_last_file(
        tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    sent: list[list[float]] = [[], []]

    async with mcp_session(tmp_path) as session:
        for values in sent:  # the second finds nothing to do

            async def on_progress(progress: float, total: float | None, message: str | None,
                                  values: list[float] = values) -> None:
                values.append(progress)

            with anyio.fail_after(60):
                result = await session.call_tool("reindex", {"path": str(corpus["notes"])},
                                                 progress_callback=on_progress)
            assert not result.is_error, text_of(result)
    first, again = sent
    assert first[-1] == 2 and all(a < b for a, b in zip(first, first[1:], strict=False))
    assert again == [0]


async def test_reindex_with_path_and_paths_uses_only_paths(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        out = await call(session, "reindex", path=str(corpus["docs"]),
                         paths=[str(corpus["notes"])])
        status = await call(session, "index_status")
        missing = await call_error(session, "get_file", path="install.md")
    assert out["indexed_files"] == 2
    assert status["files"] == 2
    assert "not found" in missing


async def test_reindex_with_neither_path_nor_paths_indexes_the_server_cwd(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path, cwd=corpus["cwd"]) as session:
        out = await call(session, "reindex")
        found = await call(session, "search_rifflux", query="quokka", mode="lexical")
        status = await call(session, "index_status")
        later = await call(session, "reindex", background=True, path="")
        given = await call(session, "reindex", path=str(corpus["cwd"]))
    assert out["indexed_files"] == 1
    cwd = str(corpus["cwd"].resolve())
    for answer in (out, later):  # which folder, and why that one
        assert answer["path"] == cwd
        assert answer["hint"].startswith(f"no path was given, so the server's working "
                                         f"directory {cwd} was indexed")
    assert "path" not in given and "hint" not in given
    assert [(h["path"], h["root"]) for h in found["results"]] == [
        ("here.md", str(corpus["cwd"].resolve()))]
    assert status["server_cwd"] == str(corpus["cwd"].resolve())


async def test_empty_paths_falls_back_to_path_then_to_the_cwd(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path, cwd=corpus["cwd"]) as session:
        from_path = await call(session, "reindex", path=str(corpus["docs"]), paths=[])
        from_cwd = await call(session, "reindex", paths=[])
        docs = await call(session, "get_file", path=str(corpus["docs"] / "install.md"))
        here = await call(session, "get_file", path="here.md")
        status = await call(session, "index_status")
    assert from_path["indexed_files"] == 1 and from_cwd["indexed_files"] == 1
    assert docs["path"] == "install.md" and here["root"] == str(corpus["cwd"].resolve())
    assert status["files"] == 2  # reindexing one location keeps the other


async def test_background_reindex_returns_a_job_that_completes_embedded(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        out = await call(session, "reindex", path=str(corpus["notes"]), background=True)
        job_id = out["job_id"]
        assert out["job"]["id"] == job_id and "index_status" in out["next_step"]

        async def completed() -> bool:
            return await job_status(session, job_id) == "completed"

        await eventually(completed, within=30)
        status = await call(session, "index_status")
        job = next(j for j in status["jobs"] if j["id"] == job_id)
    assert job["result"]["indexed_files"] == 2
    assert status["files"] == 2 and status["pending_embeddings"] == 0


async def test_get_chunk_and_get_file_read_back_what_search_found(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(corpus["docs"]))
        hit = (await call(session, "search_rifflux", query="wombat", mode="lexical"))["results"][0]
        chunk = await call(session, "get_chunk", chunk_id=hit["chunk_id"])
        whole = await call(session, "get_file", path=hit["path"])
    assert chunk["content"] == hit["content"]
    assert hit["heading_path"] == "Guide > Install > Linux"
    assert [c["chunk_index"] for c in whole["chunks"]] == list(range(len(whole["chunks"])))
    assert hit["chunk_id"] in {c["chunk_id"] for c in whole["chunks"]}


# ---------------------------------------------------------------- errors


async def test_bad_arguments_are_error_results_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(corpus["docs"]))
        unknown_mode = await call_error(session, "search_rifflux", query="x", mode="fuzzy")
        zero = await call_error(session, "search_rifflux", query="x", top_k=0)
        too_many = await call_error(session, "search_rifflux", query="x", top_k=101)
        no_query = await call_error(session, "search_rifflux")
        chunk = await call_error(session, "get_chunk", chunk_id="no-such-chunk")
        file = await call_error(session, "get_file", path="nowhere/missing.md")
        folder = await call_error(session, "reindex", path=str(tmp_path / "does-not-exist"))
        empty = await call_error(session, "reindex_many", paths=[])
        other_db = await call_error(session, "search_rifflux", query="x",
                                    db_path=str(tmp_path / "none.db"))
        lone_depth = await call_error(session, "search_rifflux", query="x", depth=2)
        too_old = await call_error(session, "search_rifflux", query="x",
                                   modified_after="99999y")
        misspelt = await call_error(session, "search_rifflux", query="x", tag=["recipes"])
        stranger = await call_error(session, "get_chunk", chunk_id="x", zzz=1)
        null = await call_error(session, "search_rifflux", query="x", frontmatter={"k": None})
        blank_tag = await call_error(session, "search_rifflux", query="x", tags=[""])
        tools = {t.name: t for t in (await session.list_tools()).tools}
        still = await call(session, "search_rifflux", query="wombat", mode="lexical")
    assert "no argument 'tag' (did you mean 'tags'?)" in misspelt and "max_per_file" in misspelt
    assert "'zzz'" in stranger and "did you mean" not in stranger and "chunk_id" in stranger
    assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())
    assert "frontmatter.k should be a valid string, a valid integer" in null
    assert null.count("(got None)") == 1  # one value, said once
    assert "mode" in unknown_mode and "'hybrid'" in unknown_mode and "call again" in unknown_mode
    assert "top_k" in zero and "1" in zero
    assert "top_k" in too_many and "100" in too_many
    assert "query is required" in no_query
    assert "not found" in chunk and "search" in chunk
    assert "not found" in file and "reindex" in file
    assert "not found" in folder and "existing folder" in folder
    assert "paths" in empty
    assert "no index at db_path" in other_db
    assert "depth goes with near" in lone_depth
    assert "before the year 1" in too_old
    assert "tags: [''] holds a blank value; leave tags out" in blank_tag
    assert still["count"] == 1


async def test_an_index_the_server_cannot_open_is_every_tools_answer_not_a_dead_server(
    tmp_path: Path,
) -> None:
    (tmp_path / "index.db").write_text("a shopping list, not an index\n")
    async with mcp_session(tmp_path) as session:
        status = await call_error(session, "index_status")
        search = await call_error(session, "search_rifflux", query="x")
        again = await call_error(session, "reindex", path=str(tmp_path))
    for answer in (status, search, again):
        assert "could not open its index" in answer and "is not a Rifflux index" in answer
        assert "restart the server" in answer
    assert (tmp_path / "index.db").read_text() == "a shopping list, not an index\n"


async def test_search_can_read_another_index_file_by_db_path(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    async with mcp_session(other) as session:  # builds other/index.db
        await call(session, "reindex", path=str(corpus["docs"]))
    async with mcp_session(tmp_path) as session:
        out = await call(session, "search_rifflux", query="wombat", mode="lexical",
                         db_path=str(other / "index.db"))
        own = await call(session, "search_rifflux", query="wombat", mode="lexical")
    assert out["count"] == 1 and own["count"] == 0


# ---------------------------------------------------------------- auto reindex


async def test_auto_reindex_on_search_starts_a_throttled_background_job(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path, "--auto-reindex") as session:
        await call(session, "reindex", path=str(corpus["notes"]))
        (corpus["notes"] / "new.md").write_text("# New\n\nA platypus arrived.\n", encoding="utf-8")
        first = await call(session, "search_rifflux", query="platypus", mode="lexical")
        started = first["auto_reindex"]
        assert started["started"] is True
        assert started["paths"] == [str(corpus["notes"].resolve())]

        async def completed() -> bool:
            return await job_status(session, started["job_id"]) == "completed"

        await eventually(completed, within=30)
        second = await call(session, "search_rifflux", query="platypus", mode="lexical")
    assert first["count"] == 0  # the answer did not wait for the reindex it started
    assert second["count"] == 1 and second["results"][0]["path"] == "new.md"
    assert second["auto_reindex"]["started"] is False
    assert "throttled" in second["auto_reindex"]["reason"]


async def test_watch_paths_are_indexed_at_start_and_followed(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path, "--watch", str(corpus["notes"])) as session:

        async def started() -> bool:
            status = await call(session, "index_status")
            return bool(status["files"] == 2 and status["watcher"]["running"])

        async def found() -> bool:
            out = await call(session, "search_rifflux", query="echidna", mode="lexical")
            return bool(out["count"] == 1)

        await eventually(started, within=30)
        (corpus["notes"] / "echidna.md").write_text("# Echidna\n\nSpiny and calm.\n",
                                                    encoding="utf-8")
        await eventually(found, within=30)


# ---------------------------------------------------------------- the wire


async def test_nothing_but_json_rpc_reaches_stdout(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIFFLUX_")}
    env.update(server_env(tmp_path, RIFFLUX_LOG_LEVEL="DEBUG"))
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "reindex", "arguments": {"path": str(corpus["notes"])}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "search_rifflux", "arguments": {"query": "water"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "search_rifflux", "arguments": {"query": "x", "mode": "bad"}}},
    ]
    stderr_path = tmp_path / "raw.stderr"
    lines: list[bytes] = []
    with stderr_path.open("wb") as errlog:
        process = await anyio.open_process(
            [sys.executable, "-m", "rifflux", "mcp", "--db", str(tmp_path / "raw.db")],
            cwd=corpus["cwd"], env=env, stderr=errlog,
        )
        async with process:
            assert process.stdin is not None and process.stdout is not None
            reader = BufferedByteReceiveStream(process.stdout)
            with anyio.fail_after(60):
                for request in requests:
                    await process.stdin.send(json.dumps(request).encode() + b"\n")
                    if "id" in request:  # wait for its answer before the next request
                        while True:
                            line = await reader.receive_until(b"\n", 1 << 24)
                            lines.append(line)
                            if json.loads(line).get("id") == request["id"]:
                                break
                await process.stdin.aclose()
                while True:
                    try:
                        lines.append(await reader.receive_until(b"\n", 1 << 24))
                    except (anyio.EndOfStream, anyio.IncompleteRead):
                        break
                assert await process.wait() == 0
    messages = [json.loads(line) for line in lines if line.strip()]
    assert len(messages) == len(lines) >= 5
    assert all(m["jsonrpc"] == "2.0" and ("id" in m or "method" in m) for m in messages)
    answers = {m["id"]: m for m in messages if "id" in m}
    assert json.loads(answers[4]["result"]["content"][0]["text"])["count"] > 0
    assert answers[5]["result"]["isError"] is True
    assert "rifflux" in stderr_path.read_text(encoding="utf-8")  # the logs went to stderr


# ---------------------------------------------------------------- the real model


async def test_real_onnx_model_finds_a_paraphrase(tmp_path: Path) -> None:
    docs = tmp_path / "pets"
    docs.mkdir()
    (docs / "cats.md").write_text("# Cats\n\nKittens are young domestic felines that purr "
                                  "and chase string.\n", encoding="utf-8")
    (docs / "taxes.md").write_text("# Taxes\n\nFile your income tax return before the "
                                   "deadline to avoid penalties.\n", encoding="utf-8")
    (docs / "rust.md").write_text("# Rust\n\nThe borrow checker rejects programs with "
                                  "dangling references at compile time.\n", encoding="utf-8")
    env = server_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx")
    async with mcp_session(tmp_path, env=env) as session:
        await call(session, "reindex", path=str(docs))
        out = await call(session, "search_rifflux", query="a baby cat", mode="semantic", top_k=1)
        status = await call(session, "index_status")
    assert out["results"][0]["path"] == "cats.md"
    assert status["embedding_backend"] == "onnx"
    assert out["embedding_model"] == status["embedding_model"] != "hash-384-v1"


# ---------------------------------------------------------------- narrow and locate


async def test_an_agent_narrows_a_search_and_reads_the_exact_lines(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    (corpus["notes"] / "tagged.md").write_text(
        "---\ntags: [garden/veg]\nstatus: draft\n---\n# Beans\n\nBeans need water and a pole. "
        "#summer\n", encoding="utf-8")
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", paths=[str(corpus["notes"]), str(corpus["docs"])])
        narrowed = await call(session, "search_rifflux", query="water", top_k=20,
                              paths=["garden.md"])
        assert narrowed["count"] > 0
        assert {r["path"] for r in narrowed["results"]} == {"garden.md"}
        tagged = await call(session, "search_rifflux", query="water", tags=["garden"],
                            frontmatter={"status": "draft"}, modified_after="1d")
        assert [r["path"] for r in tagged["results"]] == ["tagged.md"]
        hit = tagged["results"][0]
        assert hit["title"] == "Beans" and "garden/veg" in hit["tags"]
        assert hit["root"] == str(corpus["notes"].resolve())
        lines = await call(session, "get_file", path=hit["path"], root=hit["root"],
                           start_line=hit["line_start"], end_line=hit["line_end"])
        assert "Beans need water" in lines["text"] and lines["total_lines"] == 7
        chunk = await call(session, "get_chunk", chunk_id=hit["chunk_id"])
        assert chunk["line_start"] == hit["line_start"] and chunk["prev_chunk_id"] is None
        tags = await call(session, "list_tags")
        assert {"tag": "garden/veg", "files": 1} in tags["tags"]
        assert {"tag": "summer", "files": 1} in tags["tags"]
        assert (await call(session, "search_rifflux", query="water", mode="lexical",
                           root="docs"))["results"] == []
        bad = await call_error(session, "search_rifflux", query="water",
                               modified_after="next week")
        assert "cannot read 'next week' as a date" in bad
        escape = await call_error(session, "get_file", path="../secret.md", start_line=1)
        assert "leaves its indexed folder" in escape
        nowhere = await call_error(session, "search_rifflux", query="water", root="attic")
        assert "not an indexed folder" in nowhere and str(corpus["docs"].resolve()) in nowhere


# ---------------------------------------------------------------- answers that fit


async def test_a_big_answer_is_cut_to_the_budget_and_says_so(tmp_path: Path) -> None:
    notes = tmp_path / "many"
    notes.mkdir()
    for i in range(100):  # 100 chunks of about 1,000 characters
        (notes / f"n{i:03}.md").write_text(
            f"# Note {i}\n\n" + f"Paragraph about the river delta number {i}. " * 22,
            encoding="utf-8")
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(notes))
        with anyio.fail_after(60):
            result = await session.call_tool("search_rifflux", {
                "query": "river delta", "top_k": 100, "max_per_file": 1})
        # what the client receives is the one text (no structured copy of it) within the
        # budget: the result object's whole JSON, as it came over the wire
        received = json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True),
                              ensure_ascii=False, separators=(",", ":"))
        assert result.structured_content is None and len(result.content) == 1
        text = text_of(result)
        answer = json.loads(text)
        assert len(text) <= 40_000 + ENVELOPE < 100 * 1000
        # (around the text, as the wire escapes it: {"content":[{"type":"text",...}]} alone)
        assert len(received) - len(json.dumps(text, ensure_ascii=False)) < 100
        # a hundred hits' places, titles and snippets alone take more: the last are left out
        assert answer["count"] == len(answer["results"]) > 80
        assert answer["count"] + answer["omitted"] == 100
        assert answer["truncated"] is True and "get_chunk" in answer["hint"]
        assert all("…[+" in r["content"] for r in answer["results"])
        assert "\n" not in text and ": " not in text[:200]  # compact JSON
        first = await session.call_tool("search_rifflux", {
            "query": "river delta", "top_k": 10, "content": "snippet"})
        small = json.loads(text_of(first))
        assert first.structured_content is None and "truncated" not in small
        assert small["root"] == str(notes.resolve())
        assert len(text_of(first)) <= 4000  # the first look's budget, as the agent gets it
        for hit in small["results"]:  # a first look: where, what, why; get_chunk for more
            assert set(hit) == {"chunk_id", "path", "heading_path", "chunk_index",
                                "score_breakdown", "snippet"}
            assert 80 <= len(hit["snippet"].replace("**", "").strip("…")) <= 240
            assert len(repr(hit["score_breakdown"]["rrf"])) <= 8  # 4 significant digits
        cut = await call(session, "search_rifflux", query="river delta", top_k=100,
                         max_per_file=1, content="snippet", max_chars=3000)
        assert cut["count"] + cut["omitted"] == 100 and cut["truncated"] is True
        assert len(answer_text(cut)) <= 3000 + ENVELOPE
        assert "snippets were cut" in cut["hint"] and "content='snippet'" not in cut["hint"]
        light = text_of(first)
        whole = text_of(await session.call_tool("search_rifflux", {
            "query": "river delta", "top_k": 10}))
        assert len(light) * 2 < len(whole)
        tools = {t.name: t for t in (await session.list_tools()).tools}
        description = tools["search_rifflux"].description or ""
        assert "\n    " not in description  # dedented
        assert all(t.output_schema is None for t in tools.values())  # (nothing to pay twice)


async def test_a_large_file_is_read_page_by_page_with_no_line_lost_or_repeated(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "big"
    notes.mkdir()
    lines = [f"line {i}: " + "x" * (i % 90) for i in range(8000)]
    (notes / "big.md").write_text("# Big\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    source = (notes / "big.md").read_text(encoding="utf-8").splitlines()
    assert len("\n".join(source)) > 400_000
    async with mcp_session(tmp_path) as session:
        await call(session, "reindex", path=str(notes))
        first = await call(session, "get_file", path="big.md")
        assert first["truncated"] is True and first["next_start_line"] > 1
        read: list[str] = []
        start, pages = 1, 0
        while True:
            page = await call(session, "get_file", path="big.md", start_line=start)
            assert len(page["text"]) <= 40_000 and page["start_line"] == start
            read += page["text"].split("\n")
            pages += 1
            if not page.get("truncated"):
                break
            assert page["end_line"] == page["next_start_line"] - 1
            assert f"start_line={page['next_start_line']}" in page["hint"]
            start = page["next_start_line"]
        assert read == source and pages >= 10


async def test_an_empty_index_and_an_empty_filter_say_what_to_do(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path)
    async with mcp_session(tmp_path) as session:
        empty = await call(session, "search_rifflux", query="wombat")
        assert empty["count"] == 0 and "holds no files yet" in empty["hint"]
        await call(session, "reindex", path=str(corpus["docs"]))
        filtered = await call(session, "search_rifflux", query="wombat", tags=["none"])
        assert filtered["count"] == 0 and "relax them" in filtered["hint"]
        found = await call(session, "search_rifflux", query="the wombat", explain=True,
                           paths=["*.md"])
        assert found["explain"] == {"fts_query": '"wombat"', "fts_every": None,
                                    "stopwords_dropped": ["the"],
                                    "filters": {"paths": ["*.md"]},
                                    "lexical": {"store": "sqlite", "ranking": "fts5",
                                                "match": '"wombat"', "every": None,
                                                "ranked_by": None},
                                    "texts": {"lexical": "the wombat", "semantic": "the wombat",
                                              "hypothesis": False}}
        assert set(found["results"][0]["explain"]) >= {"lexical_rank", "bm25"}
        assert "hint" not in found and "pending_embeddings" not in found
        misspelt = await call(session, "search_rifflux", query="wombta")
        assert misspelt["count"] > 0 and "only close in meaning" in misspelt["hint"]


async def test_a_search_while_embeddings_are_unfinished_says_they_are_partial(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(60):
        (notes / f"n{i}.md").write_text(f"# N{i}\n\n" + f"The otter {i} swims. " * 40,
                                        encoding="utf-8")
    async with mcp_session(tmp_path) as session:  # the hash model embeds them all
        await call(session, "reindex", path=str(notes))
    # the same index with the ONNX model: every text is embedded again, at ~40 a second
    env = server_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="onnx")
    async with mcp_session(tmp_path, env=env) as session:
        answer = await call(session, "search_rifflux", query="otter swims")
        assert answer["pending_embeddings"] > 0
        assert "only part of the index" in answer["hint"]
