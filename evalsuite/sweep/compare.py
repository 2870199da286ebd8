"""Each sweep cell against the base, with its uncertainty: per metric the delta with a paired bootstrap
CI, the sign-flip p-value, the minimum detectable effect, and the ranx test's p-value adjusted for the
false discovery rate across every cell and metric of the sweep (Benjamini-Hochberg): the ``*`` marks.

Pure over per-query scores: ``run_sweep`` computes each cell's :func:`cell_statistics` (through the result cache
when it is on) and calls :func:`compare_cells` once with every cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..run.cache.results import Entry, ResultStore
    from ..scoring.stats import Comparison

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


def cell_statistics(
    base: Mapping[str, Mapping[str, float]],
    cell: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    *,
    test: str,
    alpha: float,
    same_as_base: bool = False,
    store: ResultStore | None = None,
) -> tuple[dict[str, float], dict[str, Comparison]]:
    """One cell against the base, per metric: the ranx test's p-value (1 for a cell equal to the base: it is
    not a test) and the paired comparison (delta with its bootstrap CI, sign-flip p, MDE). With ``store``,
    read back when the per-query scores and every setting are the same as when it was stored."""
    return cells_statistics(base, [cell], metrics, test=test, alpha=alpha, same_as_base=[same_as_base], store=store)[0]


def cells_statistics(
    base: Mapping[str, Mapping[str, float]],
    cells: Sequence[Mapping[str, Mapping[str, float]]],
    metrics: Sequence[str],
    *,
    test: str,
    alpha: float,
    same_as_base: Sequence[bool],
    store: ResultStore | None = None,
) -> list[tuple[dict[str, float], dict[str, Comparison]]]:
    """:func:`cell_statistics` of each cell (``same_as_base``: one flag per cell), the same numbers: those the
    store lacks are computed together, their paired comparisons in one
    :func:`~evalsuite.scoring.stats.compare_each` (one draw of the resamples for cells scored on as many
    queries), each stored under its own cell's key."""

    def compute(todo: Sequence[int]) -> list[tuple[dict[str, float], dict[str, Comparison]]]:
        from ..scoring.metrics import paired_test
        from ..scoring.stats import compare_each, paired_scores

        p_values = [
            dict.fromkeys(metrics, 1.0)
            if same_as_base[i]
            else {m: paired_test(base[m], cells[i][m], test=test, alpha=alpha) for m in metrics}
            for i in todo
        ]
        pairs = [paired_scores(cells[i], base, list(metrics))[1:] for i in todo]
        return [
            (p, dict(zip(metrics, compared, strict=True)))
            for p, compared in zip(p_values, compare_each(pairs), strict=True)
        ]

    if store is None:
        return compute(range(len(cells)))
    from ..run.cache.results import code_digest, json_digest, library_versions
    from ..scoring.stats import CONFIDENCE, N_RESAMPLES, POWER

    shared = {
        "base": json_digest(base),
        "metrics": list(metrics),
        "test": test,
        "alpha": alpha,
        "bootstrap": [N_RESAMPLES, 0, CONFIDENCE, POWER],  # resamples, seed, confidence, power of stats.compare
        "libraries": library_versions(STAT_LIBRARIES),
        "code": code_digest(STAT_MODULES),
    }
    fields = [
        {**shared, "cell": json_digest(cell), "same_as_base": same}
        for cell, same in zip(cells, same_as_base, strict=True)
    ]
    found = [store.load("cell-stats", f, _undump_statistics) for f in fields]
    todo = [i for i, value in enumerate(found) if value is None]
    for i, value in zip(todo, compute(todo), strict=True):
        payload, arrays = _dump_statistics(value)
        store.save("cell-stats", fields[i], payload, arrays)
        found[i] = value
    return [value for value in found if value is not None]


STAT_LIBRARIES = ("evalsuite", "numpy", "ranx", "scipy", "numba")
STAT_MODULES = (
    "evalsuite.scoring.stats",
    "evalsuite.scoring.metrics",
    "evalsuite.sweep.compare",
    "evalsuite.run.cache.results",
)


def _dump_statistics(value: tuple[dict[str, float], dict[str, Comparison]]) -> tuple[Any, dict[str, Any]]:
    p_values, comparisons = value
    return {"p_values": p_values, "comparisons": {m: c.to_dict() for m, c in comparisons.items()}}, {}


def _undump_statistics(entry: Entry) -> tuple[dict[str, float], dict[str, Comparison]]:
    payload = entry.payload
    p_values = {str(m): float(v) for m, v in payload["p_values"].items()}
    return p_values, {str(m): comparison_from_dict(c) for m, c in payload["comparisons"].items()}


def comparison_from_dict(d: Mapping[str, Any]) -> Comparison:
    """The inverse of ``Comparison.to_dict`` (exact: JSON keeps every float)."""
    from ..scoring.stats import Comparison, DeltaCI

    return Comparison(DeltaCI(**d["ci"]), float(d["p_value"]), float(d["mde"]))


def compare_cells(
    comparisons: Mapping[str, Mapping[str, Comparison]],
    p_values: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str],
    *,
    same_as_base: Sequence[str] = (),
) -> dict[str, dict[str, CellStats]]:
    """Each cell's comparisons and test p-values (from :func:`cell_statistics`) with their q-values: a cell whose
    contract equals the base is compared too (delta 0) but stays out of the correction's family (it is not a
    test)."""
    import numpy as np

    from ..scoring.stats import benjamini_hochberg

    family = [(n, m) for n in comparisons if n not in same_as_base for m in metrics]
    q = benjamini_hochberg([p_values[n][m] for n, m in family]) if family else np.zeros(0)
    q_of = {key: float(v) for key, v in zip(family, q, strict=True)}
    return {
        n: {m: CellStats(comparisons[n][m], p_values[n][m], q_of.get((n, m), 1.0)) for m in metrics}
        for n in comparisons
    }
