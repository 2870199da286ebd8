"""The fidelity sample's size and the shares' intervals, against independent computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalsuite.audit.diagnosis import wilson
from evalsuite.audit.scan import sample_rows, sample_size


@pytest.mark.parametrize(("share", "count"), [(0.01, 10**6), (0.05, 10**6), (0.001, 10**7), (0.2, 10**4)])
def test_the_sample_is_the_smallest_that_catches_the_share_with_probability_099(share: float, count: int) -> None:
    n = sample_size(share, 0.99, count)
    miss = lambda k: (1 - share) ** k  # noqa: E731  all k draws miss a share of bad rows (with replacement)
    assert miss(n) <= 0.01 < miss(n - 1)
    assert sample_size(0.01, 0.99, 10**6) == 459


def test_the_sample_is_every_row_of_a_small_index_and_seeded() -> None:
    assert sample_size(0.01, 0.99, 160) == 160
    a, b = sample_rows(10**6, 459, 3), sample_rows(10**6, 459, 3)
    assert np.array_equal(a, b) and len(set(a.tolist())) == 459 and (np.diff(a) > 0).all()
    assert not np.array_equal(a, sample_rows(10**6, 459, 4))


def test_a_bad_share_is_found_as_often_as_stated() -> None:
    # simulate: 1% of 100k rows bad; a seeded sample of 459 finds one in >= 99% of seeds
    count, bad = 100_000, set(range(0, 100_000, 100))
    n = sample_size(0.01, 0.99, count)
    found = sum(bool(set(sample_rows(count, n, seed).tolist()) & bad) for seed in range(300))
    assert found >= 294  # 0.99 * 300 - slack of 3 (binomial sd ~1.7)


@pytest.mark.parametrize(("k", "n"), [(16, 160), (41, 500), (0, 90), (90, 90), (1, 3)])
def test_wilson_interval(k: int, n: int) -> None:
    z = 1.959963984540054
    p = k / n
    # the interval is where the score test accepts p0: |p - p0| <= z * sqrt(p0 (1 - p0) / n)
    lo, hi = wilson(k, n)
    for p0, inside in ((lo + 1e-6, True), (hi - 1e-6, True), (lo - 1e-3, False), (hi + 1e-3, False)):
        if 0 < p0 < 1:
            assert (abs(p - p0) <= z * math.sqrt(p0 * (1 - p0) / n)) is inside, (p0, lo, hi)
    assert lo <= p <= hi
