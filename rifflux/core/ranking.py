"""The exact ranking of candidate rows by cosine, with pseudo-relevance feedback.

``VectorIndex.candidates`` (``core.vectors``) or PostgreSQL's vector index picks the
rows; their float32 vectors are read back from the database and ranked here, the same
way for both stores, so that equal vectors tie exactly and two indexes of the same files
answer alike.

``needed`` says which of the compact matrix's candidates ``rank`` needs read back: it
ranks them first as the matrix holds them (in memory), and only the rows that can reach
the answer, with a margin, are read. At a million chunks, reading all 250 candidates of a
search with feedback took 15-37 ms, more than a third of the scan (each a random read of
a 1.5 GB table, most of them from disk when the index is not in the page cache); the 40
to 70 rows needed take a fifth of that.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .codes import F32, normalise

I64 = npt.NDArray[np.int64]

#: Rows read exactly beyond those that rank first as the matrix holds them: its int8
#: quantisation moves a cosine by about 1e-3 (see ``core.vectors._MARGIN``, measured the
#: same way: with 32 more rows no top-10 or top-100 list of Cranfield's changed).
_MARGIN = 32


def rank(
    query: F32, ids: I64, vectors: F32, k: int, *, feedback: int = 0, weight: float = 1.0,
    pool: int = 200, ties: bool = False,
) -> list[tuple[int, float]]:
    """(id, cosine) of the ``k`` of these rows most similar to ``query``, best first;
    equal cosines by smaller id. Cosines are exact: computed in float64 the same way for
    every row (so equal vectors tie exactly) from the float32 ``vectors``. With ``ties``,
    every row whose cosine equals the ``k``-th is returned too (more than ``k`` then), so
    that the caller can order equal cosines by a key of its own and then cut (row ids
    differ between two indexes of the same files); a zero query, whose every cosine is
    0.0, returns ``k`` rows.

    With ``feedback`` > 0 (pseudo-relevance feedback, Rocchio style), the query moves
    towards the mean of its ``feedback`` best rows (``q + weight * mean``, renormalised)
    and the best ``max(pool, k)`` rows (with those tied with the last) are scored again
    against it; the cosines returned are those against the moved query.
    """
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    if len(ids) == 0 or k < 1:
        return []
    rows = normalise(np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1))
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm == 0.0 or not np.isfinite(norm):
        scores = np.zeros(len(ids), dtype=np.float32)
        feedback, ties = 0, False  # nothing to move, and every cosine is 0.0
    else:
        q = q / norm
        scores = _exact(rows, q)
    order = np.lexsort((ids, -scores))
    if feedback > 0:
        wanted = max(pool, k)
        order = order[: _with_ties(scores[order], wanted) if ties else wanted]
        moved = _moved(q, rows[order[:feedback]], weight)
        ids, rows = ids[order], rows[order]
        scores = _exact(rows, moved)
        order = np.lexsort((ids, -scores))
    order = order[: _with_ties(scores[order], k) if ties else k]
    return [(int(ids[i]), float(scores[i])) for i in order]


def _moved(q: F32, best: F32, weight: float) -> F32:
    """The unit query moved towards the mean of its best rows (feedback), renormalised."""
    moved: F32 = q + weight * best.mean(axis=0)
    moved /= max(float(np.linalg.norm(moved)), 1e-12)
    return moved


def _exact(rows: F32, q: F32) -> F32:
    """The cosines of these rows, computed the same way for every row (BLAS sums rows
    by different paths, so two equal vectors could differ in the last bit)."""
    exact = (rows.astype(np.float64) * q.astype(np.float64)).sum(axis=1)
    out: F32 = exact.astype(np.float32)
    return out


def _with_ties(ordered: F32, k: int) -> int:
    """How many of the scores ``ordered`` (best first) to keep so that the ``k``-th and
    every score equal to it are kept."""
    if len(ordered) <= k:
        return len(ordered)
    return k + int(np.count_nonzero(ordered[k:] == ordered[k - 1]))


def needed(query: F32, ids: I64, approximate: F32, k: int, *, feedback: int = 0,
           weight: float = 1.0, pool: int = 200) -> I64:
    """Which of these candidates ``rank(query, ..., k, feedback=, weight=, pool=,
    ties=True)`` needs the exact vectors of (ascending), from ``approximate``: their rows
    as the compact matrix holds them (``Rows.approximate``). Those that rank first with
    the same steps as ``rank`` takes, on these rows, with ``_MARGIN`` more (and every
    row tied with the last of them): the first ``feedback`` rows that move the query,
    and the first ``k`` against the moved query among the first ``pool``. Equal vectors
    have equal compact rows, so rows that tie exactly are taken together.

    The first ``pool`` (the rows feedback scores again) are thus the matrix's first, as
    its scan ranks them, where ``rank`` given every candidate cut them by exact cosine:
    a row at that edge, where the two orders differ, can enter or leave the tail of a
    list 100 deep (a hybrid search's semantic branch). On Cranfield with the model, the
    top 10 of every list were the same, and 99.4-99.9 % of the rows of lists 100 deep."""
    ids = np.asarray(ids, dtype=np.int64).reshape(-1)
    wanted = k + max(k // 4, _MARGIN)
    if len(ids) <= wanted + (feedback + _MARGIN if feedback > 0 else 0):
        return np.unique(ids)
    rows = normalise(np.asarray(approximate, dtype=np.float32).reshape(len(ids), -1))
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm == 0.0 or not np.isfinite(norm):
        return np.unique(ids)  # (every cosine is 0.0: ``rank`` takes the smallest ids)
    scores = _exact(rows, q / norm)
    order = np.lexsort((ids, -scores))
    if feedback <= 0:
        keep = order[: _with_ties(scores[order], wanted)]
    else:
        first = order[: _with_ties(scores[order], max(pool, k))]
        moved = _moved(q / norm, rows[order[:feedback]], weight)
        again = _exact(rows[first], moved)
        by = np.lexsort((ids[first], -again))
        keep = np.concatenate([order[: _with_ties(scores[order], feedback + _MARGIN)],
                               first[by[: _with_ties(again[by], wanted)]]])
    return np.unique(ids[keep])
