"""A search's hits with each text once: copies of one text (the same paragraph in several
notes) collapse into the best-ranked one, which names the others (``also_in``), within
the search's filters."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.catalog import Allowed
    from ..store.copies import Place
    from ..store.protocols import CopyStore
    from ..types import ScoreBreakdown


async def distinct(copies: CopyStore, ranked: list[tuple[int, ScoreBreakdown]],
                   allowed: Allowed | None, limit: int | None,
                   known: dict[int, tuple[str, int]],
                   ) -> tuple[list[tuple[int, ScoreBreakdown]], dict[int, list[Place]]]:
    """``ranked`` with each text once, at its best-ranked chunk (copies of one text
    score alike in both branches: of equal ones, the first in the branches' stable
    order), the first ``limit`` of them (None: all); and for each kept chunk whose
    text other chunks hold, those places within the filters (``allowed``). The text
    keys ``known`` already (read with the lexical leg's rows) are not asked again."""
    texts = dict(known)
    kept: list[tuple[int, ScoreBreakdown]] = []
    seen: set[str] = set()
    shared: dict[int, str] = {}
    step = max(2 * (limit or len(ranked)), 20)  # (the texts of a few more than kept)
    asked = 0  # (the texts of ranked[:asked] are read: a chunk gone has none)
    for i, (cid, breakdown) in enumerate(ranked):
        if i >= asked and cid not in texts:
            asked = i + step
            texts.update(await copies.texts(
                [c for c, _ in ranked[i:asked] if c not in texts]))
        text = texts.get(cid)
        if text is not None:  # (else deleted since it was ranked: its row is not read)
            key, count = text
            if key in seen:
                continue
            seen.add(key)
            if count > 1:
                shared[cid] = key
        kept.append((cid, breakdown))
        if limit is not None and len(kept) == limit:
            break
    if not shared:
        return kept, {}
    places = await copies.places(set(shared.values()))
    also = {cid: [p for p in places.get(key, []) if p.rowid != cid
                  and (allowed is None or p.file_id in allowed.ids)]
            for cid, key in shared.items()}
    return kept, {cid: found for cid, found in also.items() if found}
