"""What the reranker brings: per metric, the reranked stage minus the first stage, with its uncertainty.

The interval, p-value and detectable effect come from :mod:`evalsuite.scoring.stats` (paired bootstrap over
queries, sign-flip test) when that module is present; without it the point delta is reported and the
interval is ``None`` (a gate then treats the gain as undecided rather than guessing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..scoring.stats import compare

PerQuery = Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class StageDelta:
    """One metric: first stage, reranked stage, their difference and (when available) its uncertainty."""

    metric: str
    first: float
    reranked: float
    delta: float
    n_queries: int
    low: float | None = None  # two-sided 95% bootstrap interval of the mean per-query difference
    high: float | None = None
    lower_bound: float | None = None  # one-sided 95% lower bound (non-inferiority / gain gates read this)
    p_value: float | None = None
    mde: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}

    def describe(self) -> str:
        ci = f" [95% CI {self.low:+.4f}, {self.high:+.4f}; p={self.p_value:.3g}]" if self.low is not None else ""
        return f"{self.metric}: {self.first:.4f} -> {self.reranked:.4f} ({self.delta:+.4f}){ci}"


def stage_deltas(first: PerQuery, reranked: PerQuery, metrics: Sequence[str], *, seed: int = 0) -> list[StageDelta]:
    """Reranked minus first stage, per metric, over the queries both stages scored."""
    qids = sorted(set.intersection(*(set(first[m]) & set(reranked[m]) for m in metrics))) if metrics else []
    a = np.array([[reranked[m][q] for m in metrics] for q in qids], dtype=np.float64).reshape(len(qids), len(metrics))
    b = np.array([[first[m][q] for m in metrics] for q in qids], dtype=np.float64).reshape(len(qids), len(metrics))
    comparisons = compare(a, b, seed=seed) if len(qids) >= 2 else None
    out = []
    for j, m in enumerate(metrics):
        f = float(b[:, j].mean()) if len(qids) else 0.0
        r = float(a[:, j].mean()) if len(qids) else 0.0
        extra: dict[str, float] = {}
        if comparisons is not None:
            c = comparisons[j]
            extra = {
                "low": c.ci.low,
                "high": c.ci.high,
                "lower_bound": c.ci.lower_bound,
                "p_value": c.p_value,
                "mde": c.mde,
            }
        out.append(StageDelta(m, f, r, r - f, len(qids), **extra))
    return out
