"""Who is charged what: the sequential rule (each stage against the one before it, in pipeline order) and the
Shapley rule (each stage's marginal effect averaged over every order of the declared stages). Pure numpy over
per-query scores ``(n_queries, n_metrics)``; the uncertainty of every charge is the project's paired statistics
(:func:`evalsuite.scoring.stats.compare`: bootstrap CI over queries, sign-flip p-value).

Both rules add up exactly to the total, query by query: the sequential charges telescope, and Shapley values
are efficient (they sum to v(all) - v(none) for every query), so the means do too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise

import numpy as np

from ..scoring.stats import Comparison, compare

MAX_SHAPLEY_STAGES = 8  # 2**8 subsets: each computed once, most collapse onto shared configurations
LOSS_EPS = 1e-12  # a query lost when its score fell by more than rounding


@dataclass(frozen=True)
class Charge:
    """One stage's charge on one metric: the mean per-query change with its paired CI and p-value, and the share
    of queries whose score fell."""

    comparison: Comparison
    lost_share: float

    @property
    def value(self) -> float:
        return self.comparison.ci.delta

    @property
    def low(self) -> float:
        return self.comparison.ci.low

    @property
    def high(self) -> float:
        return self.comparison.ci.high

    @property
    def p(self) -> float:
        return self.comparison.p_value

    @property
    def measurable(self) -> bool:
        """The 95% CI excludes zero."""
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, float]:
        return {
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "p": self.p,
            "mde": self.comparison.mde,
            "lost_share": self.lost_share,
        }


def charges(after: np.ndarray, before: np.ndarray, metrics: Sequence[str]) -> dict[str, Charge]:
    """``after - before`` per metric, paired over queries."""
    comparisons = compare(after, before)
    lost = (np.asarray(after) < np.asarray(before) - LOSS_EPS).mean(axis=0)
    return {m: Charge(c, float(lost[j])) for j, (m, c) in enumerate(zip(metrics, comparisons, strict=True))}


def sequential(chain: Sequence[np.ndarray], metrics: Sequence[str]) -> list[dict[str, Charge]]:
    """Each element of ``chain`` (the reference first, then the scores after each stage) against the one before."""
    return [charges(cur, prev, metrics) for prev, cur in pairwise(chain)]


def shapley_contributions(
    players: Sequence[str], value: Callable[[frozenset[str]], np.ndarray]
) -> dict[str, np.ndarray]:
    """Per-query Shapley values of each player: ``sum over S not holding i of |S|! (k-|S|-1)! / k! * (v(S+i) -
    v(S))``; ``value`` is called once per subset (memoized here)."""
    k = len(players)
    memo: dict[frozenset[str], np.ndarray] = {}

    def v(s: frozenset[str]) -> np.ndarray:
        if s not in memo:
            memo[s] = np.asarray(value(s), dtype=np.float64)
        return memo[s]

    out: dict[str, np.ndarray] = {}
    for p in players:
        others = [o for o in players if o != p]
        total = np.zeros_like(v(frozenset()))
        for r in range(k):
            weight = math.factorial(r) * math.factorial(k - r - 1) / math.factorial(k)
            for subset in combinations(others, r):
                s = frozenset(subset)
                total = total + weight * (v(s | {p}) - v(s))
        out[p] = total
    return out


def shapley(
    players: Sequence[str], value: Callable[[frozenset[str]], np.ndarray], metrics: Sequence[str]
) -> dict[str, dict[str, Charge]]:
    """Each player's Shapley charge per metric: the per-query contributions' mean with its CI against zero."""
    contributions = shapley_contributions(players, value)
    return {p: charges(phi, np.zeros_like(phi), metrics) for p, phi in contributions.items()}


def disagreements(
    seq: Mapping[str, Mapping[str, Charge]], shap: Mapping[str, Mapping[str, Charge]], metric: str
) -> list[str]:
    """Stages whose two charges on ``metric`` differ by more than the wider of their CIs' half-widths."""
    out = []
    for name, by_metric in seq.items():
        a, b = by_metric[metric], shap[name][metric]
        half = max(a.high - a.low, b.high - b.low) / 2
        if abs(a.value - b.value) > half:
            out.append(
                f"{name}: sequential {a.value:+.4f} (95% CI {a.low:+.4f} .. {a.high:+.4f}), Shapley {b.value:+.4f} "
                f"(95% CI {b.low:+.4f} .. {b.high:+.4f}): the stage interacts with the others, and the order decides "
                "its charge"
            )
    return out
