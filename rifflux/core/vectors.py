"""The in-memory vector matrix: one contiguous float32 array, updated in place.

Rows are chunk row ids; vectors are stored L2-normalised so cosine similarity
is one matrix-vector product. Removal swaps the last row into the hole, so the
live rows stay contiguous and scoring never loops over rows in Python.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
#: How far apart BLAS can put the float32 cosines of two equal vectors (a few ulps).
_ROUNDING = 1e-5


def normalise(vectors: F32) -> F32:
    """Rows scaled to unit length; a zero row stays zero (its cosine is 0.0)."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    out: F32 = (vectors / norms).astype(np.float32, copy=False)
    return out


class VectorIndex:
    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._matrix: F32 = np.zeros((max(capacity, 16), dim), dtype=np.float32)
        self._ids: npt.NDArray[np.int64] = np.zeros(max(capacity, 16), dtype=np.int64)
        #: Each row's group (the chunk's file), so that a search can be limited to files.
        self._groups: npt.NDArray[np.int64] = np.zeros(max(capacity, 16), dtype=np.int64)
        self._pos: dict[int, int] = {}
        #: Bumped by every change, so that a cached row mask knows when it is stale.
        self.version = 0

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, key: int) -> bool:
        return key in self._pos

    @property
    def nbytes(self) -> int:
        return int(self._matrix.nbytes + self._ids.nbytes)

    def _grow(self, needed: int) -> None:
        cap = self._matrix.shape[0]
        if needed <= cap:
            return
        new_cap = max(needed, cap * 2)
        matrix = np.zeros((new_cap, self.dim), dtype=np.float32)
        matrix[:cap] = self._matrix
        ids = np.zeros(new_cap, dtype=np.int64)
        ids[:cap] = self._ids
        groups = np.zeros(new_cap, dtype=np.int64)
        groups[:cap] = self._groups
        self._matrix, self._ids, self._groups = matrix, ids, groups

    def upsert(self, ids: Sequence[int], vectors: F32,
               groups: Sequence[int] | None = None) -> None:
        if len(ids) == 0:
            return
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected {(len(ids), self.dim)} vectors, got {vectors.shape}")
        if groups is not None and len(groups) != len(ids):
            raise ValueError(f"expected {len(ids)} groups, got {len(groups)}")
        vectors = normalise(np.asarray(vectors, dtype=np.float32))
        self._grow(len(self._pos) + len(ids))
        self.version += 1
        for i, (key, vec) in enumerate(zip(ids, vectors, strict=True)):
            row = self._pos.get(int(key))
            if row is None:
                row = len(self._pos)
                self._pos[int(key)] = row
                self._ids[row] = key
            self._matrix[row] = vec
            self._groups[row] = groups[i] if groups is not None else 0

    def remove(self, ids: Iterable[int]) -> None:
        self.version += 1
        for key in ids:
            row = self._pos.pop(int(key), None)
            if row is None:
                continue
            last = len(self._pos)  # index of the last live row after the pop
            if row != last:
                moved = int(self._ids[last])
                self._matrix[row] = self._matrix[last]
                self._ids[row] = moved
                self._groups[row] = self._groups[last]
                self._pos[moved] = row

    def remove_groups(self, groups: Sequence[int]) -> None:
        """Remove every row of these groups (files)."""
        hit = self.mask(np.asarray(groups, dtype=np.int64))
        if hit.any():
            self.remove([int(i) for i in self._ids[: len(self._pos)][hit]])

    def clear(self) -> None:
        self._pos.clear()
        self.version += 1

    def mask(self, groups: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Which rows belong to ``groups`` (valid until ``version`` changes)."""
        mask: npt.NDArray[np.bool_] = np.isin(self._groups[: len(self._pos)], groups)
        return mask

    def top_k(
        self, query: F32, k: int, *, feedback: int = 0, weight: float = 1.0, pool: int = 200,
        mask: npt.NDArray[np.bool_] | None = None, ties: bool = False,
    ) -> list[tuple[int, float]]:
        """(id, cosine) of the ``k`` rows most similar to ``query``, best first; equal
        cosines by smaller id. With ``ties``, every row whose cosine equals the ``k``-th
        is returned too (more than ``k`` then), so that the caller can order equal
        cosines by a key of its own and then cut (row ids differ between two indexes of
        the same files); a zero query, whose every cosine is 0.0, returns ``k`` rows.

        With ``mask`` (from :meth:`mask`), only those rows are candidates: the filter
        applies before the top ``k`` are taken, and feedback looks at them only.

        With ``feedback`` > 0 (pseudo-relevance feedback, Rocchio style), the query
        moves towards the mean of its ``feedback`` best rows (``q + weight * mean``,
        renormalised) and the best ``max(pool, k)`` rows of the first pass are scored
        again against it; the cosines returned are those against the moved query.
        """
        n = len(self._pos)
        if mask is not None and len(mask) != n:
            raise ValueError(f"the mask has {len(mask)} rows, the matrix {n}: make it again")
        live = n if mask is None else int(np.count_nonzero(mask))
        if live == 0 or k < 1:
            return []
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if norm == 0.0 or not np.isfinite(norm):
            scores = np.zeros(n, dtype=np.float32)
            feedback = 0  # nothing to move: every cosine is 0.0
        else:
            q = q / norm
            scores = self._matrix[:n] @ q
        if mask is not None:
            scores = np.where(mask, scores, np.float32(-np.inf))
        ties = ties and norm != 0.0
        if feedback > 0:
            cand = self._best(scores, min(live, max(pool, k)), q, ties)
            centroid = self._matrix[cand[:feedback]].mean(axis=0)
            moved = q + weight * centroid
            moved /= max(float(np.linalg.norm(moved)), 1e-12)
            rescored = self._exact(cand, moved)
            order = np.lexsort((self._ids[cand], -rescored))
            order = order[: _with_ties(rescored[order], k) if ties else k]
            return [(int(self._ids[cand[i]]), float(rescored[i])) for i in order]
        best = self._best(scores, min(k, live), q if norm else None, ties)
        return [(int(self._ids[i]), float(scores[i])) for i in best]

    def _exact(self, rows: npt.NDArray[np.intp], q: F32) -> F32:
        """The cosines of these rows, computed the same way for every row (BLAS sums
        rows by different paths, so two equal vectors can differ in the last bit)."""
        exact = (self._matrix[rows].astype(np.float64) * q.astype(np.float64)).sum(axis=1)
        out: F32 = exact.astype(np.float32)
        return out

    def _best(self, scores: F32, k: int, q: F32 | None = None,
              ties: bool = False) -> npt.NDArray[np.intp]:
        """Row positions of the ``k`` best scores, best first, ties by smaller id (with
        ``ties``, every row tied with the ``k``-th too). With ``q``, the candidates'
        scores are computed again exactly (in place in ``scores``), so equal vectors tie
        exactly."""
        n = len(scores)
        if k < n:
            part = np.argpartition(-scores, k - 1)[:k]
            # Rows tied with the k-th score (or within BLAS's rounding of it) are all
            # candidates, so which of them make the cut does not depend on
            # argpartition's internal order, nor on where BLAS summed them.
            kth = scores[part].min()
            part = np.flatnonzero(scores >= kth - _ROUNDING)
        else:
            part = np.arange(n)
        if q is not None:
            live = part[np.isfinite(scores[part])]
            scores[live] = self._exact(live, q)
        # deterministic order: higher score first, then smaller id
        order = np.lexsort((self._ids[part], -scores[part]))
        ranked = part[order]
        best: npt.NDArray[np.intp] = ranked[: _with_ties(scores[ranked], k) if ties else k]
        return best


def _with_ties(ordered: F32, k: int) -> int:
    """How many of the scores ``ordered`` (best first) to keep so that the ``k``-th and
    every score equal to it are kept."""
    if len(ordered) <= k:
        return len(ordered)
    return k + int(np.count_nonzero(ordered[k:] == ordered[k - 1]))
