"""The exact ranking of candidate rows by cosine, with pseudo-relevance feedback.

``VectorIndex.candidates`` (``core.vectors``) or PostgreSQL's vector index picks the
rows; their float32 vectors are read back from the database and ranked here, the same
way for both stores, so that equal vectors tie exactly and two indexes of the same files
answer alike.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .codes import F32, normalise

I64 = npt.NDArray[np.int64]


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
        moved = q + weight * rows[order[:feedback]].mean(axis=0)
        moved /= max(float(np.linalg.norm(moved)), 1e-12)
        ids, rows = ids[order], rows[order]
        scores = _exact(rows, moved)
        order = np.lexsort((ids, -scores))
    order = order[: _with_ties(scores[order], k) if ties else k]
    return [(int(ids[i]), float(scores[i])) for i in order]


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
