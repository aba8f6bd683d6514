"""The opt-in reranker through the library, on both stores: a real rerank server on a free
port (tests/rerank_server.py: the bundled model's cosines as its scores) in both API
shapes, its faults (each leaves the fused order and says why), and an ONNX
cross-encoder built here, loaded from a directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rifflux import InvalidArgumentError, Rifflux, Settings
from rifflux.answers import search_answer
from rifflux.mcp.answers import WORDS
from rifflux.types import SearchResult

from .helpers import CountingEmbedder, Location, write_all
from .rerank_server import (
    RerankServer,
    ordered_by_cosine,
    overlap,
    overlap_cross_encoder,
    rerank_server,
)

pytestmark = pytest.mark.anyio

NOTES = {
    "otters.md": "# Otters\n\nSea otters crack mussels open on stones and sleep holding hands "
                 "in the kelp.\n",
    "kelp.md": "# Kelp\n\nKelp forests shelter otters, fish and urchins along cold coasts.\n",
    "mussels.md": "# Mussels\n\nMussels cling to rocks with threads; otters and gulls eat "
                  "them.\n",
    "stones.md": "# Stones\n\nSome animals use stones as tools: otters, crows and chimps.\n",
    "herons.md": "# Herons\n\nGrey herons stand in shallow water and spear fish at dawn.\n",
    "bread.md": "# Bread\n\nSourdough needs a starter, a long rise and a hot oven.\n",
    "budget.md": "# Budget\n\nThe budget sets aside money for rent and food.\n",
}
QUERY = "otters eating shellfish"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_all(tmp_path / "notes", NOTES)


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with rerank_server() as running:
        yield running


def _reranking(db: Location, **given: Any) -> Rifflux:
    """(A rerank timeout of 30 s unless given: the server's cosines take most of the
    default 2 s on a machine busy with the rest of the suite, and these tests are not
    about it.)"""
    return Rifflux(db, settings=Settings(**{"rerank_timeout": 30.0, **given}),
                   embedder=CountingEmbedder())


def _places(hits: list[SearchResult]) -> list[tuple[str, Any]]:
    return [(h["chunk_id"], {k: v for k, v in h["score_breakdown"].items() if k != "rerank"})
            for h in hits]


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank"])
async def test_the_servers_scores_order_the_first_hits_and_the_rest_keep_their_place(
    db: Location, notes: Path, server: RerankServer, path: str
) -> None:
    async with _reranking(db, rerank_url=server.url + path, rerank=True, rerank_depth=4) as rf:
        await rf.reindex(notes)
        fused = await rf.search(QUERY, top_k=7, rerank=False)
        reranked = await rf.search(QUERY, top_k=7, explain=True)
        one = await rf.search(QUERY, top_k=1)
    assert len(fused) == len(reranked) == 7
    head = [h["content"] for h in fused[:4]]
    assert [h["content"] for h in reranked[:4]] == ordered_by_cosine(QUERY, head)
    scores = [h["score_breakdown"].get("rerank") for h in reranked]
    assert all(isinstance(s, float) for s in scores[:4]) and scores[4:] == [None] * 3
    assert scores[:4] == sorted(scores[:4], reverse=True)  # type: ignore[type-var]
    assert _places(reranked[4:]) == _places(fused[4:])  # (below the reranked: fused order)
    assert sorted(_places(reranked[:4])) == sorted(_places(fused[:4]))
    fused_ids = [h["chunk_id"] for h in fused]
    assert [h["explain"]["fused_rank"] for h in reranked[:4]] == \
        [fused_ids.index(h["chunk_id"]) + 1 for h in reranked[:4]]
    assert one[0]["chunk_id"] == reranked[0]["chunk_id"]  # (top_k 1 reranks the first 4)
    assert ("texts" in server.requests[0]) == (path == "/rerank")  # (each API's own shape)
    sent = server.requests[0]
    assert len(sent["texts"] if "texts" in sent else sent["documents"]) == 4


async def test_single_modes_rerank_too_and_a_search_may_opt_out_or_in(
    db: Location, notes: Path, server: RerankServer
) -> None:
    async with _reranking(db, rerank_url=server.url, rerank_depth=3, rerank_name="bge-m3",
                          rerank_key="s3cret") as rf:  # (not by default)
        await rf.reindex(notes)
        plain = await rf.search(QUERY, mode="lexical")
        asked = await rf.search(QUERY, mode="lexical", rerank=True, top_k=2)
        semantic = await rf.search(QUERY, mode="semantic", rerank=True, top_k=5)
        explained = rf.describe_search(QUERY, rerank=True)
        quiet = rf.describe_search(QUERY)
    assert all("rerank" not in h["score_breakdown"] for h in plain)
    lexical_head = [h["content"] for h in plain[:3]]
    assert [h["content"] for h in asked] == ordered_by_cosine(QUERY, lexical_head)[:2]
    assert [("rerank" in h["score_breakdown"]) for h in semantic] == [True] * 3 + [False] * 2
    assert explained["rerank"] == {"by": server.url + "/v1/rerank", "depth": 3}
    assert server.requests[0]["model"] == "bge-m3"
    assert set(server.authorizations) == {"Bearer s3cret"}
    assert "rerank" not in quiet


@pytest.mark.parametrize(("fault", "says"), [
    ("500", "answered 500 ({\"error\": \"the model crashed\"})"),
    ("slow", "gave no answer within 5 s"),
    ("malformed", "malformed JSON"),
    ("short", "1 of the 7 documents sent have no score"),
    ("gone", "cannot be reached"),
])
async def test_a_failing_reranker_leaves_the_fused_order_and_the_answer_says_why(
    db: Location, notes: Path, server: RerankServer, fault: str, says: str
) -> None:
    url = server.url
    if fault == "gone":  # (a port nothing listens on any more)
        with rerank_server() as gone:
            url = gone.url
    else:
        server.fault = fault  # type: ignore[assignment]
    # The server's cosines may take most of a second on a machine busy with the rest of
    # the suite: 5 s tells a hang from them, and a slow server hangs far beyond it (until
    # the test ends).
    server.slow_seconds = 60.0
    async with _reranking(db, rerank_url=url, rerank=True, rerank_timeout=5,
                          rerank_depth=10) as rf:
        await rf.reindex(notes)
        fused = await rf.search(QUERY, rerank=False)
        failed = await rf.search(QUERY)
        answered = await search_answer(rf, QUERY, "hybrid", failed, {}, words=WORDS)
        failure = rf.rerank_failure()
        server.fault = "none"
        later = await rf.search(QUERY)  # (a server that is back reranks again)
        status = await rf.status()
    assert _places(failed) == _places(fused) and all(
        "rerank" not in h["score_breakdown"] for h in failed)
    assert failure is not None and says in failure
    assert answered.rerank is not None and says in answered.rerank
    assert answered.answer["hint"].startswith("not reranked (")
    assert "fused order" in answered.answer["hint"]
    if fault != "gone":
        assert all("rerank" in h["score_breakdown"] for h in later)
    assert status["reranker"] is not None
    assert status["reranker"]["failures"] == (2 if fault == "gone" else 1)
    assert status["reranker"]["last_failure"] == failure


async def test_an_onnx_cross_encoder_from_a_directory_orders_the_first_hits(
    db: Location, notes: Path, tmp_path: Path
) -> None:
    model = overlap_cross_encoder(tmp_path / "overlap")
    query = "otters crack mussels on stones"
    async with _reranking(db, rerank_model=model, rerank=True, rerank_depth=5) as rf:
        await rf.reindex(notes)
        fused = await rf.search(query, rerank=False, top_k=5)
        reranked = await rf.search(query, top_k=5)
        status = await rf.status()
    expected = sorted(((overlap(query, h["content"]), i) for i, h in enumerate(fused)),
                      key=lambda pair: (-pair[0], pair[1]))
    assert [h["chunk_id"] for h in reranked] == [fused[i]["chunk_id"] for _, i in expected]
    assert [h["score_breakdown"].get("rerank") for h in reranked] == \
        [float(score) for score, _ in expected]
    assert reranked[0]["path"] == "otters.md"
    assert status["reranker"] is not None
    assert status["reranker"]["by"] == str(model) and status["reranker"]["api"] == "onnx"


async def test_a_cross_encoder_that_cannot_load_leaves_the_fused_order_saying_why(
    tmp_path: Path, notes: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"not a model")
    (broken / "tokenizer.json").write_text("{}", encoding="utf-8")
    async with _reranking(tmp_path / "i.db", rerank_model=broken, rerank=True) as rf:
        await rf.reindex(notes)
        hits = await rf.search(QUERY)
        again = await rf.search(QUERY)
        failure = rf.rerank_failure()
    assert hits and all("rerank" not in h["score_breakdown"] for h in hits + again)
    assert failure is not None and "cannot be loaded by onnxruntime" in failure
    async with _reranking(tmp_path / "i.db", rerank_model=tmp_path / "missing",
                          rerank=True) as rf:
        await rf.search(QUERY)
        missing = rf.rerank_failure()
    assert missing is not None and "rerank model directory" in missing and "not found" in missing


async def test_rerank_without_a_reranker_or_with_a_bad_setting_is_an_error(
    tmp_path: Path, notes: Path
) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(notes)
        with pytest.raises(InvalidArgumentError, match="none is configured"):
            await rf.search(QUERY, rerank=True)
        assert await rf.search(QUERY, rerank=False)
    for bad, says in (({"rerank": True}, "names no reranker"),
                      ({"rerank_url": "127.0.0.1:8012"}, "http:// or https://"),
                      ({"rerank_url": "http://h", "rerank_model": tmp_path}, "not both"),
                      ({"rerank_depth": 101}, "from 1 to 100"),
                      ({"rerank_timeout": 0}, "above 0"),
                      ({"rerank_api": "cohere"}, "auto, jina, tei")):
        with pytest.raises(InvalidArgumentError, match=says):
            Settings(**bad)


def test_the_reranker_is_configured_from_the_environment_as_the_other_settings() -> None:
    from rifflux.config import settings_from_env

    settings = settings_from_env({
        "RIFFLUX_RERANK": "yes", "RIFFLUX_RERANK_URL": " http://127.0.0.1:8080/rerank ",
        "RIFFLUX_RERANK_NAME": "bge-reranker-v2-m3", "RIFFLUX_RERANK_KEY": "k",
        "RIFFLUX_RERANK_API": "TEI", "RIFFLUX_RERANK_DEPTH": "50",
        "RIFFLUX_RERANK_TIMEOUT": "0.5"})
    assert (settings.rerank, settings.rerank_url, settings.rerank_name, settings.rerank_key,
            settings.rerank_api, settings.rerank_depth, settings.rerank_timeout) == (
        True, "http://127.0.0.1:8080/rerank", "bge-reranker-v2-m3", "k", "tei", 50, 0.5)
    model = settings_from_env({"RIFFLUX_RERANK_MODEL": "~/models/ce"})
    assert model.rerank_model == Path.home() / "models" / "ce" and not model.rerank
    with pytest.raises(InvalidArgumentError, match="rerank_depth"):
        settings_from_env({"RIFFLUX_RERANK_URL": "http://h", "RIFFLUX_RERANK_DEPTH": "0"})
