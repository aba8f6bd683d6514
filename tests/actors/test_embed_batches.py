"""How the embedder groups a length-sorted window into model batches."""

from __future__ import annotations

from rifflux.actors.embedder import batches
from rifflux.store.common import PendingText


def _texts(*lengths: int) -> list[PendingText]:
    return [PendingText(content_hash=f"h{i}", text="x" * n) for i, n in enumerate(lengths)]


def test_short_texts_fill_batches_by_count() -> None:
    got = batches(_texts(*[100] * 70), size=32, chars=8192)
    assert [len(b) for b in got] == [32, 32, 6]


def test_long_texts_fill_batches_by_characters() -> None:
    # each text counts up to 1,024 characters: 8 long texts per 8,192
    got = batches(_texts(*[5000] * 20), size=32, chars=8192)
    assert [len(b) for b in got] == [8, 8, 4]


def test_every_text_is_kept_once_in_order_and_a_huge_one_still_gets_a_batch() -> None:
    items = _texts(10, 300, 900, 20000, 20000)
    got = batches(items, size=3, chars=1000)
    assert [p for b in got for p in b] == items
    assert all(b for b in got)
    assert [len(b) for b in got] == [2, 1, 1, 1]
