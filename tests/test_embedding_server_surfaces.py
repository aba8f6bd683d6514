"""An embedding server (``--embed-url``) through the command line and MCP: a real
OpenAI-compatible server on a free port (``tests/model_servers.py``), real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .helpers import (
    TOPICS,
    call,
    cli_env,
    eventually,
    mcp_session,
    rifflux_cli,
    server_env,
    write,
    write_all,
)
from .model_servers import EmbeddingServer, embedding_server

ACCOUNT = ("# Account help\n\n## Resetting your password\n\nIf you forget your credentials, "
           "open Settings and choose Forgot password to receive a reset link by email.\n")
PARAPHRASE = "I cannot recall my login secret"
#: What every surface says while the server does not answer (answers/search.py).
OFF = "semantic ranking is off"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with embedding_server() as served:
        yield served


def notes(tmp_path: Path) -> Path:
    root = write_all(tmp_path / "kb", TOPICS)
    write(root, "account.md", ACCOUNT)
    return root


def test_the_cli_indexes_searches_and_reports_through_an_embedding_server(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    env = cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto", RIFFLUX_EMBED_KEY="sk-cli")
    flags = ("--db", "index.db", "--embed-url", server.url, "--embed-model", "minilm-served")
    done = rifflux_cli(tmp_path, *flags, "index", str(root), env=env)
    assert done.returncode == 0, done.stderr
    assert "(server:minilm-served:384)" in done.stdout
    found = rifflux_cli(tmp_path, *flags, "search", "--mode", "semantic", "--json", PARAPHRASE,
                        env=env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "account.md"
    status = rifflux_cli(tmp_path, *flags, "status", env=env)
    assert status.returncode == 0, status.stderr
    line = next(x for x in status.stdout.splitlines() if x.startswith("server"))
    assert f"{server.url} (minilm-served) - reachable" in line
    assert "server:minilm-served:384" in status.stdout
    assert {a.authorization for a in server.asked} == {"Bearer sk-cli"}

    server.stop()  # the server goes away: lexical answers go on, semantic ones say why
    hybrid = rifflux_cli(tmp_path, *flags, "search", "--json", "tomato watering", env=env)
    assert hybrid.returncode == 0, hybrid.stderr
    answer = json.loads(hybrid.stdout)
    assert answer["results"][0]["path"] == "garden.md"
    assert OFF in answer["hint"] and OFF in hybrid.stderr
    semantic = rifflux_cli(tmp_path, *flags, "search", "--mode", "semantic", PARAPHRASE,
                           env=env)
    assert semantic.returncode == 1
    assert OFF in semantic.stderr and "cannot be reached" in semantic.stderr
    assert "nothing matched" not in semantic.stderr  # (not a matter of words)
    down = rifflux_cli(tmp_path, *flags, "status", "--json", env=env)
    said = json.loads(down.stdout)
    assert said["embedding_server"]["reachable"] is False
    assert said["embeddings"] == said["chunks"]  # nothing stored is lost


def test_a_bad_embed_url_is_a_usage_error(tmp_path: Path) -> None:
    done = rifflux_cli(tmp_path, "--db", "index.db", "--embed-url", "localhost:11434",
                       "status", env=cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto"))
    assert done.returncode == 2
    assert "http:// or https://" in done.stderr and "--embed-url" in done.stderr


@pytest.mark.anyio
async def test_mcp_searches_with_the_server_and_says_why_semantic_is_off_while_it_is_away(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    env = server_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto", RIFFLUX_EMBED_URL=server.url)
    async with mcp_session(tmp_path, env=env) as session:
        await call(session, "reindex", path=str(root))
        semantic = await call(session, "search_rifflux", query=PARAPHRASE, mode="semantic")
        assert semantic["embedding_model"] == "server:minilm-served:384"
        assert semantic["results"][0]["path"] == "account.md"
        status = await call(session, "index_status")
        assert status["embedding_backend"] == "server"
        assert status["embedding_server"]["reachable"] is True

        server.stop()
        write(root, "otters.md", "# Otters\n\nSea otters hold hands while they sleep.\n")
        await call(session, "reindex", path=str(root), background=True)
        async def found() -> dict[str, Any] | None:
            answer = await call(session, "search_rifflux", query="otters hold hands")
            return answer if answer["results"] else None

        hybrid = await eventually(found, within=30)
        assert hybrid["results"][0]["path"] == "otters.md"
        assert OFF in hybrid["hint"]
        off = await call(session, "search_rifflux", query=PARAPHRASE, mode="semantic")
        assert off["results"] == [] and OFF in off["hint"]
        status = await call(session, "index_status")
        assert status["embedding_server"]["reachable"] is False
        assert status["pending_embeddings"] >= 1

        server.start()  # embedding resumes by itself

        async def embedded() -> bool:
            now = await call(session, "index_status")
            return bool(now["pending_embeddings"] == 0 and now["embedder"]["waiting"] is None)

        await eventually(embedded, within=60)
        back = await call(session, "search_rifflux", query="marine animals resting",
                          mode="semantic", top_k=1)
    assert back["results"][0]["path"] == "otters.md" and "hint" not in back


def test_doctor_asks_the_embedding_server_and_says_when_it_is_away(
        tmp_path: Path, server: EmbeddingServer) -> None:
    env = cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto", RIFFLUX_EMBED_URL=server.url,
                  HOME=str(tmp_path / "home"))
    done = rifflux_cli(tmp_path, "--db", "index.db", "doctor", "--json", env=env)
    [model] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "model"]
    assert model["status"] == "ok", model
    assert model["model"] == "server:minilm-served:384" and model["texts_per_second"] > 0
    server.stop()
    done = rifflux_cli(tmp_path, "--db", "index.db", "doctor", "--json", env=env)
    assert done.returncode == 1
    [model] = [c for c in json.loads(done.stdout)["checks"] if c["area"] == "model"]
    assert model["status"] == "attention" and "cannot be reached" in model["summary"]
    assert "RIFFLUX_EMBED_URL" in model["fix"]


def test_rifflux_index_waits_for_a_server_that_is_away_says_so_and_ends_when_it_is_back(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    server.stop()
    env = cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto", RIFFLUX_EMBED_URL=server.url)
    proc = subprocess.Popen([sys.executable, "-m", "rifflux", "--db", "index.db", "index",
                             str(root)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        said = []
        deadline = time.monotonic() + 60
        for line in proc.stderr:  # (until it says it waits: the process is blocked on it)
            said.append(line)
            if "the job waits for its vectors" in line or time.monotonic() > deadline:
                break
        assert "the job waits for its vectors" in said[-1], said
        server.start()
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "(server:minilm-served:384)" in out and "4 embeddings" in out
    assert "answers again" in err


def test_rifflux_serve_answers_with_the_server_and_says_why_semantic_is_off(
        tmp_path: Path, server: EmbeddingServer) -> None:
    import httpx2

    from .serving import serving

    root = notes(tmp_path)
    db = tmp_path / "index.db"
    env = cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto")
    flags = ("--embed-url", server.url, "--embed-model", "minilm-served")
    assert rifflux_cli(tmp_path, "--db", str(db), *flags, "index", str(root),
                       env=env).returncode == 0
    with serving(db, "--backend", "auto", *flags, env=env) as served, \
            httpx2.Client(base_url=served.url, headers=served.headers(), timeout=30) as http:
        found = http.get("/api/search", params={"q": PARAPHRASE, "mode": "semantic"}).json()
        assert found["results"][0]["path"] == "account.md", found
        assert found["embedding_model"] == "server:minilm-served:384"
        server.stop()
        away = http.get("/api/search", params={"q": "tomato watering"}).json()
        status = http.get("/api/status").json()
    assert away["results"][0]["path"] == "garden.md" and OFF in away["hint"]
    assert status["embedding_server"]["reachable"] is False
    assert status["embedding_server"]["url"] == server.url


def test_setup_writes_the_embedding_server_into_the_entry_but_never_a_key(
        tmp_path: Path) -> None:
    env = cli_env(tmp_path, RIFFLUX_EMBEDDING_BACKEND="auto", HOME=str(tmp_path / "home"),
                  RIFFLUX_EMBED_KEY="sk-never-written")
    done = rifflux_cli(tmp_path, "setup", "--print", "--embed-url",
                       "http://localhost:11434/v1", "--embed-model", "bge-m3", env=env)
    assert done.returncode == 0, done.stderr
    assert '"--embed-url", "http://localhost:11434/v1", "--embed-model", "bge-m3"' in \
        " ".join(done.stdout.split())
    assert "sk-never-written" not in done.stdout
