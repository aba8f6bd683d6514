"""An embedding server as the index's model (``embed_url``): a real OpenAI-compatible
server on a free port (``tests/model_servers.py``) serving the bundled ONNX model's
vectors, and its faults, through the library on both stores."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from rifflux import Rifflux, Settings
from rifflux.core.embed_api import embeddings_url, parse_embeddings, retry_after
from rifflux.errors import EmbeddingUnavailableError, InvalidArgumentError

from .helpers import TOPICS, Location, cosine, eventually, write, write_all
from .model_servers import EmbeddingServer, embedding_server

pytestmark = pytest.mark.anyio

ACCOUNT = ("# Account help\n\n## Resetting your password\n\nIf you forget your credentials, "
           "open Settings and choose Forgot password to receive a reset link by email.\n")
#: A paraphrase of ACCOUNT that holds none of its words.
PARAPHRASE = "I cannot recall my login secret"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with embedding_server() as served:
        yield served


def served(db: Location, server: EmbeddingServer, **given: Any) -> Rifflux:
    settings = Settings(embed_url=server.url, **given)
    return Rifflux(db, settings=settings)


def notes(tmp_path: Path) -> Path:
    root = write_all(tmp_path / "kb", TOPICS)
    write(root, "account.md", ACCOUNT)
    return root


async def fully_embedded(rf: Rifflux, model: str | None = None) -> bool:
    """Every chunk has a vector (of ``model``, when given: counted for it)."""
    status = await rf.status()
    return (status["embeddings"] > 0 and status["pending_embeddings"] == 0
            and model in (None, status["embedding_counts_model"]))


# ---------------------------------------------------------------- it works


async def test_a_server_makes_the_vectors_and_ranks_as_the_local_model_does(
        db: Location, tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    async with served(db, server) as rf:
        result = await rf.reindex(root)
        semantic = await rf.search(PARAPHRASE, mode="semantic", top_k=4)
        status = await rf.status()
    async with Rifflux(tmp_path / "local.db") as local:  # the bundled model, run here
        await local.reindex(root)
        here = await local.search(PARAPHRASE, mode="semantic", top_k=4)
    assert result["embedding_backend"] == "server"
    assert result["embedding_model"] == "server:minilm-served:384"
    assert [h["path"] for h in semantic] == [h["path"] for h in here]
    assert semantic[0]["path"] == "account.md"
    for a, b in zip(semantic, here, strict=True):
        assert cosine(a) == pytest.approx(cosine(b), abs=0.02)
    assert status["embedding_backend"] == "server"
    assert status["embeddings"] == status["chunks"] and status["pending_embeddings"] == 0
    said = status["embedding_server"]
    assert said is not None
    assert said["url"] == server.url and said["model"] == "minilm-served"
    assert said["dim"] == 384 and said["reachable"] is True and said["error"] is None
    # the model was named in every request; no key was set, so none was sent
    assert {a.model for a in server.asked} == {"minilm-served"}
    assert {a.authorization for a in server.asked} == {None}


async def test_the_key_is_sent_as_a_bearer_token_and_never_shown(
        tmp_path: Path, server: EmbeddingServer) -> None:
    async with served(tmp_path / "i.db", server, embed_key="sk-secret-1",
                      embed_model="minilm-served") as rf:
        await rf.reindex(notes(tmp_path))
        status = await rf.status()
    assert {a.authorization for a in server.asked} == {"Bearer sk-secret-1"}
    assert "sk-secret-1" not in repr(status) and "sk-secret-1" not in repr(rf.settings)


async def test_batches_shrink_to_what_the_server_takes_and_requests_stay_bounded(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = tmp_path / "many"
    for i in range(40):
        write(root, f"n{i:02}.md", f"# Note {i}\n\nHeron number {i} stands in the reeds.\n")
    server.faults.max_batch = 5
    async with served(tmp_path / "i.db", server, embed_server_batch=16,
                      embed_concurrency=2) as rf:
        await rf.reindex(root)
        status = await rf.status()
    assert status["embeddings"] == status["chunks"] == 40
    assert status["pending_embeddings"] == 0
    said = status["embedding_server"]
    assert said is not None and said["batch_size"] <= 5
    assert {len(a.texts) for a in server.asked if a.answered == 413} and all(
        len(a.texts) <= 5 for a in server.asked if a.answered == 200)
    assert server.most_at_once <= 2
    assert server.texts_embedded() >= 40


async def test_500s_are_retried_and_429_waits_as_retry_after_asks(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    async with served(tmp_path / "i.db", server) as rf:
        await rf.wait_for_model()  # (connected: the faults below hit the documents)
        server.faults.status, server.faults.times = 500, 2
        await rf.reindex(root)
        assert await fully_embedded(rf)
        failed = [a for a in server.asked if a.answered == 500]
        assert len(failed) == 2
        server.faults.status, server.faults.times, server.faults.retry_after = 429, 1, "1"
        write(root, "more.md", "# More\n\nOtters hold hands while they sleep.\n")
        started = time.monotonic()
        await rf.reindex(root)
        waited = time.monotonic() - started
        assert await fully_embedded(rf)
    assert [a.answered for a in server.asked].count(429) == 1
    assert waited >= 1.0  # the server asked for a second


async def test_a_timeout_a_wrong_dimension_and_malformed_json_store_nothing_and_then_resume(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    async with served(tmp_path / "i.db", server, embed_timeout=2.0) as rf:
        await rf.reindex(root)
        before = (await rf.status())["embeddings"]
        faults: list[tuple[dict[str, Any], str]] = [
            ({"delay": 6.0}, "did not answer within 2 s"),
            ({"dim": 100}, "100 dimensions"),
            ({"malformed": True}, "not JSON")]
        for n, (fault, said) in enumerate(faults):
            for name, value in fault.items():
                setattr(server.faults, name, value)
            write(root, f"new{n}.md", f"# New {n}\n\nKingfishers dive for fish {n}.\n")
            await rf.reindex(root, background=True)

            async def waits(said: str = said) -> bool:
                status = await rf.status()
                waiting = status["embedder"]["waiting"]
                return waiting is not None and said in waiting

            await eventually(waits, within=30)
            status = await rf.status()
            assert status["embeddings"] == before + n  # nothing stored from the fault
            assert status["pending_embeddings"] >= 1
            hits = await rf.search("kingfishers dive", mode="lexical")
            assert {h["path"] for h in hits} >= {f"new{n}.md"}  # lexical goes on
            server.faults.clear()
            await eventually(lambda: fully_embedded(rf), within=30)  # by itself
            status = await rf.status()
            assert status["embeddings"] == before + n + 1
            assert status["embedder"]["waiting"] is None
            assert status["embedding_server"] is not None
            assert status["embedding_server"]["reachable"] is True


async def test_a_server_that_goes_away_mid_job_loses_nothing_and_embedding_resumes(
        db: Location, tmp_path: Path, server: EmbeddingServer) -> None:
    root = tmp_path / "many"
    for i in range(60):
        write(root, f"n{i:02}.md", f"# Note {i}\n\nHeron number {i} stands in the reeds.\n")
    async with served(db, server, embed_server_batch=2, embed_concurrency=1) as rf:
        await rf.wait_for_model()
        server.faults.delay = 0.05  # (slow enough to be caught mid-job)
        submitted = await rf.reindex(root, background=True)
        job_id = str(submitted["job"]["id"])
        await eventually(lambda: server.texts_embedded() >= 6, within=30)
        server.stop()  # the server goes away mid-job

        async def stalled() -> bool:
            return (await rf.status())["embedder"]["waiting"] is not None

        await eventually(stalled, within=30)
        embedded = (await rf.status())["embeddings"]
        assert 0 < embedded < 60
        assert (await rf.job(job_id))["status"] != "completed"  # it waits for its vectors
        lexical = await rf.search("heron reeds", mode="lexical", top_k=5)
        hybrid = await rf.search("heron reeds", mode="hybrid", top_k=5)
        semantic = await rf.search("a bird in the marsh", mode="semantic", top_k=5)
        assert len(lexical) == 5 and [h["chunk_id"] for h in hybrid] == [
            h["chunk_id"] for h in lexical]  # the lexical branch alone
        assert semantic == []
        said = rf.embedding_server()
        assert said is not None and said["reachable"] is False
        assert "cannot be reached" in (said["error"] or "")
        status = await rf.status()
        assert status["embeddings"] >= embedded  # nothing stored is lost
        server.faults.clear()
        server.start()  # it comes back: the embedder asks again by itself
        with anyio.fail_after(90):
            job = await rf.wait_for_job(job_id)
        assert job["status"] == "completed"
        status = await rf.status()
        assert status["embeddings"] == status["chunks"] == 60
        assert status["pending_embeddings"] == 0
        assert status["embedder"]["failures"] == 0  # no zero vectors were stored
        found = await rf.search("a bird in the marsh", mode="semantic", top_k=3)
    assert len(found) == 3


async def test_a_server_down_at_start_leaves_lexical_search_and_connects_when_it_answers(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    server.stop()
    async with served(tmp_path / "i.db", server) as rf:
        await rf.reindex(root, background=True)
        await eventually(lambda: rf.search("tomato watering", mode="lexical"), within=30)
        with anyio.fail_after(20):  # it does not wait for the model (60 s)
            semantic = await rf.search(PARAPHRASE, mode="semantic")
        assert semantic == []
        status = await rf.status()
        assert status["embedding_model_state"] == "loading"
        assert "waiting for the embedding server" in (status["embedding_model_reason"] or "")
        assert status["embedding_server"] is not None
        assert status["embedding_server"]["reachable"] is False
        server.start()
        await eventually(lambda: fully_embedded(rf), within=60)
        hits = await rf.search(PARAPHRASE, mode="semantic", top_k=1)
        assert rf.embedding_model == "server:minilm-served:384"
    assert hits[0]["path"] == "account.md"


async def test_another_server_model_re_embeds_the_index_as_another_local_model_does(
        db: Location, tmp_path: Path) -> None:
    root = notes(tmp_path)
    async with Rifflux(db) as rf:  # the bundled model
        await rf.reindex(root)
        local = (await rf.status())["embedding_model"]
    with embedding_server(model="model-a") as a:
        async with served(db, a) as rf:
            await eventually(lambda: fully_embedded(rf, "server:model-a:384"), within=60)
            status = await rf.status()
    assert local != status["embedding_model"] == "server:model-a:384"
    assert a.texts_embedded() >= status["chunks"] == status["embeddings"]
    with embedding_server(model="model-b") as b:
        async with served(db, b) as rf:
            await eventually(lambda: fully_embedded(rf, "server:model-b:384"), within=60)
            status = await rf.status()
    assert status["embedding_model"] == "server:model-b:384"
    assert b.texts_embedded() >= status["chunks"]
    with embedding_server(model="model-b") as again:  # the same model: nothing to do
        async with served(db, again) as rf:
            await eventually(lambda: fully_embedded(rf, "server:model-b:384"), within=60)
    # only the probe that learnt its model and dimension (and status's check)
    assert {t for a in again.asked for t in a.texts} <= {"dimension probe", "status check"}


async def test_a_server_that_lists_one_model_needs_none_named_and_several_need_one(
        tmp_path: Path, server: EmbeddingServer) -> None:
    async with served(tmp_path / "i.db", server) as rf:
        await rf.wait_for_model()
        assert rf.embedding_model == "server:minilm-served:384"
    assert server.asked[0].model == "minilm-served"
    async with served(tmp_path / "j.db", server, embed_model="no-such-model") as rf:
        await rf.wait_for_model()
        status = await rf.status()
    said = status["embedding_server"]
    assert said is not None and said["reachable"] is False
    assert "404" in (said["error"] or "") and "--embed-model" in (said["error"] or "")


# ---------------------------------------------------------------- settings and the API


def test_settings_refuse_a_url_that_is_not_http_and_hash_beside_a_server() -> None:
    with pytest.raises(InvalidArgumentError, match="http:// or https://"):
        Settings(embed_url="localhost:11434")
    with pytest.raises(InvalidArgumentError, match="hash"):
        Settings(embed_url="http://localhost:11434/v1", embedding_backend="hash")
    from rifflux.config import settings_from_env

    s = settings_from_env({"RIFFLUX_EMBED_URL": "http://localhost:11434/v1",
                           "RIFFLUX_EMBED_MODEL": "bge-m3", "RIFFLUX_EMBED_KEY": "k",
                           "RIFFLUX_EMBED_TIMEOUT": "7.5", "RIFFLUX_EMBED_CONCURRENCY": "2",
                           "RIFFLUX_EMBED_SERVER_BATCH": "8"})
    assert (s.embed_url, s.embed_model, s.embed_key, s.embed_timeout, s.embed_concurrency,
            s.embed_server_batch) == ("http://localhost:11434/v1", "bge-m3", "k", 7.5, 2, 8)


def test_the_embeddings_address_and_retry_after_are_read_as_servers_write_them() -> None:
    assert embeddings_url("http://localhost:11434/v1") == "http://localhost:11434/v1/embeddings"
    assert embeddings_url("http://localhost:8080") == "http://localhost:8080/v1/embeddings"
    assert embeddings_url("http://h/v1/embeddings/") == "http://h/v1/embeddings"
    assert retry_after("3") == 3.0
    assert retry_after(None) is None and retry_after("soon") is None
    now = 1_700_000_000.0
    assert retry_after("Tue, 14 Nov 2023 22:13:30 GMT", now) == pytest.approx(10.0)
    with pytest.raises(EmbeddingUnavailableError, match="not JSON"):
        parse_embeddings(b"<html>", 1, None)
    with pytest.raises(EmbeddingUnavailableError, match="2 embeddings for 1"):
        parse_embeddings(b'{"data": [{"embedding": [1]}, {"embedding": [2]}]}', 1, None)
    vectors, model = parse_embeddings(
        b'{"data": [{"embedding": [0, 2], "index": 1}, {"embedding": [3, 4], "index": 0}],'
        b' "model": "m"}', 2, 2)
    assert model == "m"
    assert vectors.tolist()[0] == pytest.approx([0.6, 0.8])
    assert vectors.tolist()[1] == pytest.approx([0.0, 1.0])


async def test_prefixes_go_before_queries_and_chunks_and_are_part_of_the_model_identity(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    db = tmp_path / "i.db"
    async with served(db, server, embed_query_prefix="search_query: ",
                      embed_document_prefix="search_document: ") as rf:
        await rf.reindex(root)
        await rf.search(PARAPHRASE, mode="semantic")
        status = await rf.status()
    label = status["embedding_model"]
    assert label is not None and label.startswith("server:minilm-served:384:")
    assert (status["embedding_query_prefix"], status["embedding_document_prefix"]) == (
        "search_query: ", "search_document: ")
    sent = [t for a in server.asked for t in a.texts if t not in ("dimension probe",
                                                                 "status check")]
    assert f"search_query: {PARAPHRASE}" in sent
    assert sum(t.startswith("search_document: ") for t in sent) == status["chunks"]
    server.asked.clear()
    async with served(db, server) as rf:  # no prefixes: other vectors, embedded again
        await eventually(lambda: fully_embedded(rf, "server:minilm-served:384"), within=60)
    again = [t for a in server.asked for t in a.texts if t not in ("dimension probe",
                                                                  "status check")]
    assert len(again) == status["chunks"]
    assert not any(t.startswith("search_") for t in again)


async def test_a_long_retry_after_is_honoured_until_the_server_is_found_answering(
        tmp_path: Path, server: EmbeddingServer) -> None:
    async with served(tmp_path / "i.db", server) as rf:
        await rf.wait_for_model()
        server.faults.status, server.faults.retry_after = 429, "120"
        await rf.reindex(notes(tmp_path), background=True)

        async def waiting() -> bool:
            return (await rf.status())["embedder"]["waiting"] is not None

        await eventually(waiting, within=30)
        status = await rf.status()
        retry_in = status["embedder"]["retry_in"]
        assert retry_in is not None and 60 < retry_in <= 120
        assert "429" in (status["embedder"]["waiting"] or "")
        documents = [a for a in server.asked if a.texts != ["status check"]]
        assert [a.answered for a in documents].count(429) == 1  # asked once, then waits
        server.faults.clear()
        await rf.status()  # (its check finds the server answering: the embedder goes on)
        await eventually(lambda: fully_embedded(rf), within=30)


async def test_texts_and_queries_too_long_for_the_server_are_cut_until_it_takes_them(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = notes(tmp_path)
    long_note = "# Herons\n\n" + " ".join(["Grey herons stand still in shallow water."] * 30)
    write(root, "herons.md", long_note)
    server.faults.max_chars = 300
    async with served(tmp_path / "i.db", server) as rf:
        await rf.reindex(root)
        status = await rf.status()
        hits = await rf.search("where do grey herons wait for fish " * 20, mode="semantic",
                               top_k=1)
    assert status["embeddings"] == status["chunks"] and status["pending_embeddings"] == 0
    assert status["embedder"]["failures"] == 0  # cut, not a zero vector
    assert any(a.answered == 400 for a in server.asked)  # (refused first, then cut)
    assert hits[0]["path"] == "herons.md"


async def test_a_server_that_hangs_does_not_hold_up_every_search(
        tmp_path: Path, server: EmbeddingServer) -> None:
    async with served(tmp_path / "i.db", server, embed_timeout=2.0) as rf:
        await rf.reindex(notes(tmp_path))
        server.faults.delay = 30.0
        first = await rf.search("tomato watering", top_k=2)
        second = await rf.search("packing light", top_k=2)
        said = rf.embedding_server()
    assert first[0]["path"] == "garden.md" and second[0]["path"] == "travel.md"  # lexical
    assert said is not None and "did not answer within 2 s" in (said["error"] or "")
    asked = [t for a in server.asked for t in a.texts]
    assert asked.count("tomato watering") == 1  # (a timeout is not tried again)
    assert "packing light" not in asked  # (it hangs: not asked again for a while)


async def test_a_slow_server_gets_smaller_batches_fewer_at_once_and_is_not_called_away(
        tmp_path: Path, server: EmbeddingServer) -> None:
    root = tmp_path / "many"
    for i in range(48):
        write(root, f"n{i:02}.md", f"# Note {i}\n\nHeron number {i} stands in the reeds.\n")
    server.faults.per_text = 0.1  # 16 texts: 1.6 s, beyond the timeout; 8: 0.8 s
    async with served(tmp_path / "i.db", server, embed_timeout=1.2, embed_server_batch=16,
                      embed_concurrency=4) as rf:
        await rf.reindex(root)
        status = await rf.status()
    said = status["embedding_server"]
    assert status["embeddings"] == status["chunks"] == 48
    assert said is not None and said["batch_size"] <= 8 and said["concurrency"] < 4
    assert said["reachable"] is True and status["embedder"]["waiting"] is None


async def test_a_server_back_is_connected_at_once_when_status_finds_it_answering(
        tmp_path: Path, server: EmbeddingServer) -> None:
    server.faults.status, server.faults.retry_after = 503, "600"  # (loading its model)
    async with served(tmp_path / "i.db", server) as rf:
        await rf.reindex(notes(tmp_path), background=True)
        await rf.wait_for_model()  # (it returns once the server has not answered)
        assert rf.embedding_model is None
        server.faults.clear()
        status = await rf.status()  # asks the server: it answers, and the loader goes on
        assert status["embedding_server"] is not None
        assert status["embedding_server"]["reachable"] is True
        await eventually(lambda: fully_embedded(rf, "server:minilm-served:384"), within=30)
