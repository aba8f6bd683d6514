"""Reciprocal Rank Fusion: a pure function of ranked lists of ids."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Fused(Generic[K]):
    key: K
    score: float
    ranks: tuple[int | None, ...]  # 1-based rank in each input list, None when absent


def rrf(lists: Sequence[Sequence[K]], *, k: int = 60, limit: int | None = None) -> list[Fused[K]]:
    """Fuse ranked lists: score = sum over lists of 1 / (k + rank), ranks from 1.

    Ties on score are broken by the best (lowest) rank in any list, then by the
    position of the list that has it (earlier lists first), so the order is
    deterministic and independent of hash ordering and of the keys themselves (row
    ids): lists whose equal scores are in a stable order fuse in a stable order.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    ranks: dict[K, list[int | None]] = {}
    for li, ranked in enumerate(lists):
        for pos, key in enumerate(ranked, start=1):
            slot = ranks.setdefault(key, [None] * len(lists))
            if slot[li] is None:  # a duplicate id keeps its best rank
                slot[li] = pos
    fused = [
        Fused(key, sum(1.0 / (k + r) for r in rs if r is not None), tuple(rs))
        for key, rs in ranks.items()
    ]

    def order(f: Fused[K]) -> tuple[float, int, int]:
        best = min(
            ((r, li) for li, r in enumerate(f.ranks) if r is not None), default=(0, 0)
        )
        return (-f.score, best[0], best[1])

    fused.sort(key=order)
    return fused if limit is None else fused[:limit]
