"""An index whose vectors another model made, opened by a process that may not replace
them (read-only, a one-shot reading command, ``auto``'s fallback model): its vectors are
kept as they are, its semantic search is off, and status and every answer say why, on
both stores. A writer given another model still re-embeds the index, as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rifflux import Rifflux, Settings

from .helpers import CountingEmbedder, Location, eventually, index_rows, rifflux_cli
from .test_models import broken_dir

pytestmark = pytest.mark.anyio

MADE_BY = "the index's vectors were made by made-v1, not by this process's model other-v1"


async def _vectors(db: Location) -> list[tuple[object, ...]]:
    return await index_rows(db, "SELECT model, count(*) FROM embeddings GROUP BY model "
                                "ORDER BY model")


async def _made(db: Location, topics: Path) -> list[tuple[object, ...]]:
    async with Rifflux(db, embedder=CountingEmbedder("made-v1")) as rf:
        await rf.reindex(topics)
        await eventually(lambda: rf.pending_embeddings() == 0, within=30)
    made = await _vectors(db)
    assert len(made) == 1 and made[0][0] == "made-v1" and int(str(made[0][1])) > 0
    return made


async def test_a_process_that_may_not_switch_models_keeps_the_vectors_and_says_why(
    db: Location, topics: Path,
) -> None:
    made = await _made(db, topics)
    for settings in (Settings(read_only=True), Settings(switch_model=False)):
        async with Rifflux(db, embedder=CountingEmbedder("other-v1"),
                           settings=settings) as rf:
            said = await eventually(rf.semantic_condition, within=30)
            assert await rf.search("tomato watering", mode="semantic") == []
            assert (await rf.search("tomato", mode="lexical"))[0]["path"] == "garden.md"
            status = await rf.status()
        assert MADE_BY in said and "semantic search is off" in said
        assert ("read-only process never re-embeds" in said) == settings.read_only
        assert status["embedding_error"] == said
        assert await _vectors(db) == made  # (not one dropped)
    # a writer given another model re-embeds the index with it
    async with Rifflux(db, embedder=CountingEmbedder("other-v1")) as rf:
        await eventually(lambda: rf.pending_embeddings() == 0, within=30)
        assert rf.semantic_condition() is None
        assert (await rf.search("tomato watering", mode="semantic"))[0]["path"] == "garden.md"
    assert await _vectors(db) == [("other-v1", made[0][1])]


async def test_autos_fallback_model_never_re_embeds_an_index(
    tmp_path: Path, topics: Path,
) -> None:
    # (a model that failed to load once must not cost the index the vectors it made)
    db = tmp_path / "i.db"
    made = await _made(db, topics)
    model_dir = broken_dir(tmp_path / "model", "unknown pooling")
    async with Rifflux(db, embedding_backend="auto", model_dir=model_dir) as rf:
        said = await eventually(rf.semantic_condition, within=30)
        status = await rf.status()
    assert "made by made-v1, not by this process's model hash-384-v1" in said
    assert status["embedding_fallback_reason"] is not None
    assert await _vectors(db) == made


def test_a_search_command_with_another_backend_keeps_the_vectors_and_says_why(
    tmp_path: Path, topics: Path,
) -> None:
    import anyio

    db = tmp_path / "i.db"
    made = anyio.run(_made, db, topics)
    for mode in ("semantic", "hybrid"):
        done = rifflux_cli(tmp_path, "--db", str(db), "--backend", "hash", "search",
                           "tomato watering", "--mode", mode, "--json")
        answer = json.loads(done.stdout)
        assert "made by made-v1, not by this process's model hash-384-v1" in answer["hint"]
        assert "try other words" not in answer["hint"]  # (not a matter of words)
        assert "Traceback" not in done.stderr
    assert answer["count"] >= 1  # (hybrid: its words still find it)
    assert anyio.run(_vectors, db) == made
