"""The audit's retrieval gates in the release gates' syntax (`gating/kinds.py`), judged by `gating/judge.py`.

The index (or the new index of a cutover) is the candidate; the reference's exact search (or the old index) is
the reference. Without ``--audit-gate`` every metric gets ``METRIC:non_inferior=MARGIN`` (``--audit-max-delta``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..gating.gates import Gate, Outcome


def audit_gates(exprs: Sequence[str], metrics: Sequence[str], margin: float) -> tuple[Gate, ...]:
    from ..gating.kinds import parse_gates

    return parse_gates(list(exprs) or [f"{m}:non_inferior={margin:g}" for m in metrics])


def judge_sides(
    gates: Sequence[Gate],
    candidate: tuple[str, Mapping[str, float], Mapping[str, Mapping[str, float]]],
    reference: tuple[str, Mapping[str, float], Mapping[str, Mapping[str, float]]],
    queries: Mapping[str, str],
) -> tuple[list[Outcome], dict[str, dict[str, Any]]]:
    """Each gate's outcome, and per gate a JSON-ready row (values, delta, CI, verdict, the failure explained)."""
    from ..gating.gates import Scores
    from ..gating.judge import evaluate_gate, explain

    cand = Scores(candidate[0], candidate[1], candidate[2])
    ref = Scores(reference[0], reference[1], reference[2])
    outcomes = [evaluate_gate(g, cand, ref if g.needs_reference else None) for g in gates]
    rows: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        c = o.comparison
        rows[o.gate.expr] = {
            "metric": o.gate.metric,
            candidate[0]: round(o.candidate, 6),
            reference[0]: None if o.reference is None else round(o.reference, 6),
            "delta": None if o.delta is None else round(o.delta, 6),
            "ci_low": None if c is None else round(c.ci.low, 6),
            "ci_high": None if c is None else round(c.ci.high, 6),
            "decision": o.verdict,
            "explanation": None if o.passed else explain(o, queries, reference[0], candidate[0]),
        }
    return outcomes, rows
