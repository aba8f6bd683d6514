"""SPEC acceptance criteria 1-5 and 7, the edge cases, and hostile queries, through the
public library API on a real SQLite file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rifflux import InvalidArgumentError, Rifflux
from rifflux.core.fusion import combine
from rifflux.store.sqlite import lexicon_build
from rifflux.store.sqlite.lexicon_build import LexiconLimits

from .helpers import (
    CountingEmbedder,
    Location,
    NewIndex,
    ZeroQueryEmbedder,
    bm25,
    cosine,
    eventually,
    fused,
    index_rows,
    pdf_of,
    write,
    write_all,
)

pytestmark = pytest.mark.anyio


async def test_lexical_results_have_bm25_only(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        results = await rf.search("bm25 fusion", mode="lexical")
    assert results
    for r in results:
        assert set(r["score_breakdown"]) == {"bm25"}
        assert isinstance(bm25(r), float)
        assert {"chunk_id", "path", "heading_path", "chunk_index", "content"} <= set(r)
    assert results[0]["path"] == "search.md"
    scores = [bm25(r) for r in results]
    assert scores == sorted(scores)  # SQLite's bm25: lower is better


async def test_a_hit_says_what_kind_of_file_it_is_in_and_a_pdfs_page(
    db: Location, tmp_path: Path
) -> None:
    docs = write(tmp_path / "docs", "notes.md", "# Otters\n\nOtters hold hands asleep.\n").parent
    (docs / "paper.pdf").write_bytes(pdf_of([["Herons wade at dawn."],
                                             ["Otters crack mussels on stones."]]))
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        found = {(h["path"], h["kind"], h.get("page"))
                 for h in await rf.search("otters", mode="lexical")}
        hybrid = await rf.search("mussels", kinds=["pdf"])
    assert found == {("notes.md", "markdown", None), ("paper.pdf", "pdf", 2)}
    assert [(h["kind"], h.get("page")) for h in hybrid][:1] == [("pdf", 2)]


async def test_a_word_a_pdf_hyphenates_at_a_lines_end_is_found_whole(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paper.pdf").write_bytes(pdf_of([["In parallel we also ap-",
                                              "ply tagging to the herons."]]))
    async with Rifflux(tmp_path / "index.db", embedder=CountingEmbedder()) as rf:
        await rf.reindex(docs)
        found = await rf.search('"also apply tagging"', mode="lexical")
    assert [(h["path"], h.get("page")) for h in found] == [("paper.pdf", 1)]


async def test_explain_names_the_query_the_stores_lexical_branch_runs(
    db: Location, search_docs: Path
) -> None:
    query = 'install "windows setup" the'
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        found = await rf.search(query, mode="lexical", top_k=1000)
        described = rf.describe_search(query)
        lexical = described["lexical"]
        assert rf.describe_search("!!! ???")["lexical"] is None
        assert not rf.searchable("!!! ???") and rf.searchable(query)
    assert lexical is not None and found
    # the expression named is the one the store runs: run there, it finds what the search found
    if isinstance(db, Path):
        assert lexical == {"store": "sqlite", "ranking": "fts5", "ranked_by": None,
                           "match": described["fts_query"], "every": None}
        sql = f"SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH '{lexical['match']}'"
    else:
        assert lexical["store"] == "postgresql" and lexical["ranking"] == "bm25"
        assert lexical["match"] == "('window' <-> 'setup') | 'instal'"  # (stems, as stored)
        assert lexical["ranked_by"] == "window setup instal"
        sql = ("SELECT count(*) FROM chunks c WHERE to_tsvector('simple', c.lexemes) @@ "
               f"to_tsquery('simple', $${lexical['match']}$$)")
    assert (await index_rows(db, sql))[0][0] == len(found)


async def test_semantic_results_have_cosine(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        results = await rf.search("flour eggs milk", mode="semantic", top_k=3)
    assert results
    assert all(set(r["score_breakdown"]) == {"cosine"} for r in results)
    cos = [cosine(r) for r in results]
    assert cos == sorted(cos, reverse=True)
    assert results[0]["path"] == "cooking.md"


async def test_hybrid_results_have_rrf_ranks_and_the_fused_score(
    db: Location, search_docs: Path
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        results = await rf.search("install windows")
    assert results
    for r in results:
        assert set(r["score_breakdown"]) == {"rrf", "lexical_rank", "semantic_rank", "fused"}
    scores = [fused(r)["fused"] for r in results]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
@pytest.mark.parametrize("top_k", [1, 2, 5])
async def test_at_most_top_k_results(
    db: Location, search_docs: Path, mode: str, top_k: int,
) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        results = await rf.search("install search pancakes fusion", top_k=top_k, mode=mode)
    assert 1 <= len(results) <= top_k


async def test_hybrid_order_is_the_fusion_of_the_two_single_mode_lists(
    db: Location, search_docs: Path
) -> None:
    for i in range(12):
        write(search_docs, f"extra/{i}.md", f"# Note {i}\n\ninstall search note number {i} " * 3)
    async with Rifflux(db, embedder=CountingEmbedder(), rrf_k=60) as rf:
        await rf.reindex(search_docs)
        top_k = 5
        query = "install search fusion"
        # each branch is read POOL deep (100; 2 * top_k when more), every copy kept
        lexical = await rf.search(query, top_k=100, mode="lexical", duplicates="all")
        semantic = (await rf.search(query, top_k=100, mode="semantic", duplicates="all"))
        hybrid = await rf.search(query, top_k=top_k, mode="hybrid", duplicates="all")
    lex_ids = [r["chunk_id"] for r in lexical]
    sem_ids = [r["chunk_id"] for r in semantic]
    expected: dict[str, float] = {}
    for ids in (lex_ids, sem_ids):
        for rank, cid in enumerate(ids, start=1):
            expected[cid] = expected.get(cid, 0.0) + 1.0 / (60 + rank)
    combined = combine([(r["chunk_id"], bm25(r)) for r in lexical],
                       [(r["chunk_id"], cosine(r)) for r in semantic], depth=100)
    assert len(hybrid) == top_k
    assert [r["chunk_id"] for r in hybrid] == [c.key for c in combined][:top_k]
    for r, c in zip(hybrid, combined, strict=False):
        b = fused(r)
        assert b["rrf"] == pytest.approx(expected[r["chunk_id"]])  # RRF's score, as before
        assert b["fused"] == pytest.approx(c.score)
        assert b["lexical_rank"] == (
            lex_ids.index(r["chunk_id"]) + 1 if r["chunk_id"] in lex_ids else None
        )
        assert b["semantic_rank"] == (
            sem_ids.index(r["chunk_id"]) + 1 if r["chunk_id"] in sem_ids else None
        )
    # (a best lexical hit scores 1/2 and more; the lexical list holds every match, so a
    # chunk missing from it counts 0 there)
    assert fused(hybrid[0])["fused"] >= 0.5
    both = [
        r
        for r in hybrid
        if fused(r)["lexical_rank"] and fused(r)["semantic_rank"]
    ]
    assert both, "the test needs a chunk present in both branches"


async def test_hybrid_with_lexical_branch_empty(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        results = await rf.search("zzzunknownword", mode="hybrid", top_k=3)
        lexical = await rf.search("zzzunknownword", mode="lexical")
    assert lexical == []
    assert results and all(fused(r)["lexical_rank"] is None for r in results)
    assert [fused(r)["semantic_rank"] for r in results] == [1, 2, 3]


async def test_hybrid_with_semantic_branch_empty(
    db: Location, tmp_path: Path, search_docs: Path,
) -> None:
    # backend "onnx" with a missing model: no query vector can ever be made
    async with Rifflux(
        db, embedding_backend="onnx", model_dir=tmp_path / "no-model"
    ) as rf:
        await rf.reindex(search_docs)
        semantic = await rf.search("install", mode="semantic")
        hybrid = await rf.search("install", mode="hybrid")
        status = await rf.status()
    assert semantic == []  # criterion 4: no query vector -> empty, no exception
    assert hybrid and all(fused(r)["semantic_rank"] is None for r in hybrid)
    assert "model.onnx" in (status["embedding_error"] or "")


async def test_both_branches_empty(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        assert await rf.search("anything at all") == []  # nothing indexed yet
        await rf.reindex(search_docs)
        assert await rf.search("!!!") == []


async def test_zero_norm_query_vector_gives_cosine_zero(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=ZeroQueryEmbedder()) as rf:
        await rf.reindex(search_docs)
        results = await rf.search("install", mode="semantic", top_k=3)
    assert results and all(cosine(r) == 0.0 for r in results)


HOSTILE = [
    '"unbalanced',
    "AND OR NOT",
    "NEAR(",
    "*",
    "-",
    ":",
    "col:val",
    "a\x00b",
    "x" * 10_000,
    "日本語",
    "café",
    "()",
    "-install",
    "install*",
    '"install the"',
    "",
]


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
async def test_hostile_queries_never_raise(db: Location, search_docs: Path, mode: str) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        for query in HOSTILE:
            results = await rf.search(query, mode=mode, top_k=3)
            assert isinstance(results, list) and len(results) <= 3
        assert await rf.search("install*", mode="lexical")


async def test_unknown_mode_and_bad_top_k_are_clear_errors(db: Location) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        with pytest.raises(InvalidArgumentError, match="mode"):
            await rf.search("x", mode="fuzzy")
        for bad in (0, -1):
            with pytest.raises(InvalidArgumentError, match="top_k"):
                await rf.search("x", top_k=bad)


async def test_get_chunk_and_get_file_read_back(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        hit = (await rf.search("pancakes", mode="lexical"))[0]
        chunk = await rf.get_chunk(hit["chunk_id"])
        assert chunk is not None and chunk["content"] == hit["content"]
        assert await rf.get_chunk("no-such-chunk") is None
        f = await rf.get_file("install.md")
        assert f is not None and f["path"] == "install.md"
        assert [c["chunk_index"] for c in f["chunks"]] == list(range(len(f["chunks"])))
        same = await rf.get_file(str(search_docs / "install.md"))
        assert same is not None and same["chunks"] == f["chunks"]
        assert await rf.get_file("missing.md") is None


async def test_status_has_the_spec_fields(db: Location, search_docs: Path) -> None:
    async with Rifflux(db, embedder=CountingEmbedder()) as rf:
        await rf.reindex(search_docs)
        status = await rf.status()
    for key in ("files", "chunks", "embeddings", "pending_embeddings"):
        assert isinstance(status[key], int)
    assert status["files"] == 3 and status["pending_embeddings"] == 0
    assert status["embeddings"] >= 1
    assert status["db_path"] == (str(db.resolve()) if isinstance(db, Path) else db)
    assert status["embedding_backend"] == "hash" and status["embedding_model"] == "counting-v1"
    assert "*.md" in status["include_globs"] and ".git" in status["exclude_globs"]
    assert isinstance(status["jobs"], list) and status["jobs"][0]["status"] == "completed"
    assert status["watcher"]["running"] is False


REPORT = "# Accessibility report\n\nEvery page passes the accessibility audit.\n"
OTHERS = {f"notes/n{i}.md": f"# Note {i}\n\nA note about topic {i} and nothing else.\n"
          for i in range(6)}


@pytest.fixture(params=["fts5", "lexicon", "postgres"])
def later_index(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Location]:
    """How the index built in two runs ranks (FTS5 alone, the lexicon, or PostgreSQL),
    and where it is."""
    if request.param == "postgres":
        return request.param, request.getfixturevalue("new_postgres_index")()
    return request.param, tmp_path / "later.db"


async def test_equal_scores_rank_alike_however_the_index_was_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, later_index: tuple[str, Location]
) -> None:
    # four identical copies tie in both branches; one index is built at once, the other
    # in two runs with the later folders first, so their row ids come in another order.
    # With the lexicon (built after the first run and kept), the later index ranks the
    # copies of its second run by FTS5 above the lexicon's watermark. On PostgreSQL, the
    # later index is a database: both stores order ties alike.
    built, later_at = later_index
    lexicon = built == "lexicon"
    if lexicon:
        monkeypatch.setattr(lexicon_build, "DEFAULT_LIMITS", LexiconLimits(
            min_chunks=0, term_share=0.0, min_rows=2, stale_share=1e9, min_stale=10**9))
    clean_at: Location = tmp_path / "clean.db"
    copies = [f"{folder}/accessibility-report.md" for folder in "abcd"]
    root = tmp_path / "docs"
    for rel, text in OTHERS.items():
        write(root, rel, text)
    for rel in copies[2:]:
        write(root, rel, REPORT)
    later = Rifflux(later_at, embedder=CountingEmbedder())
    async with later:
        await later.reindex(root)
        if lexicon:
            await eventually(lambda: _has_lexicon(tmp_path / "later.db"))
    for rel in copies[:2]:
        write(root, rel, REPORT)
    async with Rifflux(clean_at, embedder=CountingEmbedder()) as clean, \
            Rifflux(later_at, embedder=CountingEmbedder()) as later:
        await clean.reindex(root)
        await later.reindex(root)
        orders = [await _id_order(at, copies) for at in (clean_at, later_at)]
        if lexicon:
            await eventually(lambda: all(_has_lexicon(tmp_path / f"{name}.db")
                                         for name in ("clean", "later")))
        assert orders[0] != orders[1]  # (the test means something)
        for mode in ("lexical", "semantic", "hybrid"):
            for top_k in (1, 2, 3, 10):
                ranked = [[(h["path"], h["chunk_index"]) for h in
                           await rf.search("accessibility audit", top_k=top_k, mode=mode)]
                          for rf in (clean, later)]
                assert ranked[0] == ranked[1], (mode, top_k)
                tied = [path for path, _ in ranked[0] if path in copies]
                assert tied == copies[: len(tied)], (mode, top_k)  # by path


def _has_lexicon(db: Path) -> bool:
    with sqlite3.connect(db) as conn:
        return bool(conn.execute("SELECT count(*) FROM lexicon").fetchone() == (1,))


async def _id_order(at: Location, paths: list[str]) -> list[str]:
    """``paths`` in the order of their chunks' row ids in the index at ``at``."""
    rows = await index_rows(at, "SELECT f.rel_path FROM chunks c JOIN files f "
                                "ON f.id = c.file_id ORDER BY c.id")
    return [r[0] for r in rows if r[0] in paths]


async def test_equal_scores_never_depend_on_how_the_index_was_built(
    new_index: NewIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hash vectors: a query sharing no word with most chunks ties them all at 0.0, and the
    # matrix keeps only some of the rows tied at its cut (here: few, so that a small
    # folder shows it). Two indexes of the same files, one built folder by folder and one
    # at once, give their rows other ids: the same top 10 all the same.
    from rifflux import Settings
    from rifflux.core import vectors
    from rifflux.location import index_location

    monkeypatch.setattr(vectors, "_TIED", 1)
    root = tmp_path / "vault"
    folders = {name: {f"{name}/n{i:02}.md": f"# {name} {i}\n\nNotes about gardens {i}.\n"
                      for i in range(30)} for name in ("zeta", "alpha", "mid")}
    folders["copies"] = {f"copies/{c}/report.md": "# Report\n\nThe quarterly report.\n"
                         for c in "abcd"}
    folders["code"] = {"code/py.md": "# Python\n\nWe write python here.\n"}
    answers = []
    for built in ("folder by folder", "at once"):
        settings = Settings(db_path=index_location(new_index(built.replace(" ", "-"))),
                            semantic_feedback=0)
        async with Rifflux(settings=settings, embedder=CountingEmbedder()) as rf:
            if built == "folder by folder":
                for files in folders.values():
                    write_all(root, files)
                    await rf.reindex(root)
            else:  # (the files are all there already)
                await rf.reindex(root)
            hits = await rf.search("python", top_k=10)
            answers.append([(h["path"], h["chunk_index"]) for h in hits])
    assert answers[0][0] == ("code/py.md", 0)
    assert answers[0] == answers[1]
