"""The matrix's int8 scan split across cores gives every row the score one call gives it."""

from __future__ import annotations

import numpy as np
import pytest

from rifflux.core.int8_scan import dots, parts_for


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_a_scan_in_parts_scores_every_row_as_one_call_does(threads: int) -> None:
    rng = np.random.default_rng(3)
    n = 100_003  # (parts of unequal sizes)
    codes = rng.integers(-127, 128, size=(n, 384), dtype=np.int8)
    q8 = rng.integers(-127, 128, size=384, dtype=np.int8)
    want = (codes.astype(np.int64) @ q8.astype(np.int64)).astype(np.float32)
    out = np.full(n, np.nan, dtype=np.float32)  # (a row a part missed stays NaN)
    dots(q8, codes, out, threads=threads)
    assert parts_for(n, threads) == threads
    assert np.array_equal(out, want)


def test_few_rows_are_scanned_in_one_call() -> None:
    assert parts_for(5_000, 4) == 1
    assert parts_for(1_000_000, 1) == 1
    assert parts_for(1_000_000, 16) == 4
