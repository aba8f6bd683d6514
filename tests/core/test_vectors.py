from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from rifflux.core import selection
from rifflux.core import vectors as vectors_module
from rifflux.core.codes import normalise
from rifflux.core.embedders import HashEmbedder, OnnxEmbedder, locate_model
from rifflux.core.ranking import rank
from rifflux.core.selection import group_ranks
from rifflux.core.vectors import VectorIndex

from ..helpers import ExactVectors, brute_force


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_top_k_orders_by_cosine() -> None:
    idx = ExactVectors(3)
    idx.upsert([10, 20, 30], np.stack([unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 0)]))
    got = idx.top_k(unit(1, 0.1, 0), 2)
    assert [i for i, _ in got] == [10, 20]
    assert got[0][1] == pytest.approx(float(unit(1, 0, 0) @ unit(1, 0.1, 0)), rel=1e-5)


def test_remove_keeps_rows_contiguous_and_correct() -> None:
    idx = ExactVectors(2, capacity=2)
    vecs = np.stack([unit(1, i) for i in range(50)])
    idx.upsert(list(range(50)), vecs)
    idx.remove(range(0, 50, 2))
    assert len(idx) == 25
    got = dict(idx.top_k(unit(1, 7), 50))
    assert set(got) == set(range(1, 50, 2))
    assert got[7] == pytest.approx(1.0, abs=1e-5)


def test_zero_query_vector_gives_zero_cosines() -> None:
    idx = ExactVectors(2)
    idx.upsert([1, 2], np.stack([unit(1, 0), unit(0, 1)]))
    got = idx.top_k(np.zeros(2, dtype=np.float32), 5)
    assert [s for _, s in got] == [0.0, 0.0]


def test_empty_index_returns_nothing() -> None:
    assert ExactVectors(4).top_k(unit(1, 0, 0, 0), 3) == []


def test_upsert_replaces_a_vector() -> None:
    idx = ExactVectors(2)
    idx.upsert([1], unit(1, 0)[None, :])
    idx.upsert([1], unit(0, 1)[None, :])
    assert len(idx) == 1
    assert idx.top_k(unit(0, 1), 1)[0][1] == pytest.approx(1.0)


def test_feedback_rescores_against_the_moved_query() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    idx = ExactVectors(8)
    idx.upsert(list(range(300)), vecs)
    q = vecs[5] + 0.5 * vecs[9]
    plain = idx.top_k(q, 10)
    assert idx.top_k(q, 10, feedback=0) == plain
    moved_hits = idx.top_k(q, 10, feedback=3, weight=1.0, pool=300)
    qn = q / np.linalg.norm(q)
    top3 = [i for i, _ in plain[:3]]
    moved = qn + vecs[top3].mean(axis=0)
    moved /= np.linalg.norm(moved)
    expected = sorted(((float(vecs[i] @ moved), i) for i in range(300)), reverse=True)[:10]
    assert [i for i, _ in moved_hits] == [i for _, i in expected]
    assert [s for _, s in moved_hits] == pytest.approx([s for s, _ in expected], rel=1e-5)


def test_feedback_with_a_zero_query_still_gives_zero_cosines() -> None:
    idx = ExactVectors(2)
    idx.upsert([1, 2], np.stack([unit(1, 0), unit(0, 1)]))
    got = idx.top_k(np.zeros(2, dtype=np.float32), 2, feedback=3)
    assert [s for _, s in got] == [0.0, 0.0]


def test_a_mask_limits_top_k_to_its_groups_before_the_cut() -> None:
    rng = np.random.default_rng(7)
    index = ExactVectors(8)
    vectors = rng.normal(size=(200, 8)).astype(np.float32)
    groups = [i % 10 for i in range(200)]
    index.upsert(list(range(200)), vectors, groups)
    query = rng.normal(size=8).astype(np.float32)
    allowed = np.asarray([3, 7], dtype=np.int64)
    mask = index.mask(allowed)
    got = index.top_k(query, 15, mask=mask)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ (query / np.linalg.norm(query))
    expected = sorted((i for i in range(200) if groups[i] in (3, 7)),
                      key=lambda i: (-cosines[i], i))[:15]
    assert [i for i, _ in got] == expected
    assert len(index.top_k(query, 500, mask=mask)) == 40  # only the masked rows exist
    with_feedback = index.top_k(query, 15, mask=mask, feedback=3)
    assert {i for i, _ in with_feedback} <= set(expected) | {i for i in range(200)
                                                              if groups[i] in (3, 7)}
    assert all(groups[i] in (3, 7) for i, _ in with_feedback)
    index.remove([3])
    with pytest.raises(ValueError, match="make it again"):
        index.top_k(query, 5, mask=mask)  # stale: the matrix changed
    assert index.top_k(query, 5, mask=index.mask(np.asarray([99], dtype=np.int64))) == []


def test_equal_vectors_tie_exactly_whatever_path_blas_summed_them_by() -> None:
    # Found by the property test: BLAS gave row 2 a cosine one ulp above row 1's equal
    # vector, so the larger id came first and the smaller one lost the cut.
    index = ExactVectors(4)
    index.upsert([0, 1, 2], normalise(np.array(
        [[1, 0, 0, 0], [1, -1, 1, -1], [1, -1, 1, -1]], dtype=np.float32)))
    query = np.array([0, 1, 1, -2], dtype=np.float32)
    assert [i for i, _ in index.top_k(query, 1)] == [1]
    two = index.top_k(query, 2)
    assert [i for i, _ in two] == [1, 2] and two[0][1] == two[1][1]


@pytest.mark.parametrize("feedback", [0, 3])
def test_with_ties_every_row_equal_to_the_kth_is_returned_for_the_caller_to_order(
    feedback: int,
) -> None:
    idx = ExactVectors(3)
    same = unit(1, 0.2, 0)
    idx.upsert([7, 3, 9, 5, 1], np.stack([unit(1, 0, 0), same, same, same, unit(0, 0, 1)]))
    query = unit(1, 0.1, 0)
    plain = idx.top_k(query, 2, feedback=feedback)
    assert len(plain) == 2
    tied = idx.top_k(query, 2, feedback=feedback, ties=True)
    assert len({s for i, s in tied if i in (3, 5, 9)}) == 1  # exactly equal cosines
    assert {i for i, _ in tied} == {i for i, _ in plain} | {3, 5, 9}
    assert 1 not in dict(idx.top_k(query, 4, feedback=feedback, ties=True))
    zero = idx.top_k(np.zeros(3, dtype=np.float32), 2, ties=True)
    assert len(zero) == 2  # every cosine 0.0: no tie group of the whole index


# ------------------------------------------------ the compact matrix against exact float32


def clustered(rng: np.random.Generator, n: int, dim: int, clusters: int = 40) -> np.ndarray:
    """Vectors in clusters, as embeddings of texts on a few topics are: near neighbours
    are close, so quantisation could reorder them."""
    centres = rng.normal(size=(clusters, dim)).astype(np.float32)
    rows = centres[rng.integers(0, clusters, n)] + 0.35 * rng.normal(size=(n, dim))
    return normalise(rows.astype(np.float32))


def agreement(got: list[tuple[int, float]], want: list[tuple[int, float]]) -> float:
    return len({i for i, _ in got[:10]} & {i for i, _ in want[:10]}) / max(len(want[:10]), 1)


@pytest.mark.parametrize("feedback", [0, 3])
def test_the_compact_matrix_ranks_like_an_exact_float32_search(feedback: int) -> None:
    rng = np.random.default_rng(11)
    n, dim = 6000, 384
    vectors = clustered(rng, n, dim)
    ids = np.arange(100, 100 + n, dtype=np.int64)
    index = ExactVectors(dim)
    index.upsert(list(ids), vectors)
    shares, identical = [], 0
    for i in range(60):
        query = vectors[rng.integers(0, n)] + 0.3 * rng.normal(size=dim).astype(np.float32)
        got = index.top_k(query, 20, feedback=feedback)
        # the exact search: every row ranked on its float32 vector
        want = rank(query, ids, vectors, 20, feedback=feedback)
        shares.append(agreement(got, want))
        identical += got == want
        exact = dict(want)
        assert all(score == exact[key] for key, score in got if key in exact)
        if i < 5 and feedback == 0:  # and the exact ranking is brute force's
            assert [k for k, _ in want] == [k for k, _ in brute_force(
                dict(zip(ids.tolist(), vectors, strict=True)), query, 20)]
    assert np.mean(shares) >= 0.98 and identical >= 55, (np.mean(shares), identical)
    assert index.index.nbytes < n * dim * 4 / 3.5  # int8 + a scale a row, not float32


def test_the_compact_matrix_ranks_real_hash_vectors_like_exact_float32() -> None:
    # hash vectors of real sentences: sparse, and full of exact ties
    words = Path(__file__).resolve().parents[2].joinpath("README.md").read_text().split()
    texts = [" ".join(words[i : i + 12]) for i in range(0, len(words) - 12, 3)][:3000]
    embedder = HashEmbedder()
    vectors = embedder.embed_documents(texts)
    ids = np.arange(len(texts), dtype=np.int64)
    index = ExactVectors(embedder.dim)
    index.upsert(list(ids), vectors)
    rng = np.random.default_rng(5)
    shares = []
    for _ in range(60):
        start = int(rng.integers(0, len(words) - 4))
        query = embedder.embed_query(" ".join(words[start : start + 4]))
        for feedback in (0, 3):
            got = index.top_k(query, 20, feedback=feedback, ties=True)
            want = rank(query, ids, vectors, 20, feedback=feedback, ties=True)
            shares.append(agreement(got, want))
            assert got == want or feedback == 3, (got, want)
    assert np.mean(shares) >= 0.98, np.mean(shares)


def test_equal_vectors_beyond_the_candidates_tie_whole_and_smallest_ids_first() -> None:
    rng = np.random.default_rng(3)
    index = ExactVectors(16)
    others = normalise(rng.normal(size=(2000, 16)).astype(np.float32))
    index.upsert(list(range(2000)), others)
    copy = unit(*range(1, 17))
    copies = list(range(5000, 5000 + 700, 7))[::-1]  # 100 copies, upserted largest id first
    index.upsert(copies, np.tile(copy, (len(copies), 1)))
    query = (copy + 0.01 * unit(*([1, -1] * 8))).astype(np.float32)
    tied = index.top_k(query, 10, ties=True)
    assert sorted(i for i, _ in tied) == sorted(copies)  # every copy: all tie with the 10th
    assert len({s for _, s in tied}) == 1
    assert [i for i, _ in index.top_k(query, 10)] == sorted(copies)[:10]
    assert [i for i, _ in index.top_k(query, 10, feedback=3)] == sorted(copies)[:10]


def test_removed_ids_never_come_back_and_a_re_upserted_id_ranks_by_its_new_vector() -> None:
    rng = np.random.default_rng(9)
    dim = 32
    index = ExactVectors(dim)
    vectors = normalise(rng.normal(size=(3000, dim)).astype(np.float32))
    index.upsert(list(range(3000)), vectors, [i % 30 for i in range(3000)])
    target = vectors[17]
    index.remove([17, 18, 2999])  # the exact vectors stay readable, as in a database
    got = index.top_k(target, 50)
    assert {17, 18, 2999}.isdisjoint(i for i, _ in got)
    assert 17 not in index and len(index) == 2997
    # far from the query first, then moved next to it: found by its new vector
    index.upsert([17], -target[None, :], [4])
    assert 17 not in dict(index.top_k(target, 100))
    index.upsert([17], target[None, :], [4])
    [(best, cosine)] = index.top_k(target, 1)
    assert best == 17 and cosine == pytest.approx(1.0, abs=1e-6)
    # its group moved with it; removing the group takes it and nothing else
    assert [i for i, _ in index.top_k(target, 1, mask=index.mask(np.array([4])))] == [17]
    index.index.remove_groups([4])
    assert 17 not in index and 4 not in index and 34 not in index and 5 in index
    assert len(index) == 2997 - 100 + 1 - 1


@pytest.mark.parametrize("share", [0.005, 0.5])  # gathered alone / masked in a full scan
def test_a_mask_keeps_the_exact_ranking_of_its_rows(share: float) -> None:
    rng = np.random.default_rng(21)
    n, dim = 4000, 64
    vectors = clustered(rng, n, dim)
    groups = rng.integers(0, 1000, n)
    index = ExactVectors(dim)
    index.upsert(list(range(n)), vectors, list(groups))
    allowed = np.flatnonzero(rng.random(1000) < share)
    mask = index.mask(allowed)
    rows = np.flatnonzero(np.isin(groups, allowed))
    for _ in range(10):
        query = rng.normal(size=dim).astype(np.float32)
        got = index.top_k(query, 15, mask=mask)
        assert got == rank(query, rows.astype(np.int64), vectors[rows], 15)


@pytest.fixture(scope="module")
def model_vectors() -> tuple[OnnxEmbedder, list[str], np.ndarray]:
    """Passages of this project's README embedded once with the bundled model."""
    repo = Path(__file__).resolve().parents[2]
    words = repo.joinpath("README.md").read_text().split()
    passages = [" ".join(words[i : i + 20]) for i in range(0, len(words) - 20, 9)][:160]
    embedder = OnnxEmbedder(locate_model())
    return embedder, passages, embedder.embed_documents(passages)


@pytest.mark.parametrize("feedback", [0, 3])
def test_the_compact_matrix_ranks_the_models_vectors_like_exact_float32(
    model_vectors: tuple[OnnxEmbedder, list[str], np.ndarray], feedback: int,
) -> None:
    embedder, passages, vectors = model_vectors
    ids = np.arange(len(passages), dtype=np.int64)
    index = ExactVectors(embedder.dim)
    index.upsert(list(ids), vectors)
    words = Path(__file__).resolve().parents[2].joinpath("docs", "CONTRACT.md").read_text()
    questions = [" ".join(words.split()[i : i + 6]) for i in range(0, 2400, 60)]
    shares, scan = [], []
    for question in questions:
        query = embedder.embed_query(question)
        # a pool of 20: the candidates are a third of the rows, not all of them (42 or 52 of 160)
        got = index.top_k(query, 10, feedback=feedback, pool=20)
        want = rank(query, ids, vectors, 10, feedback=feedback, pool=20)
        shares.append(agreement(got, want))
        if feedback == 0:  # the int8 scan alone, before the exact ranking, nearly agrees
            best = index.index.candidates(query, 10)[:10]
            scan.append(agreement([(int(i), 0.0) for i in best], want))
    assert len(questions) == 40 and np.mean(shares) >= 0.98, np.mean(shares)
    assert feedback or np.mean(scan) >= 0.95, np.mean(scan)


def test_a_search_reads_back_only_the_candidates_that_can_reach_its_answer(
    model_vectors: tuple[OnnxEmbedder, list[str], np.ndarray],
) -> None:
    # The candidates of a search with feedback are 250 rows; those ranked first as the
    # matrix holds them, with a margin, are read back, and the answer is the same. The
    # model's vectors of 160 passages, each with 11 near copies (edited chunks, or the
    # same paragraph in several notes: rows whose cosines lie close together)
    embedder, _, model = model_vectors
    rng = np.random.default_rng(8)
    near = model[:, None, :] + rng.normal(scale=0.02, size=(len(model), 11, model.shape[1]))
    vectors = normalise(np.concatenate([model, near.reshape(-1, model.shape[1])]
                                       ).astype(np.float32))
    ids = np.arange(len(vectors), dtype=np.int64) * 3 + 5
    index = VectorIndex(embedder.dim)
    index.upsert(ids, vectors, ids % 17)
    exact = dict(zip(ids.tolist(), vectors, strict=True))
    words = Path(__file__).resolve().parents[2].joinpath("README.md").read_text().split()
    questions = [" ".join(words[i : i + 6]) for i in range(0, 6000, 150)]
    # (lists equal, rows the two lists share)
    lists = {(depth, feedback): [0, 0] for depth in (10, 100) for feedback in (0, 3)}
    read, offered = [], []
    for question in questions:
        query = embedder.embed_query(question)
        for depth, feedback in lists:
            candidates = index.candidates(query, depth, feedback=feedback)
            few = index.to_read(query, depth, feedback=feedback)
            assert np.array_equal(few, np.unique(few)) and set(few) <= set(candidates)
            got = rank(query, few, np.stack([exact[int(i)] for i in few]), depth,
                       feedback=feedback, ties=True)
            want = rank(query, candidates, np.stack([exact[int(i)] for i in candidates]),
                        depth, feedback=feedback, ties=True)
            assert got[:10] == want[:10], (question, depth, feedback)
            lists[depth, feedback][0] += got == want
            lists[depth, feedback][1] += len({i for i, _ in got} & {i for i, _ in want})
            if depth == 10 and feedback:
                read.append(len(few))
                offered.append(len(candidates))
    assert len(questions) == 40
    # without feedback every candidate can reach the answer: each is read, as before
    assert lists[10, 0][0] == lists[100, 0][0] == 40
    # with it, the first pool of 200 is the matrix's: a row at its edge, where compact
    # and exact cosines order rows differently, can change the tail of a list 100 deep
    # (a hybrid search's semantic branch): its top 10 never, its rows hardly
    assert lists[10, 3][0] == 40 and lists[100, 3][1] >= 0.98 * 40 * 100, lists
    assert offered == [250] * 40 and max(read) <= 80, read


def test_rows_tied_exactly_are_read_back_together() -> None:
    # 300 copies of one vector tie at the answer's edge: every copy is read back, so
    # that the caller can order them by a key of its own (their files' paths)
    rng = np.random.default_rng(5)
    dim = 48
    others = normalise(rng.normal(size=(2000, dim)).astype(np.float32))
    query = normalise(rng.normal(size=(1, dim)).astype(np.float32))[0]
    copy = normalise((query + 0.8 * others[0])[None, :])[0]
    vectors = np.concatenate([others, np.repeat(copy[None, :], 300, axis=0)])
    ids = np.arange(len(vectors), dtype=np.int64)
    index = VectorIndex(dim)
    index.upsert(ids, vectors, ids // 10)
    for feedback in (0, 3):
        few = index.to_read(query, 10, feedback=feedback)
        assert set(range(2000, 2300)) <= set(few.tolist())
        got = rank(query, few, vectors[few], 10, feedback=feedback, ties=True)
        want = rank(query, ids, vectors, 10, feedback=feedback, ties=True)
        assert got == want and len(got) >= 300


def test_a_load_appended_in_blocks_then_sealed_holds_what_upserts_hold() -> None:
    rng = np.random.default_rng(31)
    n, dim = 3000, 32
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    ids = rng.permutation(np.arange(10, 10 + 7 * n, 7)).astype(np.int64)  # in no order
    groups = ids % 13
    loaded, upserted = VectorIndex(dim, capacity=64), VectorIndex(dim)
    for at in range(0, n, 500):  # blocks, as a load hands them over
        part = slice(at, at + 500)
        loaded.append(ids[part], vectors[part], groups[part])
        upserted.upsert(ids[part], vectors[part], groups[part])
    again = ids[:3]  # appended twice: the last vector wins, as with upsert
    moved = -vectors[:3]
    loaded.append(again, moved, groups[:3])
    upserted.upsert(again, moved, groups[:3])
    loaded.seal()
    assert len(loaded) == len(upserted) == n
    assert sorted(loaded.ids().tolist()) == sorted(ids.tolist())
    for query in rng.normal(size=(10, dim)).astype(np.float32):
        assert np.array_equal(loaded.candidates(query, 20), upserted.candidates(query, 20))
        mask = np.asarray([3, 7])
        assert np.array_equal(loaded.candidates(query, 20, mask=loaded.mask(mask)),
                              upserted.candidates(query, 20, mask=upserted.mask(mask)))
    # once sealed, changes find their rows
    loaded.remove(ids[:10])
    loaded.upsert(ids[5:6], vectors[5:6], groups[5:6])
    assert len(loaded) == n - 9 and int(ids[5]) in loaded and int(ids[4]) not in loaded


def test_rows_tied_at_the_cut_are_taken_by_their_files_order_not_their_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The same 400 chunks (of 100 files, by path) in two matrices whose row and file ids
    # differ, as two indexes of the same files built in another order do: where only some
    # rows tied at the cut are kept, and for a zero query, the same chunks are taken.
    rng = np.random.default_rng(11)
    dim, files, per_file = 16, 100, 4
    chunks = [(f"note-{f:03}.md", c) for f in range(files) for c in range(per_file)]
    vectors = np.zeros((len(chunks), dim), dtype=np.float32)
    vectors[:3] = normalise(rng.normal(size=(3, dim)).astype(np.float32))  # three near ones
    vectors[3:, 0] = 1.0  # the rest alike: one score for all at the cut
    query = vectors[:3].sum(axis=0)
    query[0] = 0.0
    monkeypatch.setattr(vectors_module, "_TIED", 8)  # (a few tied rows kept past the cut)
    chosen = []
    for seed in (1, 2):
        # files written in another order (a file's chunks in theirs, as the writer does)
        order = [f * per_file + c for f in np.random.default_rng(seed).permutation(files)
                 for c in range(per_file)]
        file_ids = np.random.default_rng(seed + 10).permutation(files) + 1000 * seed
        index = VectorIndex(dim)
        ids = np.arange(len(chunks), dtype=np.int64) * 7 + seed  # (ids by insertion)
        by_id = {}
        for row, at in zip(ids, order, strict=True):
            path, chunk = chunks[at]
            file_id = int(file_ids[int(path[5:8])])
            index.upsert([int(row)], vectors[at][None, :], [file_id])
            by_id[int(row)] = (path, chunk)
        places = {int(file_ids[f]): f for f in range(files)}  # (by path)
        ranks = group_ranks(places)
        tied = index.candidates(query, 5, ranks=ranks)  # 5 + 32 rows, and 8 tied more
        zero = index.candidates(np.zeros(dim, dtype=np.float32), 6, ranks=ranks)
        chosen.append(({by_id[int(i)] for i in tied}, {by_id[int(i)] for i in zero}))
    assert chosen[0] == chosen[1]
    assert len(chosen[0][0]) > 5 + 32 + 8  # (a file's rows all kept: more than asked)
    assert chosen[0][1] == set(chunks[:6])  # a zero query: the first files' first chunks


def test_the_sampled_selection_picks_what_looking_at_every_score_picks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 40,000 rows of 2,000 distinct vectors: groups of equal scores everywhere, at the
    # cut too. The selection estimates its cut on a sample and looks only at the scores
    # above it; looking at every score (a sample too small to estimate on) picks alike.
    rng = np.random.default_rng(5)
    dim, n = 16, 40_000
    distinct = normalise(rng.normal(size=(2_000, dim)).astype(np.float32))
    index = VectorIndex(dim)
    index.upsert(rng.permutation(n * 3)[:n] + 1, distinct[rng.integers(0, 2_000, n)],
                 rng.integers(0, 300, n))
    queries = [distinct[0], distinct[1] + distinct[2],
               *normalise(rng.normal(size=(4, dim)).astype(np.float32))]
    asked = [(q, k, feedback) for q in queries for k, feedback in ((5, 0), (10, 3), (100, 3))]
    groups = ("some files", np.arange(0, 300, 2, dtype=np.int64))
    sampled = [(index.candidates(q, k, feedback=fb), index.candidates(q, k, groups=groups))
               for q, k, fb in asked]
    monkeypatch.setattr(selection, "_STRIDE", 10 * n)
    for (q, k, fb), (alone, filtered) in zip(asked, sampled, strict=True):
        assert len(alone) > k
        assert np.array_equal(alone, index.candidates(q, k, feedback=fb))
        assert np.array_equal(filtered, index.candidates(q, k, mask=index.mask(groups[1])))


def test_a_change_waits_for_the_search_reading_the_matrix() -> None:
    # A search reads the matrix in a worker thread while the event loop goes on: a change
    # arriving meanwhile waits until the search is done, which sees the matrix whole.
    index = VectorIndex(2)
    index.upsert([1, 2, 3], np.stack([unit(1, 0), unit(0, 1), unit(1, 1)]), [10, 20, 30])
    entered, release = threading.Event(), threading.Event()

    def ranks(groups: np.ndarray) -> np.ndarray:  # (a zero query asks for the files' order)
        entered.set()
        assert release.wait(10)
        return groups

    found: list[np.ndarray] = []
    search = threading.Thread(target=lambda: found.append(
        index.candidates(np.zeros(2, dtype=np.float32), 3, ranks=ranks)))
    search.start()
    assert entered.wait(10)
    change = threading.Thread(target=lambda: index.remove([1, 2]))
    change.start()
    change.join(0.2)
    assert change.is_alive() and len(index) == 3  # waiting for the search
    release.set()
    search.join(10)
    change.join(10)
    assert list(found[0]) == [1, 2, 3] and len(index) == 1


def _resident_bytes() -> int:
    import os

    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="Linux's /proc")
def test_a_matrixs_pages_are_faulted_in_before_a_load_writes_them_and_its_rows_stay() -> None:
    rng = np.random.default_rng(3)
    matrix = VectorIndex(384, capacity=200_000)  # (77 MB of codes, none touched yet)
    ids = np.arange(1, 1001, dtype=np.int64)
    matrix.append(ids, rng.normal(size=(1000, 384)).astype(np.float32), ids % 7)
    matrix.seal()
    query = rng.normal(size=384).astype(np.float32)
    before, resident = matrix.candidates(query, 50), _resident_bytes()
    assert matrix.populate(150_000)
    faulted = _resident_bytes() - resident
    assert faulted >= 0.9 * 149_000 * 384  # (the pages the first 150,000 rows' codes fill)
    assert faulted < 200_000 * 384  # (not the spare rows beyond them)
    assert np.array_equal(matrix.candidates(query, 50), before)
