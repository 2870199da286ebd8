"""A stage's own budget: a release gate (the gating family's kinds, judged by its judge) on one stage's scores
against the stage before it: ``ndcg@10[stage=ann]:max_drop=0.01`` holds the approximate search to a drop of 0.01,
``recall@10[stage=compression]:non_inferior=0.02`` the compression to non-inferiority within 0.02,
``ndcg@10[stage=production]>=0.7`` production itself (against the reference, for the relative kinds)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..base.verdict import Verdict
from .stages import STAGE_NAMES

if TYPE_CHECKING:
    import numpy as np

    from ..gating.gates import Gate, Outcome, Scores
    from .result import BudgetResult

PRODUCTION = "production"
_BRACKET = re.compile(r"^\s*(?P<metric>[^\[\]:<>=\s]+)\s*\[\s*stage\s*=\s*(?P<stage>[^\],\s]+)\s*\](?P<rest>.*)$")
EXAMPLE = "ndcg@10[stage=ann]:max_drop=0.01"


@dataclass(frozen=True)
class BudgetGate:
    stage: str
    gate: Gate
    expr: str


def parse_budget_gate(expr: str) -> BudgetGate:
    """``METRIC[stage=NAME]`` followed by any gate kind's form; the stage is a budget stage or ``production``."""
    from ..gating.kinds import parse_gate

    m = _BRACKET.match(expr)
    if not m:
        raise SpecError(f"budget gate {expr!r}: name the stage it judges after the metric, e.g. {EXAMPLE}")
    stage = m.group("stage")
    if stage not in (*STAGE_NAMES, PRODUCTION):
        raise SpecError(
            f"budget gate {expr!r}: stage {stage!r} is not one of {', '.join((*STAGE_NAMES, PRODUCTION))}; e.g. {EXAMPLE}"
        )
    return BudgetGate(stage, parse_gate(m.group("metric") + m.group("rest")), expr.strip())


@dataclass(frozen=True)
class BudgetGateOutcome:
    gate: BudgetGate
    verdict: Verdict
    message: str
    outcome: Outcome | None = None

    def line(self) -> str:
        return f"{self.verdict.upper():<12} {self.gate.expr}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {
            "gate": self.gate.expr,
            "stage": self.gate.stage,
            "verdict": self.verdict,
            "message": self.message,
            **({"outcome": self.outcome.to_dict()} if self.outcome is not None else {}),
        }


def _scores(label: str, result: BudgetResult, metrics: Mapping[str, float], scores: np.ndarray) -> Scores:
    from ..gating.gates import Scores

    per_query = {
        m: dict(zip(result.query_ids, scores[:, j].tolist(), strict=True)) for j, m in enumerate(result.metrics)
    }
    return Scores(label, dict(metrics), per_query)


def judge_budget_gate(gate: BudgetGate, result: BudgetResult) -> BudgetGateOutcome:
    """The gate's kind judges the stage's scores against the stage before it (production: against the reference)."""
    from ..gating.judge import evaluate_gate, explain

    if gate.gate.metric not in result.metrics:
        raise SpecError(f"budget gate {gate.expr!r}: {gate.gate.metric} was not computed; add it to --metrics")
    if gate.stage == PRODUCTION:
        after_metrics, after_scores = result.production["metrics"], result.stages_scores()[-1]
        before_metrics, before_scores = result.reference["metrics"], result.reference_scores
        labels = ("reference", "production")
    else:
        entry = result.stage(gate.stage)
        if entry.skipped is not None or entry.scores is None:
            return BudgetGateOutcome(gate, "fail", f"the {gate.stage} stage was not measured ({entry.skipped})")
        after_metrics, after_scores = entry.metrics, entry.scores
        before_metrics, before_scores = result.before(gate.stage)
        labels = (f"before {gate.stage}", f"after {gate.stage}")
    assert before_scores is not None
    outcome = evaluate_gate(
        gate.gate,
        _scores(labels[1], result, after_metrics, after_scores),
        _scores(labels[0], result, before_metrics, before_scores),
    )
    return BudgetGateOutcome(gate, outcome.verdict, explain(outcome, {}, *labels), outcome)


def judge_budget_gates(gates: Sequence[BudgetGate], result: BudgetResult) -> list[BudgetGateOutcome]:
    return [judge_budget_gate(g, result) for g in gates]
