"""report.md's section for a parity verdict (:mod:`evalsuite.checks.parity`): its metric table and top-10 overlap."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..checks.measure import TOP_K_OVERLAP
from ..checks.outcome import CheckOutcome
from .markdown import table


def parity_section(verdict: CheckOutcome, heading: str, served: str, note: str) -> list[str]:
    """report.md: a parity verdict's heading, metric table (reference, ``served``'s column, delta, 95% CI) and mean
    top-10 overlap against its threshold, then ``note``; nothing when the check errored (no metrics)."""
    if "metrics" not in verdict.details:
        return []
    ov = verdict.details["top10_overlap"]
    return [
        f"## {heading}",
        "",
        table(["metric", "reference", served, "delta", "95% CI"], metric_rows(verdict.details)),
        f"Mean top-{TOP_K_OVERLAP} overlap: {ov['mean']:.3f} (threshold {ov.get('threshold', '-')}); {note}",
        "",
    ]


def metric_rows(details: Mapping[str, Any]) -> list[tuple[object, ...]]:
    """report.md: one row per metric of a parity verdict's details (metric, reference, served, delta, 95% CI)."""
    return [
        (
            m,
            d["reference"],
            d["endpoint"],
            f"{d['delta']:+.4f}",
            f"{d['ci_low']:+.4f} .. {d['ci_high']:+.4f}" if "ci_low" in d else "-",
        )
        for m, d in details["metrics"].items()
    ]
