"""Section 4b: MCP handshake time, and query latency per mode through MCP over stdio.

Handshake: ``_HANDSHAKES`` fresh server processes, each timed from spawn to
the answer of ``tools/list`` (after ``initialize``), and to the answer of the
first ``search_rifflux`` (which waits for the SDK and the index to be ready).

Latency: the server runs as a subprocess (``python -m rifflux mcp --db DB``) on the
database the in-process section used; an ``mcp.ClientSession`` over
``stdio_client`` calls ``search_rifflux`` and times each round trip (JSON-RPC
framing, serialisation and the pipe included). The queries are new ones, not
those timed in process. The section is skipped with a message when the server
module is not there yet or does not start.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from rifflux.answers import FIRST_LOOK_CHARS, SNIPPET_WIDTHS
from rifflux.answers.budget import answer_text

from ._common import Skipped, expect_answers
from ._context import State
from ._latency import plan_queries, time_modes

_START_TIMEOUT = 180.0
_CALL_TIMEOUT = 120.0
_HANDSHAKES = 5


def _server_missing() -> str | None:
    for module in ("rifflux.__main__", "rifflux.mcp.server"):
        try:
            if importlib.util.find_spec(module) is None:
                return f"{module} is not importable yet"
        except (ImportError, ValueError) as exc:
            return f"{module} is not importable yet ({exc})"
    return None


def _count(result: Any) -> int:
    data = result.structured_content
    if not isinstance(data, dict):
        text = next((c.text for c in result.content if getattr(c, "type", "") == "text"), "")
        try:
            data = json.loads(text)
        except (TypeError, ValueError):
            data = {}
    if result.is_error:
        raise RuntimeError(f"search_rifflux returned an error: {result.content!r}"[:500])
    return int(data.get("count", len(data.get("results", [])))) if isinstance(data, dict) else 0


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


async def _handshake(params: Any, errlog: Any, query: str) -> dict[str, float]:
    """One cold server: spawn -> tools/list answered, and -> first search answered."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    started = time.perf_counter()
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(_START_TIMEOUT):
            await session.initialize()
            tools = await session.list_tools()
            listed = time.perf_counter()
            result = await session.call_tool("search_rifflux",
                                             {"query": query, "top_k": 10, "mode": "hybrid"})
            searched = time.perf_counter()
    if len(tools.tools) < 5:
        raise RuntimeError(f"tools/list returned {len(tools.tools)} tools")
    _count(result)
    return {"handshake_s": round(listed - started, 4),
            "first_search_s": round(searched - started, 4)}


async def through_mcp(state: State) -> dict[str, Any]:
    missing = _server_missing()
    if missing:
        raise Skipped(f"MCP server not available: {missing}")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cfg = state.config
    db = await state.ensure_corpus_db()
    timed, warm = plan_queries(state)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rifflux", "mcp", "--db", str(db), "--backend", cfg.backend],
        env={"RIFFLUX_EMBEDDING_BACKEND": cfg.backend, "RIFFLUX_DB_PATH": str(db)},
        cwd=str(cfg.work),
    )
    errlog_path = cfg.work / "mcp-server.stderr.log"
    try:
        with errlog_path.open("w") as errlog:
            first = warm["hybrid"]
            handshakes = [await _handshake(params, errlog, first[i % len(first)])
                          for i in range(_HANDSHAKES)]
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(_START_TIMEOUT):
                    await session.initialize()

                whole: dict[str, int] = {}  # a hybrid answer's size, with contents

                async def search(query: str, mode: str) -> int:
                    with anyio.fail_after(_CALL_TIMEOUT):
                        result = await session.call_tool(
                            "search_rifflux", {"query": query, "top_k": 10, "mode": mode}
                        )
                    if mode == "hybrid":
                        whole[query] = len(_text(result))
                    return _count(result)

                modes = await time_modes(search, timed, warm)
                sizes = await _answer_sizes(session, timed["hybrid"], whole)
    except Exception as exc:  # any failure of a server still being written: skip, say why
        raise Skipped(
            f"MCP server did not answer ({type(exc).__name__}: {exc}); "
            f"server stderr:\n{_tail(errlog_path)}"
        ) from exc
    expect_answers(modes, "the MCP server's index")  # (empty answers would be small, too)
    return {
        "surface": "mcp-stdio",
        "handshake": {
            "runs": handshakes,
            "median_s": statistics.median(h["handshake_s"] for h in handshakes),
            "first_search_median_s": statistics.median(h["first_search_s"] for h in handshakes),
        },
        "command": f"{Path(sys.executable).name} -m rifflux mcp --db <db> --backend {cfg.backend}",
        "top_k": 10,
        "queries_per_mode": len(timed["lexical"]),
        "modes": modes,
        "answer_chars": sizes,
    }


#: What SPEC requires of an answer and of each result, whatever else is added.
_SPEC_ANSWER = ("query", "mode", "count", "embedding_model", "results")
_SPEC_RESULT = ("chunk_id", "path", "heading_path", "chunk_index", "score_breakdown")


async def _answer_sizes(session: Any, queries: list[str],
                        whole: dict[str, int]) -> dict[str, Any]:
    """Characters of a top-10 hybrid answer's text, as an agent receives it, with whole
    contents (``whole``: measured when the timed searches ran) and with
    content='snippet' (the first look an agent pays for); and ``spec_floor``: the same
    answers cut down to the fields SPEC requires, no snippet and no content, which no
    first look can go below."""
    sizes: dict[str, list[int]] = {"full": [whole[q] for q in queries], "snippet": [],
                                   "spec_floor": []}
    crowded = 0  # first looks over 4,000 characters with every snippet at its narrowest
    for query in queries:
        with anyio.fail_after(_CALL_TIMEOUT):
            result = await session.call_tool("search_rifflux", {
                "query": query, "top_k": 10, "content": "snippet"})
        _count(result)
        text = _text(result)
        sizes["snippet"].append(len(text))
        answer = json.loads(text)
        sizes["spec_floor"].append(len(_spec_floor(answer)))
        widths = [len(h["snippet"].replace("**", "").strip("…")) for h in answer["results"]]
        narrowest = max(widths, default=0) <= SNIPPET_WIDTHS[0]
        crowded += len(text) > FIRST_LOOK_CHARS and narrowest
    out: dict[str, Any] = {content: {"median": statistics.median(n), "max": max(n),
                                     "queries": len(n)} for content, n in sizes.items()}
    out["snippet"]["over_4000"] = sum(n > FIRST_LOOK_CHARS for n in sizes["snippet"])
    out["snippet"]["over_4000_at_narrowest"] = crowded
    return out


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def _spec_floor(answer: dict[str, Any]) -> str:
    floor = {k: answer[k] for k in _SPEC_ANSWER}
    floor["results"] = [{k: hit[k] for k in _SPEC_RESULT} for hit in answer["results"]]
    return answer_text(floor)
