"""``evalsuite budget --choose "ndcg@10:non_inferior=0.01" --alternative index=hnsw:ef=16 --alternative dim=256``:
the declared production and each alternative setting of one of its stages (the same deployment with that one
setting changed), judged non-inferior to the reference by the sweep's rule (:func:`evalsuite.sweep.choose.choose`:
the release gates' non-inferiority, Bonferroni-corrected over the configurations considered), and the cheapest
that passes named. Every alternative is computed from the same vectors as the budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import SpecError

if TYPE_CHECKING:
    from ..audit.source import SourceOptions
    from ..rerank.run import RerankSpec
    from ..run.spec import RunSpec
    from ..sweep.choose import Choice, ChooseRule
    from .compute import Evaluator, Scored

AXES = ("dim", "index", "dtype")  # the settings of one stage an alternative may change


@dataclass(frozen=True)
class Alternative:
    axis: str
    value: str

    @property
    def name(self) -> str:
        return f"{self.axis}={self.value}"


def parse_alternative(text: str) -> Alternative:
    """``AXIS=VALUE`` with AXIS one of dim, index, dtype (the value checked as the run's option would check it)."""
    from ..contract import DTYPES
    from ..retrieval.index.spec import canonical

    axis, eq, value = text.partition("=")
    axis, value = axis.strip(), value.strip()
    if not eq or axis not in AXES or not value:
        raise SpecError(
            f"--alternative {text!r}: write AXIS=VALUE with AXIS one of {', '.join(AXES)}, e.g. index=hnsw:ef=16"
        )
    if axis == "dim" and not (value.isdigit() and int(value) > 0):
        raise SpecError(f"--alternative {text!r}: a dim is a positive integer")
    if axis == "dtype" and value not in DTYPES:
        raise SpecError(f"--alternative {text!r}: the dtype is one of {', '.join(DTYPES)}")
    return Alternative(axis, canonical(value) if axis == "index" else value)


def _cost(rule: ChooseRule, scored: Scored) -> float | None:
    c = scored.cost
    value = {"bytes": c.get("bytes_per_vector"), "latency": c.get("query_p50_ms"), "dim": scored.config.dim}[rule.cost]
    return float(value) if isinstance(value, (int, float)) else None


def choose_alternatives(
    rule: ChooseRule,
    spec: RunSpec,
    alternatives: Sequence[Alternative],
    evaluate: Evaluator,
    *,
    index_uri: str | None,
    source_options: SourceOptions | None,
    reranker: RerankSpec | None,
) -> Choice:
    """The declared production (``production``) and each alternative against the reference."""
    from ..scoring.metrics import parse_metric
    from ..sweep.choose import Candidate, choose
    from .compute import Evaluator
    from .plan import make_plan
    from .stages import configure

    plan = evaluate.plan
    metric = parse_metric(rule.metric)
    if metric not in plan.metrics:
        raise SpecError(f"--choose {rule.text}: {metric} was not computed; add it to --metrics")
    j = plan.metrics.index(metric)
    reference = evaluate(plan.reference_config)
    offered = [("production", evaluate(configure(frozenset(plan.declared), plan)))]
    for alt in alternatives:
        changed = spec.replace(**{alt.axis: int(alt.value) if alt.axis == "dim" else alt.value})
        other = make_plan(changed, index_uri=index_uri, source_options=source_options, reranker=reranker)
        try:
            ev = Evaluator(other, vectors=evaluate)  # the same forward passes
            offered.append((alt.name, ev(configure(frozenset(other.declared), other))))
        finally:
            other.close()
    candidates = [Candidate(name, s.scores[:, j], _cost(rule, s)) for name, s in offered]
    return choose(rule, reference.scores[:, j], _cost(rule, reference), candidates, base_name="reference")
