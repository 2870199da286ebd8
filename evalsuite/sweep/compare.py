"""Each sweep cell against the base, with its uncertainty: per metric the delta with a paired bootstrap
CI, the sign-flip p-value, the minimum detectable effect, and the ranx test's p-value adjusted for the
false discovery rate across every cell and metric of the sweep (Benjamini-Hochberg): the ``*`` marks.

Pure over per-query scores; ``run_sweep`` calls :func:`compare_cells` once with every cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..stats import Comparison

CORRECTION = "Benjamini-Hochberg"


@dataclass(frozen=True)
class CellStats:
    """One metric of one cell against the base."""

    comparison: Comparison  # delta, 95% CI, sign-flip p, MDE
    p_value: float  # the sweep's ranx test, uncorrected
    q_value: float  # ``p_value`` adjusted across the sweep's cells and metrics (Benjamini-Hochberg)

    def significant(self, alpha: float) -> bool:
        return self.q_value < alpha

    def to_dict(self) -> dict[str, float]:
        c = self.comparison.ci
        return {
            "delta": c.delta,
            "ci_low": c.low,
            "ci_high": c.high,
            "confidence": c.confidence,
            "sign_flip_p": self.comparison.p_value,
            "mde": self.comparison.mde,
            "p_value": self.p_value,
            "q_value": self.q_value,
        }


def compare_cells(
    base: Mapping[str, Mapping[str, float]],
    cells: Mapping[str, Mapping[str, Mapping[str, float]]],
    p_values: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    *,
    same_as_base: Sequence[str] = (),
) -> dict[str, dict[str, CellStats]]:
    """``base`` and each cell: per-query scores ``{metric: {qid: score}}``; ``p_values``: the sweep's test per
    cell and metric. A cell whose contract equals the base is compared too (delta 0) but stays out of
    the correction's family (it is not a test)."""
    import numpy as np

    from ..stats import benjamini_hochberg, compare, paired_scores

    comparisons = {}
    for name, per_query in cells.items():
        _, a, b = paired_scores(per_query, base, list(metrics))
        comparisons[name] = dict(zip(metrics, compare(a, b), strict=True))
    family = [(n, m) for n in cells if n not in same_as_base for m in metrics]
    q = benjamini_hochberg([p_values[n][m] for n, m in family]) if family else np.zeros(0)
    q_of = {key: float(v) for key, v in zip(family, q, strict=True)}
    return {n: {m: CellStats(comparisons[n][m], p_values[n][m], q_of.get((n, m), 1.0)) for m in metrics} for n in cells}
