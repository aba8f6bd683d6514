"""``search(query, hypothesis=...)``: the semantic branch embeds what the answer would look
like (with the query), the lexical branch keeps the query's words; on both stores,
through the library (the surfaces: tests/test_rerank_surfaces.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rifflux import InvalidArgumentError, Rifflux
from rifflux.core.hypothesis import semantic_text
from rifflux.core.vectors import F32
from rifflux.limits import MAX_HYPOTHESIS_CHARS

from .helpers import CountingEmbedder, Location, bm25, write_all

pytestmark = pytest.mark.anyio

NOTES = {
    "otters.md": "# Otters\n\nSea otters crack mussels and urchins open on stones resting on "
                 "their bellies, and hold hands while they sleep in the kelp.\n",
    "bread.md": "# Bread\n\nA sourdough loaf needs a lively starter, a long cold rise "
                "overnight and a very hot oven.\n",
    "herons.md": "# Herons\n\nGrey herons stand still in shallow water at dawn and spear "
                 "fish with their beaks.\n",
    "budget.md": "# Budget\n\nThe household budget sets aside money for rent, food and a "
                 "small emergency fund every month.\n",
}


class _Asked(CountingEmbedder):
    """The hash embedder, keeping the texts it is asked to embed as queries."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed_query(self, text: str) -> F32:
        self.asked.append(text)
        return super().embed_query(text)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_all(tmp_path / "notes", NOTES)


async def test_the_semantic_branch_embeds_the_hypothesis_and_the_lexical_branch_the_query(
    db: Location, notes: Path
) -> None:
    query, hypothesis = "what do they eat", "Otters crack mussels open on stones."
    embedder = _Asked()
    async with Rifflux(db, embedder=embedder) as rf:
        await rf.reindex(notes)
        guessed = await rf.search(query, mode="semantic", hypothesis=hypothesis)
        as_text = await rf.search(semantic_text(query, hypothesis), mode="semantic")
        hybrid = await rf.search("mussels", hypothesis="Bread rises overnight.", explain=True,
                                 duplicates="all")
        lexical = await rf.search("mussels", mode="lexical", duplicates="all")
    assert embedder.asked[0] == f"{hypothesis}\n{query}"  # (the hypothesis, then the query)
    assert [(h["chunk_id"], h["score_breakdown"]) for h in guessed] == \
        [(h["chunk_id"], h["score_breakdown"]) for h in as_text]
    # the lexical branch ranks the query's words: the same bm25 as a lexical search
    lexical_scores = {h["chunk_id"]: bm25(h) for h in lexical}
    from_lexical = {h["chunk_id"]: h["explain"]["bm25"] for h in hybrid
                    if "bm25" in h.get("explain", {})}
    assert from_lexical == lexical_scores and len(lexical) == 1
    assert hybrid[0]["snippet"].count("**mussels**") == 1  # (snippets mark the query's words)


async def test_explain_says_which_text_each_branch_searched_with(
    db: Location, notes: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(notes)
        plain = rf.describe_search("otters")
        guessed = rf.describe_search("otters", hypothesis="Otters sleep in kelp.")
        semantic = rf.describe_search("otters", mode="semantic", hypothesis="In kelp.")
        lexical = rf.describe_search("otters", mode="lexical")
    assert plain["texts"] == {"lexical": "otters", "semantic": "otters", "hypothesis": False}
    assert guessed["texts"] == {"lexical": "otters", "semantic": "Otters sleep in kelp.\notters",
                                "hypothesis": True}
    assert semantic["texts"] == {"lexical": None, "semantic": "In kelp.\notters",
                                 "hypothesis": True}
    assert lexical["texts"] == {"lexical": "otters", "semantic": None, "hypothesis": False}
    assert "rerank" not in plain  # (no reranker configured)


async def test_a_hypothesis_finds_what_a_vague_question_does_not_with_the_real_model(
    tmp_path: Path, notes: Path
) -> None:
    async with Rifflux(tmp_path / "i.db") as rf:  # the bundled ONNX model
        await rf.reindex(notes)
        found = {}
        for query, hypothesis in (
                ("what happens at night", "The dough rises slowly in the cold overnight."),
                ("where does it go", "Money is set aside for rent every month.")):
            vague = await rf.search(query, mode="semantic", top_k=1)
            guessed = await rf.search(query, mode="semantic", top_k=1, hypothesis=hypothesis)
            found[query] = (vague[0]["path"], guessed[0]["path"])
    assert found == {"what happens at night": ("otters.md", "bread.md"),
                     "where does it go": ("otters.md", "budget.md")}


@pytest.mark.parametrize(("hypothesis", "mode", "says"), [
    ("  ", "hybrid", "blank"),
    ("x" * (MAX_HYPOTHESIS_CHARS + 1), "hybrid", f"{MAX_HYPOTHESIS_CHARS:,}"),
    ("Otters sleep in kelp.", "lexical", "hybrid or semantic"),
    (42, "hybrid", "must be a string"),
])
async def test_a_hypothesis_that_cannot_be_used_is_an_error_saying_what_to_do(
    tmp_path: Path, notes: Path, hypothesis: object, mode: str, says: str
) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(notes)
        with pytest.raises(InvalidArgumentError, match=says):
            await rf.search("otters", mode=mode, hypothesis=hypothesis)  # type: ignore[arg-type]
        fine = await rf.search("otters", mode=mode)
    assert fine  # (the instance goes on)
