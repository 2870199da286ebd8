"""The trend of a metric over the last releases: the least-squares slope per release, with its CI.

The slope of the per-release means over release index 0..k-1 is a fixed linear combination of those means,
``sum_j w_j mean_j`` with ``w_j = (j - jbar) / sum (j - jbar)^2``, so it is the mean over queries of each
query's own slope ``s_q = sum_j w_j x_qj``. Its uncertainty is therefore the paired bootstrap of the mean of
``s_q`` over queries (the releases share their queries: the same dataset sha256), the same bootstrap,
sign-flip test and MDE every other gate here reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from ..scoring.stats import Comparison

MIN_RELEASES = 3  # two points always fit a line exactly: a trend needs three


@dataclass(frozen=True)
class Trend:
    comparison: Comparison  # ci.delta is the slope per release
    n_releases: int
    means: tuple[float, ...]  # the metric's mean per release on the common queries, oldest first


def slopes(matrix: np.ndarray) -> np.ndarray:
    """Per-row least-squares slope of ``matrix`` (queries x releases) over column index."""
    import numpy as np

    k = matrix.shape[1]
    j = np.arange(k, dtype=np.float64)
    w = (j - j.mean()) / float(((j - j.mean()) ** 2).sum())
    return np.asarray(matrix @ w, dtype=np.float64)


def trend(series: Sequence[Mapping[str, float]]) -> Trend:
    """``series``: per-query scores of one metric per release, oldest first (the candidate last), on the queries
    every release scored. Raises ValueError with fewer than :data:`MIN_RELEASES` or no common query."""
    import numpy as np

    from ..scoring.stats import compare

    if len(series) < MIN_RELEASES:
        raise ValueError(f"a trend needs {MIN_RELEASES} releases, got {len(series)}")
    common = sorted(set.intersection(*(set(s) for s in series)))
    if not common:
        raise ValueError("the releases share no scored query")
    matrix = np.array([[s[q] for s in series] for q in common], dtype=np.float64)
    per_query = slopes(matrix)[:, None]
    (comparison,) = compare(per_query, np.zeros_like(per_query))
    return Trend(comparison, len(series), tuple(float(x) for x in matrix.mean(axis=0)))
