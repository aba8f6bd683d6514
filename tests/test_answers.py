"""Shaping search answers through the library: snippets, a cap per file, snippet-only
results, and why each hit ranks where it does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rifflux import InvalidArgumentError, Rifflux
from rifflux.answers import FIRST_LOOK_CHARS, answer_text, search_answer, why
from rifflux.core.filters import make_filters
from rifflux.core.vectors import F32
from rifflux.limits import DEFAULT_MAX_CHARS
from rifflux.mcp.answers import WORDS
from rifflux.types import SearchAnswer

from .helpers import CountingEmbedder, bm25, fused, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(root, "long.md", "# Long\n\n" + "".join(
        f"## Part {i}\n\nThe compost heap in part {i} needs turning and water.\n\n"
        for i in range(8)))
    write(root, "short.md", "# Short\n\nA compost note of its own.\n")
    write(root, "other.md", "# Other\n\nNothing about heaps, just a garden bench.\n")
    return root


async def test_every_hit_has_a_snippet_with_the_terms_marked(tmp_path: Path, docs: Path) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        for mode in ("lexical", "semantic", "hybrid"):
            hits = await rf.search("composting heaps", mode=mode)
            assert hits and all("snippet" in h for h in hits), mode
        lexical = await rf.search("composting heaps", mode="lexical")
    assert "**compost**" in lexical[0]["snippet"] and "**heap**" in lexical[0]["snippet"]


async def test_max_per_file_caps_a_file_and_goes_on_down_the_ranking(
    tmp_path: Path, docs: Path
) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        plain = await rf.search("compost turning", mode="lexical", top_k=5)
        capped = await rf.search("compost turning", mode="lexical", top_k=5, max_per_file=2)
        one = await rf.search("compost", top_k=10, max_per_file=1)
    assert [h["path"] for h in plain] == ["long.md"] * 5  # one file crowds the list
    assert [h["path"] for h in capped] == ["long.md", "long.md", "short.md"]
    assert sorted(h["path"] for h in one) == ["long.md", "other.md", "short.md"]
    assert capped[:2] == plain[:2]  # the ranking itself is unchanged


async def test_max_per_file_reads_on_past_a_file_that_fills_the_first_window(
    tmp_path: Path,
) -> None:
    # 300 sections of one file outrank every other file in both branches: the first
    # window (top_k * 10) holds that file alone, and the search must read on.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "big.md").write_text("".join(
        f"## Retry {i}\n\nretry retry policy retry again {i}\n\n" for i in range(300)),
        encoding="utf-8")
    for i in range(4):
        (notes / f"small-{i}.md").write_text(
            f"# Small {i}\n\nA long page about gardens, soil, seeds and water, that says "
            f"retry only once, near its end ({i}).\n", encoding="utf-8")
    embedder = QueryCountingEmbedder()
    async with Rifflux(tmp_path / "i.db", embedder=embedder) as rf:
        await rf.reindex(notes)
        for mode in ("lexical", "semantic", "hybrid"):
            embedder.queries.clear()
            hits = await rf.search("retry", mode=mode, top_k=5,
                                   max_per_file=1)
            assert sorted(h["path"] for h in hits) == [
                "big.md", "small-0.md", "small-1.md", "small-2.md", "small-3.md"], mode
            # the query is embedded once, however far the search reads
            assert embedder.queries == ([] if mode == "lexical" else ["retry"]), mode


class QueryCountingEmbedder(CountingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> F32:
        self.queries.append(text)
        return super().embed_query(text)


async def test_snippet_only_results_leave_the_content_out(tmp_path: Path, docs: Path) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        full = await rf.search("compost", top_k=3)
        light = await rf.search("compost", top_k=3, content="snippet")
        with pytest.raises(InvalidArgumentError, match="unknown content 'some'"):
            await rf.search("compost", content="some")
        with pytest.raises(InvalidArgumentError, match="max_per_file"):
            await rf.search("compost", max_per_file=0)
        with pytest.raises(InvalidArgumentError, match="snippet_chars"):
            await rf.search("compost", snippet_chars=5)
        short = await rf.search("compost", top_k=3, snippet_chars=60)
    assert all("content" not in h and h["snippet"] for h in light)
    assert all(len(h["snippet"].replace("**", "")) <= 62 for h in short)
    assert [h["chunk_id"] for h in light] == [h["chunk_id"] for h in full]


async def test_explain_gives_each_hits_ranks_and_raw_scores(tmp_path: Path, docs: Path) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        hybrid = await rf.search("garden bench", explain=True)
        lexical = await rf.search("garden bench", mode="lexical", explain=True)
        semantic = await rf.search("garden bench", mode="semantic", explain=True)
        plain = await rf.search("garden bench")
        described = rf.describe_search('garden "bench seat" the', tags=["x"], paths="docs/**")
    first = hybrid[0]["explain"]
    assert set(first) == {"lexical_rank", "bm25", "semantic_rank", "cosine"}
    assert first["lexical_rank"] == fused(hybrid[0])["lexical_rank"]
    assert set(lexical[0]["explain"]) == {"lexical_rank", "bm25"}
    assert lexical[0]["explain"]["bm25"] == bm25(lexical[0])
    assert set(semantic[0]["explain"]) == {"semantic_rank", "cosine"}
    assert "explain" not in plain[0]
    assert described == {"fts_query": '"bench seat" OR "garden"', "fts_every": None,
                         "stopwords_dropped": ["the"],
                         "filters": {"paths": ["docs/**"], "tags": ["x"]},
                         "lexical": {"store": "sqlite", "ranking": "fts5", "every": None,
                                     "match": '"bench seat" OR "garden"', "ranked_by": None}}


async def test_explain_shows_both_expressions_of_a_mixed_script_query(
    tmp_path: Path, docs: Path
) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        mixed = rf.describe_search("how to use the Python 教程")
        plain = rf.describe_search("Python tutorial", root=str(docs))
    assert mixed["fts_query"] == '"use" OR "Python" OR "教程"'
    assert mixed["fts_every"] == '"use" AND "Python" AND "教程"'  # (these rank first)
    assert mixed["stopwords_dropped"] == ["how", "to", "the"]
    assert plain["fts_every"] is None and plain["stopwords_dropped"] == []
    assert plain["filters"] == {"root": str(docs)}


async def test_a_first_look_shares_its_characters_among_the_snippets(tmp_path: Path) -> None:
    # content='snippet' over MCP: the hits' snippets share what SPEC's fields leave of
    # about 4,000 characters. Ten hits get narrower snippets than two; when the fields
    # alone take it all, snippets are at their narrowest and no field is dropped.
    notes, crowded = tmp_path / "notes", tmp_path / "crowded"
    for i in range(12):
        text = f"The river delta number {i} floods every spring. " * 25
        write(notes, f"n{i:02}.md", f"# A long document title every breadcrumb repeats {i}"
                                    f"\n\n## Deltas {i}\n\n{text}")
        write(crowded, f"n{i:02}.md", f"# {'A very long heading indeed ' * 14}{i}\n\n{text}")

    def widths(answer: SearchAnswer) -> list[int]:
        return [len(h["snippet"].replace("**", "").strip("…")) for h in answer["results"]]

    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(paths=[notes, crowded])

        async def look(top_k: int, root: Path, query: str = "river delta") -> SearchAnswer:
            hits = await rf.search(query, top_k=top_k, root=str(root))
            answered = await search_answer(rf, query, "hybrid", hits, {"root": str(root)},
                                           words=WORDS, max_chars=DEFAULT_MAX_CHARS,
                                           first_look=True)
            return answered.answer

        ten, two, tight = await look(10, notes), await look(2, notes), await look(10, crowded)
        misspelt = await look(10, notes, "rvier dleta")  # every hit by meaning: a hint
    assert len(answer_text(ten)) <= FIRST_LOOK_CHARS
    assert "hint" not in ten
    assert misspelt["count"] == 10 and "only close in meaning" in misspelt["hint"]
    assert len(answer_text(misspelt)) <= FIRST_LOOK_CHARS  # the hint is counted in
    assert all(80 <= w < 200 for w in widths(ten)), widths(ten)
    assert all(w > 200 for w in widths(two)), widths(two)
    assert len(answer_text(tight)) > FIRST_LOOK_CHARS
    assert all(w <= 80 for w in widths(tight)), widths(tight)
    for hit in tight["results"]:
        assert {"chunk_id", "path", "heading_path", "chunk_index", "score_breakdown",
                "snippet"} == set(hit)
        assert "**river**" in hit["snippet"]


async def test_meaning_only_is_said_only_when_no_chunk_holds_the_words(
    tmp_path: Path, docs: Path
) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        # words some chunk holds: the first hit has a lexical rank however few are asked
        # for (the lexical list holds every match: core.fusion.combine), so there is
        # nothing to say
        for top_k in (1, 3):
            hits = await rf.search("compost", top_k=top_k)
            assert fused(hits[0])["lexical_rank"] is not None
            assert await why(rf, "compost", "hybrid", hits, {}) is None
        misspelt = await rf.search("cmopost", top_k=3)
        assert misspelt and await why(rf, "cmopost", "hybrid", misspelt, {}) == "meaning only"
        assert await why(rf, "cmopost", "semantic", misspelt, {}) is None  # as asked


async def test_an_answer_explains_the_filters_its_search_applied(
    tmp_path: Path, docs: Path
) -> None:
    # "7d" parsed twice is two different instants: the answer reports the one parse the
    # search used (here made a year ago, so that a second parse could not match it)
    a_year_ago = datetime.now(UTC) - timedelta(days=365)
    given: dict[str, Any] = {"modified_after": "7d", "paths": "*.md"}
    applied = make_filters(**given, now=a_year_ago)
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        hits = await rf.search_filtered("compost", applied, top_k=3)
        answer = (await search_answer(rf, "compost", "hybrid", hits, given, words=WORDS,
                                      explain=True, max_chars=DEFAULT_MAX_CHARS,
                                      applied=applied)).answer
        fresh = rf.describe_search("compost", **given)["filters"]
    assert hits  # the files were written just now: after a year and a week ago
    explained = answer["explain"]["filters"]
    assert explained == applied.describe() != fresh
    assert explained["modified_after"] == (a_year_ago - timedelta(days=7)).isoformat()


async def test_a_hint_reads_the_counts_and_the_hits_and_searches_little_more(
    tmp_path: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:

        async def refused(*args: object, **kwargs: object) -> None:
            raise AssertionError("a hint costs one read of the counts, no more")

        for costly in ("status", "search", "search_filtered"):
            monkeypatch.setattr(rf, costly, refused)
        assert await why(rf, "compost", "hybrid", [], {}) == "no files"
        assert await why(rf, "compost", "hybrid", [], {"tags": ["x"]}) == "no files"
        monkeypatch.undo()
        await rf.reindex(docs)
        misspelt = await rf.search("cmopost", top_k=3)  # every hit by meaning alone
        for costly in ("status", "search", "search_filtered"):
            monkeypatch.setattr(rf, costly, refused)
        assert await why(rf, "compost", "hybrid", [], {"tags": ["x"]}) == "filters"
        assert await why(rf, "!!!", "hybrid", [], {}) == "no words"
        assert await why(rf, "compost", "hybrid", [], {}) == "no match"
        # hits all found by meaning: one lexical search of one hit says whether any chunk
        # holds the words (they may rank below the hits: core.fusion.combine)
        # (asked of search_filtered, which a one-shot read's DirectIndex answers too)
        searched: list[tuple[object, ...]] = []
        search = Rifflux.search_filtered.__get__(rf)

        async def counted(*args: object, **kwargs: object) -> object:
            searched.append(args)
            return await search(*args, **kwargs)

        monkeypatch.setattr(rf, "search_filtered", counted)
        assert misspelt and await why(rf, "cmopost", "hybrid", misspelt, {}) == "meaning only"
        assert searched == [("cmopost", make_filters(), 1, "lexical")]


def test_every_surface_has_words_for_every_reason_an_answer_gives() -> None:
    from typing import get_args

    from rifflux.answers import Why, Words
    from rifflux.cli.search import _words
    from rifflux.http.routes import WORDS as HTTP_WORDS

    reasons = set(get_args(Why))
    for surface in (WORDS, HTTP_WORDS, _words(None), _words(4242)):
        assert set(surface.why) == reasons
        assert all(text.strip() for text in surface.why.values())
        assert "12" in surface.pending(12)
    assert "process 4242" in _words(4242).pending(3)
    lacking = {reason: "x" for reason in reasons if reason != "meaning only, sentence"}
    with pytest.raises(TypeError, match="meaning only, sentence"):
        Words(why=lacking, pending=str, read_hit="x",
              names=WORDS.names)


async def test_meaning_only_is_not_said_when_chunks_holding_the_words_rank_below_the_hits(
    tmp_path: Path
) -> None:
    # many chunks hold the one searchable word alike (a full, flat lexical list, which
    # tells little), and a chunk of the query's stopwords alone is closest in meaning
    root = tmp_path / "notes"
    for i in range(120):
        write(root, f"n{i:03}.md", f"# Note {i}\n\nA garden note, number {i}.\n")
    write(root, "glue.md", "# The of the\n\nThe of the, of the, of the.\n")
    async with Rifflux(tmp_path / "i.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(root)
        hits = await rf.search("the of the garden", top_k=1)
        assert fused(hits[0])["lexical_rank"] is None  # (what the test is about)
        assert await why(rf, "the of the garden", "hybrid", hits, {}) is None
