"""Ranking metrics over document ids, with graded relevance (pure functions).

``qrels`` maps a doc id to its grade; grade 0 is judged not relevant. nDCG uses
the grade itself as the gain (linear gain; log2(rank + 1) discount), the ideal
ranking being all judged documents by grade. MRR and recall count any grade
above 0 as relevant.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def dedupe_docs(ranked: Sequence[str]) -> list[str]:
    """Doc ids in order of their best (first) rank, each once."""
    return list(dict.fromkeys(ranked))


def ndcg_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    dcg = sum(qrels.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal_gains = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal_gains))
    return dcg / idcg if idcg > 0 else 0.0


def mrr_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if qrels.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def recall_at(ranked: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)
