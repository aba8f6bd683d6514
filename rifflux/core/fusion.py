"""How a hybrid search's two ranked lists become one, as pure functions of them:
Reciprocal Rank Fusion (``rrf``: ranks alone) and the hybrid score (``combine``: each
branch's scores over its best; the order hybrid search follows, with each chunk's RRF
score beside it), and the question's language preferred (``prefer``)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

#: What share of its hybrid score a chunk in another language than the question's keeps
#: (``prefer``; the setting ``other_language_share``). Measured on the Obsidian help
#: vault's pages in English, German, Spanish, Italian, French and Portuguese (``python -m
#: benchmarks --sections quality``): see the README's "Languages".
OTHER_LANGUAGE = 0.5


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


@dataclass(frozen=True, slots=True)
class Combined(Generic[K]):
    key: K
    score: float  # the hybrid score the order follows (``combine``)
    rrf: float  # the Reciprocal Rank Fusion score of the same ranks (``rrf``)
    ranks: tuple[int | None, int | None]  # 1-based lexical and semantic ranks


def combine(lexical: Sequence[tuple[K, float]], semantic: Sequence[tuple[K, float]], *,
            depth: int, k: int = 60) -> list[Combined[K]]:
    """The hybrid ranking of a lexical list (key, bm25: lower is better, as FTS5 gives
    it) and a semantic list (key, cosine), each read ``depth`` deep: each branch's score
    over its best's, averaged, ``(bm25 / best bm25 + cosine / best cosine) / 2``.

    A branch whose list is noise for the query (a flat list: its scores close to its
    best, as the cosines of a query in a script the model was not trained on are) moves
    its chunks little against each other, so it cannot bury the other branch's clear
    winner, as Reciprocal Rank Fusion does (ranks count alike however close the scores;
    chunks in the middle of both lists outrank one branch's first).

    A chunk missing from a list that was read to its ``depth`` is counted at that list's
    last score (it may be just below it); missing from a shorter list (the branch found
    nothing more), at 0. A lexical list whose bm25 rises down the list (a query mixing
    CJK and other words ranks the chunks holding every word first) counts each chunk at
    the lowest score down to it, so that its order holds. Cosines below 0 count as 0.
    Ties: by the best rank in either list, then lexical first (as ``rrf``).
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    lex = _running_min([max(-score, 0.0) for _, score in lexical])
    sem = [max(score, 0.0) for _, score in semantic]
    lex_best, sem_best = (lex[0] if lex else 0.0), (sem[0] if sem else 0.0)
    lex_floor = lex[-1] if len(lex) >= depth else 0.0
    sem_floor = sem[-1] if len(sem) >= depth else 0.0
    lex_of = {key: (rank, lex[rank - 1]) for rank, (key, _) in enumerate(lexical, 1)}
    sem_of = {key: (rank, sem[rank - 1]) for rank, (key, _) in enumerate(semantic, 1)}
    # (each branch's score over its best, and the order ``_order`` gives, made inline: a
    # hybrid search fuses some 200 keys at each search; 1.4 -> 0.5 ms)
    keyed: list[tuple[tuple[float, int, int], Combined[K]]] = []
    for key in dict.fromkeys([key for key, _ in lexical] + [key for key, _ in semantic]):
        lr, ls = lex_of.get(key, (None, lex_floor))
        sr, ss = sem_of.get(key, (None, sem_floor))
        score = ((ls / lex_best if lex_best > 0.0 else 0.0)
                 + (ss / sem_best if sem_best > 0.0 else 0.0)) / 2
        if lr is None:
            fused = 0.0 if sr is None else 1.0 / (k + sr)
            best = (0, 0) if sr is None else (sr, 1)
        elif sr is None:
            fused, best = 1.0 / (k + lr), (lr, 0)
        else:
            fused = 1.0 / (k + lr) + 1.0 / (k + sr)
            best = (lr, 0) if lr <= sr else (sr, 1)
        keyed.append(((-score, *best), Combined(key, score, fused, (lr, sr))))
    keyed.sort(key=lambda kc: kc[0])
    return [c for _, c in keyed]


def prefer(fused: Sequence[Combined[K]], langs: Mapping[K, str], lang: str, *,
           factor: float = OTHER_LANGUAGE) -> list[Combined[K]]:
    """``fused`` (``combine``'s) with each chunk known to be in another language than
    ``lang`` at ``factor`` of its score, in the order of the scores so made; a chunk whose
    language is not known (``langs`` lacks it) keeps its score. A soft preference: a
    clear winner in another language still ranks above weak matches in ``lang``."""
    out = [c if langs.get(c.key, lang) == lang else replace(c, score=c.score * factor)
           for c in fused]
    out.sort(key=_order)
    return out


def _order(c: Combined[K]) -> tuple[float, int, int]:
    best = min(((r, li) for li, r in enumerate(c.ranks) if r is not None), default=(0, 0))
    return (-c.score, best[0], best[1])


def _running_min(scores: list[float]) -> list[float]:
    out: list[float] = []
    for score in scores:
        out.append(score if not out else min(out[-1], score))
    return out
