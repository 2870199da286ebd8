"""Gates: small declarations over one metric, evaluated against a candidate and a reference.

Forms::

    ndcg@10>=0.35                   floor on the candidate's value
    ndcg@10:max_drop=0.01           absolute drop against the baseline/reference
    recall@100:max_rel_drop=2%      relative drop (2% or 0.02)
    mrr@10:no_significant_drop      paired test over per-query scores (ranx), p < alpha fails
    mrr@10:no_significant_drop=0.01 ... with alpha 0.01 (default 0.05)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from .errors import SpecError
from .metrics import paired_test, parse_metric

KINDS = ("floor", "max_drop", "max_rel_drop", "no_significant_drop")
DEFAULT_MAX_DROP = 0.01
_FLOOR = re.compile(r"^\s*(?P<metric>[^:<>=\s]+)\s*>=\s*(?P<value>[-+0-9.eE]+)\s*$")
_REL = re.compile(r"^\s*(?P<metric>[^:\s]+)\s*:\s*(?P<kind>[a-z_]+)\s*(?:=\s*(?P<value>[-+0-9.eE]+%?))?\s*$")


@dataclass(frozen=True)
class Gate:
    metric: str
    kind: str
    threshold: float
    expr: str

    @property
    def needs_reference(self) -> bool:
        return self.kind != "floor"


def _number(text: str, expr: str) -> float:
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise SpecError(f"gate {expr!r}: {text!r} is not a number") from None


def parse_gate(expr: str) -> Gate:
    """Parse one gate expression; errors say which forms are allowed."""
    allowed = ("use METRIC>=VALUE, METRIC:max_drop=VALUE, METRIC:max_rel_drop=PCT% or "
               "METRIC:no_significant_drop[=ALPHA]")
    m = _FLOOR.match(expr)
    if m:
        metric = parse_metric(m.group("metric"))
        return Gate(metric, "floor", _number(m.group("value"), expr), f"{metric}>={m.group('value')}")
    m = _REL.match(expr)
    if not m:
        raise SpecError(f"gate {expr!r} is not understood; {allowed}")
    metric, kind, raw = parse_metric(m.group("metric")), m.group("kind"), m.group("value")
    if kind not in KINDS[1:]:
        raise SpecError(f"gate {expr!r}: unknown kind {kind!r}; {allowed}")
    if kind == "no_significant_drop":
        alpha = _number(raw, expr) if raw else 0.05
        if not 0 < alpha < 1:
            raise SpecError(f"gate {expr!r}: alpha must be between 0 and 1")
        return Gate(metric, kind, alpha, f"{metric}:{kind}" + (f"={raw}" if raw else ""))
    if raw is None:
        raise SpecError(f"gate {expr!r}: {kind} needs a value, e.g. {metric}:{kind}=0.01")
    value = _number(raw, expr)
    if value < 0:
        raise SpecError(f"gate {expr!r}: the allowed drop must be >= 0")
    return Gate(metric, kind, value, f"{metric}:{kind}={raw}")


def parse_gates(exprs: Sequence[str]) -> tuple[Gate, ...]:
    return tuple(parse_gate(e) for e in exprs)


def default_gates(metrics: Sequence[str]) -> tuple[Gate, ...]:
    """One absolute drop gate per baseline metric, used when a baseline is given without gates."""
    return tuple(Gate(m, "max_drop", DEFAULT_MAX_DROP, f"{m}:max_drop={DEFAULT_MAX_DROP}") for m in metrics)


@dataclass(frozen=True)
class Scores:
    """Aggregate and per-query values of one side of a comparison."""

    label: str
    metrics: Mapping[str, float]
    per_query: Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Outcome:
    gate: Gate
    passed: bool
    candidate: float
    reference: float | None = None
    delta: float | None = None
    p_value: float | None = None
    losers: tuple[tuple[str, float, float], ...] = field(default=())

    def to_dict(self) -> dict[str, object]:
        return {"gate": self.gate.expr, "metric": self.gate.metric, "kind": self.gate.kind,
                "threshold": self.gate.threshold, "passed": self.passed, "candidate": self.candidate,
                "reference": self.reference, "delta": self.delta, "p_value": self.p_value,
                "losers": [list(x) for x in self.losers]}


def _losers(ref: Mapping[str, float], cand: Mapping[str, float], n: int = 5) -> tuple[tuple[str, float, float], ...]:
    drops = sorted(((ref[q] - cand[q], q) for q in ref if q in cand), reverse=True)
    return tuple((q, ref[q], cand[q]) for d, q in drops[:n] if d > 0)


def evaluate_gate(gate: Gate, candidate: Scores, reference: Scores | None) -> Outcome:
    if gate.metric not in candidate.metrics:
        raise SpecError(f"gate {gate.expr!r}: metric {gate.metric} was not computed; add it to --metrics")
    value = candidate.metrics[gate.metric]
    if gate.kind == "floor":
        return Outcome(gate, value >= gate.threshold, value)
    if reference is None:
        raise SpecError(f"gate {gate.expr!r} compares against a reference; pass --baseline FILE or --reference-rev")
    if gate.metric not in reference.metrics:
        raise SpecError(f"gate {gate.expr!r}: the {reference.label} has no {gate.metric}; "
                        f"it has {', '.join(reference.metrics)}")
    ref = reference.metrics[gate.metric]
    delta = value - ref
    losers = _losers(reference.per_query.get(gate.metric, {}), candidate.per_query.get(gate.metric, {}))
    if gate.kind == "max_drop":
        passed = -delta <= gate.threshold + 1e-12
        return Outcome(gate, passed, value, ref, delta, losers=losers)
    if gate.kind == "max_rel_drop":
        rel = (-delta / ref) if ref > 0 else 0.0
        return Outcome(gate, rel <= gate.threshold + 1e-12, value, ref, delta, losers=losers)
    p = paired_test(reference.per_query.get(gate.metric, {}), candidate.per_query.get(gate.metric, {}),
                    alpha=gate.threshold)
    return Outcome(gate, not (delta < 0 and p < gate.threshold), value, ref, delta, p, losers)


def explain(outcome: Outcome, queries: Mapping[str, str], reference_label: str = "baseline") -> str:
    """A failure message a person can act on."""
    g = outcome.gate
    if g.kind == "floor":
        return (f"{g.metric} = {outcome.candidate:.4f} is below the floor {g.threshold:g} "
                f"(gate {g.expr}, short by {g.threshold - outcome.candidate:.4f})")
    assert outcome.reference is not None and outcome.delta is not None
    head = (f"{g.metric}: {reference_label} {outcome.reference:.4f}, candidate {outcome.candidate:.4f}, "
            f"delta {outcome.delta:+.4f}")
    if g.kind == "max_drop":
        head += f"; allowed drop {g.threshold:g} (gate {g.expr})"
    elif g.kind == "max_rel_drop":
        rel = -outcome.delta / outcome.reference if outcome.reference else 0.0
        head += f"; relative drop {rel:.2%}, allowed {g.threshold:.2%} (gate {g.expr})"
    else:
        head += f"; paired t-test p = {outcome.p_value:.4g} < alpha {g.threshold:g} (gate {g.expr})"
    if outcome.losers:
        head += "\nqueries that lost most:"
        for qid, ref, cand in outcome.losers:
            text = queries.get(qid, "")
            text = text if len(text) <= 70 else text[:67] + "..."
            head += f"\n  {qid}  {reference_label} {ref:.4f} -> candidate {cand:.4f}  {text!r}"
    return head
