"""``rifflux serve`` end to end: a real server in a subprocess, every /api route (errors
included; 503 for an index that is not open in process, the one way to reach it),
/openapi.json, /healthz, the page's files, the event stream, and MCP clients at /mcp."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from rifflux import Rifflux
from rifflux.answers.budget import ENVELOPE
from rifflux.http.app import create_app
from rifflux.http.options import ServeOptions

from ..helpers import TOOLS, mcp_session, write
from ..serving import Served, serving, until

NOTES = {
    "alpha.md": "---\ntitle: Alpha plan\ntags: [project, adr]\nstatus: draft\n---\n"
                "# Alpha\n\nThe retry policy waits twice as long after every failure.\n\n"
                "See [[beta]] and [[gamma]] for the rest.\n",
    "beta.md": "# Beta\n\nBackoff and jitter keep the retry storm away. #project\n",
    "gamma.md": "# Gamma\n\nLinks back to [[alpha]]. Nothing about the other thing.\n",
    "deep/delta.md": "# Delta\n\n" + "Long text about retrying requests. " * 80 + "\n",
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("api")
    for rel, text in NOTES.items():
        write(root / "notes", rel, text)
    write(root / "more", "epsilon.md", "# Epsilon\n\nA note in a second folder.\n")
    return root


@pytest.fixture(scope="module")
def server(corpus: Path) -> Iterator[Served]:
    with serving(corpus / "index.db", "--watch", str(corpus / "notes")) as served:
        with httpx2.Client(base_url=served.url, timeout=30) as client:
            job = _await_indexed(client)
        assert job["files"] == len(NOTES)
        yield served


def _await_indexed(client: httpx2.Client) -> Any:
    def indexed() -> Any:  # (the watcher's first scan, in the server)
        status = client.get("/api/status").json()
        done = status["files"] and status["jobs"] and all(
            j["status"] == "completed" for j in status["jobs"])
        return status if done else None

    return until(indexed, within=60)


@pytest.fixture
def client(server: Served) -> Iterator[httpx2.Client]:
    with httpx2.Client(base_url=server.url, timeout=30) as c:
        yield c


def _error(response: httpx2.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["type"] == kind, body
    message: str = body["error"]["message"]
    assert len(message) > 20
    return message


# ---------------------------------------------------------------- search


def test_search_answers_ranked_hits_with_marked_snippets(client: httpx2.Client) -> None:
    answer = client.get("/api/search", params={"q": "retry policy", "top_k": 3}).json()
    assert answer["query"] == "retry policy" and answer["mode"] == "hybrid"
    assert 1 <= answer["count"] == len(answer["results"]) <= 3
    top = answer["results"][0]
    assert top["path"] == "alpha.md" and top["title"] == "Alpha plan"
    assert "**retry**" in top["snippet"] and top["line_start"] >= 1
    assert "content" in top


def test_a_cjk_sentence_no_chunk_holds_is_answered_with_a_hint(client: httpx2.Client) -> None:
    # hybrid (the page's default): every hit by meaning alone, for a sentence none of whose
    # words the notes hold (this answered 500: the route's own table lacked the reason)
    for mode in ("hybrid", None):
        got = client.get("/api/search", params={"q": "今天天气很好我们去公园",
                                                 **({"mode": mode} if mode else {})})
        assert got.status_code == 200, got.text
        answer = got.json()
        assert answer["count"] > 0
        assert "no chunk contains the words of this sentence" in answer["hint"]


def test_search_by_post_takes_the_same_arguments_and_frontmatter(client: httpx2.Client) -> None:
    body = {"q": "retry", "mode": "lexical", "tags": ["project"], "content": "snippet",
            "frontmatter": {"status": "draft"}}
    answer = client.post("/api/search", json=body).json()
    assert [r["path"] for r in answer["results"]] == ["alpha.md"]
    assert "content" not in answer["results"][0]
    same = client.get("/api/search", params={"q": "retry", "mode": "lexical", "tags": "project",
                                             "frontmatter": '{"status": "draft"}'}).json()
    assert [r["chunk_id"] for r in same["results"]] == [r["chunk_id"] for r in answer["results"]]


def test_search_filters_narrow_before_ranking(client: httpx2.Client) -> None:
    deep = client.get("/api/search", params={"q": "retry", "paths": "deep/**"}).json()
    assert {r["path"] for r in deep["results"]} == {"deep/delta.md"}
    near = client.get("/api/search", params={"q": "retry", "near": "gamma.md"}).json()
    assert {r["path"] for r in near["results"]} <= {"gamma.md", "alpha.md"}
    nothing = client.get("/api/search", params={"q": "retry", "tags": "nosuchtag"}).json()
    assert nothing["count"] == 0 and "filters" in nothing["hint"]


def test_max_chars_bounds_the_answer_and_says_what_was_cut(client: httpx2.Client) -> None:
    whole = client.get("/api/search", params={"q": "retrying requests", "top_k": 5}).json()
    got = client.get("/api/search", params={"q": "retrying requests", "top_k": 5,
                                            "max_chars": 1000})
    cut = got.json()
    assert cut["truncated"] is True and "max_chars=1000" in cut["hint"]
    assert cut["count"] + cut.get("omitted", 0) == whole["count"]  # nothing left unsaid
    kept = [r["chunk_id"] for r in cut["results"]]
    assert kept == [r["chunk_id"] for r in whole["results"]][: len(kept)]  # best first
    assert len(got.text) <= 1000 + ENVELOPE  # the whole answer, as MCP's tools keep it


def test_explain_says_what_the_search_ran_and_why_each_hit_ranks(
        client: httpx2.Client) -> None:
    params = {"q": "the retry policy", "mode": "lexical", "tags": "project",
              "explain": "true"}
    got = client.get("/api/search", params=params).json()
    posted = client.post("/api/search", json={**params, "tags": ["project"],
                                              "explain": True}).json()
    plain = client.get("/api/search", params={**params, "explain": "false"}).json()
    explain = got["explain"]
    assert explain["stopwords_dropped"] == ["the"]
    assert {'"retry"', '"policy"'} <= set(str(explain["fts_query"]).split(" OR "))
    assert explain["filters"] == {"tags": ["project"]}
    assert got["results"] and all(set(hit["explain"]) == {"lexical_rank", "bm25"}
                                  for hit in got["results"])
    ranks = [hit["explain"]["lexical_rank"] for hit in got["results"]]
    assert ranks == sorted(ranks)
    assert posted["explain"] == explain
    assert [h["explain"] for h in posted["results"]] == [h["explain"] for h in got["results"]]
    assert "explain" not in plain and all("explain" not in h for h in plain["results"])


@pytest.mark.parametrize(("params", "words"), [
    ({"q": "x", "top_k": "0"}, "top_k"),
    ({"q": "x", "top_k": "500"}, "top_k"),
    ({"q": "x", "mode": "fuzzy"}, "mode"),
    ({"q": "x", "tag": "adr"}, "did you mean 'tags'"),
    ({"top_k": "3"}, "q is required"),
    ({"q": "   "}, "q is blank"),
    ({"q": "x", "frontmatter": "[1, 2]"}, "JSON object"),
    ({"q": "x", "modified_after": "last tuesday"}, "modified_after"),
    ({"q": "x", "depth": "2"}, "near"),
])
def test_bad_search_arguments_are_400_saying_what_to_fix(
        client: httpx2.Client, params: dict[str, str], words: str) -> None:
    assert words in _error(client.get("/api/search", params=params), 400, "invalid_argument")


def test_a_bad_body_is_400_and_the_server_goes_on(client: httpx2.Client) -> None:
    said = _error(client.post("/api/search", content=b"{not json",
                              headers={"content-type": "application/json"}), 400,
                  "invalid_argument")
    assert "the body is not JSON (Expecting property name" in said and "got" not in said
    _error(client.post("/api/search", json={"q": "x", "top_k": "many"}), 400,
           "invalid_argument")
    # a JSON object sent as a form (curl -d's way) is told to say it is JSON
    said = _error(client.post("/api/search", content=b'{"q": "x"}', headers={
        "content-type": "application/x-www-form-urlencoded"}), 400, "invalid_argument")
    assert "send one JSON object with the header Content-Type: application/json" in said
    assert client.get("/healthz").status_code == 200


# ---------------------------------------------------------------- reads


def test_status_chunk_file_links_neighbors_and_tags_mirror_the_library(
        client: httpx2.Client) -> None:
    status = client.get("/api/status").json()
    assert status["files"] == len(NOTES) and status["links"] >= 3
    hit = client.get("/api/search", params={"q": "jitter"}).json()["results"][0]
    chunk = client.get(f"/api/chunks/{hit['chunk_id']}").json()
    assert chunk["chunk_id"] == hit["chunk_id"] and "jitter" in chunk["content"]
    lines = client.get("/api/file", params={"path": "alpha.md", "start_line": 7,
                                            "end_line": 999}).json()
    assert lines["start_line"] == 7 and lines["end_line"] == lines["total_lines"]
    assert "retry policy" in lines["text"]
    record = client.get("/api/file", params={"path": "alpha.md"}).json()
    assert record["title"] == "Alpha plan" and record["chunks"]
    links = client.get("/api/links", params={"path": "alpha.md"}).json()
    assert {link["path"] for link in links["outgoing"]} == {"beta.md", "gamma.md"}
    assert [b["path"] for b in links["backlinks"]] == ["gamma.md"]
    near = client.get("/api/neighbors", params={"path": "beta.md", "depth": 2}).json()
    assert [(n["path"], n["distance"]) for n in near] == [("alpha.md", 1), ("gamma.md", 2)]
    tags = {t["tag"]: t["files"] for t in client.get("/api/tags").json()}
    assert tags["project"] == 2 and tags["adr"] == 1


def test_what_the_index_does_not_hold_is_404(client: httpx2.Client) -> None:
    _error(client.get("/api/chunks/0123456789abcdef0123"), 404, "not_found")
    _error(client.get("/api/file", params={"path": "nope.md"}), 404, "not_found")
    _error(client.get("/api/links", params={"path": "nope.md"}), 404, "not_found")
    _error(client.get("/api/neighbors", params={"path": "nope.md"}), 404, "not_found")
    _error(client.get("/api/jobs/job-999999"), 404, "not_found")
    _error(client.get("/api/nothing-here"), 404, "not_found")
    _error(client.delete("/api/status"), 405, "method_not_allowed")


def test_a_file_read_outside_its_folder_or_backwards_is_400(client: httpx2.Client) -> None:
    _error(client.get("/api/file", params={"path": "../../etc/passwd", "start_line": 1}),
           400, "invalid_argument")
    _error(client.get("/api/file", params={"path": "alpha.md", "start_line": 5,
                                           "end_line": 2}), 400, "invalid_argument")
    _error(client.get("/api/neighbors", params={"path": "alpha.md", "depth": 11}), 400,
           "invalid_argument")


def test_openapi_describes_every_route_from_the_contract_types(client: httpx2.Client) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/api/search", "/api/status", "/api/chunks/{chunk_id}", "/api/file", "/api/links",
            "/api/neighbors", "/api/tags", "/api/reindex", "/api/forget", "/api/jobs/{job_id}",
            "/api/events", "/healthz"} <= set(spec["paths"])
    assert set(spec["paths"]["/api/search"]) == {"get", "post"}
    schemas = spec["components"]["schemas"]
    assert {"chunk_id", "line_start", "score_breakdown", "snippet"} <= set(
        schemas["SearchResult"]["properties"])
    assert "ErrorBody" in schemas


#: A URL to another host: absolute (http, https), or protocol-relative in a quoted string
#: or ``url(...)``.
_ELSEWHERE = re.compile(r"""https?://|["'(=]\s*//[^/\s]""", re.IGNORECASE)


def test_the_page_is_the_package_data_and_names_no_other_host(client: httpx2.Client) -> None:
    static = files("rifflux.http").joinpath("static")
    page = client.get("/")
    assert page.status_code == 200 and page.text == static.joinpath(
        "index.html").read_text(encoding="utf-8")
    named = set(re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text))
    assert named >= {"/static/app.js", "/static/style.css"}
    shipped = sorted(f.name for f in static.iterdir() if f.is_file())
    for name in shipped:
        served = client.get(f"/static/{name}")
        assert served.status_code == 200, name
        assert served.content == static.joinpath(name).read_bytes(), name
        # (an SVG names its XML namespace by a URL that nothing fetches)
        elsewhere = _ELSEWHERE.findall(served.text.replace(
            'xmlns="http://www.w3.org/2000/svg"', ""))
        assert not elsewhere, f"/static/{name} names another host: {elsewhere}"
    assert {path.removeprefix("/static/") for path in named} <= set(shipped)


def test_healthz_answers_without_the_api(client: httpx2.Client) -> None:
    assert client.get("/healthz").json()["status"] == "ok"


@pytest.mark.anyio
async def test_an_index_that_is_not_open_is_503_in_the_error_shape(tmp_path: Path) -> None:
    # (only in process: the server closes its index after its last request has ended)
    rf = Rifflux(tmp_path / "i.db", embedding_backend="hash")
    async with rf:
        app = create_app(rf, ServeOptions())
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for method, path, body in (("GET", "/api/status", None),
                                   ("GET", "/api/search?q=retry", None),
                                   ("POST", "/api/search", {"q": "retry"}),
                                   ("GET", "/api/file?path=alpha.md", None),
                                   ("GET", "/api/tags", None)):
            answer = await http.request(method, path, json=body)
            message = _error(answer, 503, "index_not_open")
            assert "not open" in message and "/healthz" in message, message
            assert "async with" not in message  # (the library's advice: not a client's)
            assert answer.headers["retry-after"] == "1"
        health = await http.get("/healthz")
    assert health.status_code == 503 and health.json()["status"] == "closed"


# ---------------------------------------------------------------- writes and events


def test_reindex_answers_with_the_job_and_its_route_follows_it(
        client: httpx2.Client, corpus: Path) -> None:
    started = client.post("/api/reindex", json={"path": str(corpus / "more")})
    assert started.status_code == 202
    job_id = started.json()["job"]["id"]
    job = until(lambda: (j := client.get(f"/api/jobs/{job_id}").json())["status"]
                == "completed" and j)
    assert job["result"]["indexed_files"] == 1
    assert client.get("/api/search", params={"q": "epsilon"}).json()["count"] >= 1
    forgot = client.post("/api/forget", json={"path": str(corpus / "more")}).json()
    assert forgot["removed_files"] == 1
    assert client.get("/api/search", params={"q": "epsilon", "mode": "lexical"}).json()[
        "count"] == 0


def test_reindex_refuses_what_it_cannot_index(client: httpx2.Client, corpus: Path) -> None:
    assert "absolute" in _error(client.post("/api/reindex", json={"path": "notes"}), 400,
                                "invalid_argument")
    _error(client.post("/api/reindex", json={}), 400, "invalid_argument")
    _error(client.post("/api/reindex", json={"path": str(corpus / "gone")}), 404, "not_found")
    _error(client.post("/api/reindex", json={"path": str(corpus), "forse": True}), 400,
           "invalid_argument")


@pytest.mark.anyio
async def test_events_stream_reports_a_job_and_its_commits(server: Served,
                                                           corpus: Path) -> None:
    seen: list[tuple[str, Any]] = []
    async with httpx2.AsyncClient(base_url=server.url, timeout=30) as client:
        with anyio.fail_after(30):
            async with client.stream("GET", "/api/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                event = None
                async for line in stream.aiter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        seen.append((str(event), json.loads(line[6:])))
                        if event == "hello":
                            started = await client.post(
                                "/api/reindex", json={"path": str(corpus / "notes"),
                                                      "force": True})
                            job_id = started.json()["job"]["id"]
                        elif event == "job" and seen[-1][1]["id"] == job_id \
                                and seen[-1][1]["status"] == "completed":
                            break
    jobs = [data for kind, data in seen if kind == "job" and data["id"] == job_id]
    assert jobs[0]["status"] in ("queued", "running")
    progress = [j["indexed_files"] for j in jobs]
    assert progress == sorted(progress) and progress[-1] == len(NOTES)
    commits = [data for kind, data in seen if kind == "index"]
    assert sum(c["files_written"] for c in commits) >= len(NOTES)


# ---------------------------------------------------------------- MCP over HTTP


@pytest.mark.anyio
async def test_mcp_clients_list_the_stdio_tools_and_search_over_http(
        server: Served, tmp_path: Path) -> None:
    async with streamable_http_client(server.mcp) as (read, write_), \
            ClientSession(read, write_) as first, \
            streamable_http_client(server.mcp) as (read2, write2), \
            ClientSession(read2, write2) as second:
        with anyio.fail_after(30):
            await first.initialize()
            await second.initialize()
            over_http = {t.name: t for t in (await first.list_tools()).tools}
            result = await second.call_tool("search_rifflux", {"query": "retry policy",
                                                               "content": "snippet"})
    assert set(over_http) == TOOLS
    async with mcp_session(tmp_path) as stdio:
        over_stdio = {t.name: t for t in (await stdio.list_tools()).tools}
    assert {n: t.input_schema for n, t in over_http.items()} == \
        {n: t.input_schema for n, t in over_stdio.items()}
    assert {n: t.description for n, t in over_http.items()} == \
        {n: t.description for n, t in over_stdio.items()}
    assert not result.is_error
    text = next(c.text for c in result.content if isinstance(c, TextContent))
    assert json.loads(text)["results"][0]["path"] == "alpha.md"


def test_access_log_has_a_line_per_request_without_the_query(
        client: httpx2.Client, server: Served) -> None:
    client.get("/api/search", params={"q": "secretword"})
    until(lambda: "GET /api/search 200" in server.log_text())
    assert "secretword" not in server.log_text()


@pytest.mark.anyio
async def test_search_gives_a_text_once_naming_its_copies_unless_duplicates_all(
    tmp_path: Path
) -> None:
    for name in ("a", "b", "c"):
        write(tmp_path / "notes", f"{name}.md", "# Wombats\n\nWombats dig burrows with claws.\n")
    async with Rifflux(tmp_path / "i.db", embedding_backend="hash") as rf:
        await rf.reindex(tmp_path / "notes")
        transport = httpx2.ASGITransport(app=create_app(rf, ServeOptions()))
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            once = (await http.get("/api/search", params={"q": "wombat burrows"})).json()
            every = (await http.post("/api/search", json={"q": "wombat burrows",
                                                          "duplicates": "all"})).json()
            wrong = await http.get("/api/search", params={"q": "wombat", "duplicates": "x"})
    assert [r["path"] for r in once["results"]] == ["a.md"]
    assert [p["path"] for p in once["results"][0]["also_in"]] == ["b.md", "c.md"]
    assert [r["path"] for r in every["results"]] == ["a.md", "b.md", "c.md"]
    _error(wrong, 400, "invalid_argument")
