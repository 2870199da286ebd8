"""The gate kinds, one declaration each, and the registry that parses them (`judge.py` evaluates and explains).

Forms::

    ndcg@10>=0.35                   floor on the candidate's value
    ndcg@10:max_drop=0.01           absolute drop against the baseline/reference
    recall@100:max_rel_drop=2%      relative drop (2% or 0.02)
    mrr@10:no_significant_drop      paired test over per-query scores (ranx), p < alpha fails
    mrr@10:no_significant_drop=0.01 ... with alpha 0.01 (default 0.05)
    ndcg@10:non_inferior=0.01       one-sided 95% lower bound of (candidate - reference) >= -0.01
                                    (pass), upper bound < -0.01 (fail), else inconclusive
    ndcg@10:min_gain=0.01           the reranker's gain (reranked - first stage, same queries): one-sided
                                    95% lower bound >= 0.01 (pass), two-sided upper bound < 0.01 (fail),
                                    else inconclusive; needs --reranker, no reference
    ndcg@10:max_drop_from_first=0.02  drop against the first recorded release (or history_anchor) of the
                                    release history (--history DIR), paired; another dataset or contract:
                                    inconclusive, saying why (`history/anchors.py`, `releases.py`)
    ndcg@10:max_drop_from_best=0.02 ... against the best comparable recorded release
    ndcg@10:trend=0.005@5           least-squares slope over the last 5 releases (the candidate last) with its
                                    paired CI: fails below -0.005 per release, passes at or above, else inconclusive

Every kind takes a slice after the metric: ``ndcg@10[topic=finance]:max_drop=0.02``,
``recall@100[doclen>256]>=0.6`` judge that slice's queries only (`slices.py` says how). In a session
with a reranker, every kind but ``min_gain`` takes a stage too: ``ndcg@10[stage=reranked]>=0.4``,
``ndcg@10[stage=reranked,topic=finance]:max_drop=0.02`` judge the reranked stage (`stages.py`).

Every relative gate's outcome carries the paired comparison (:class:`~evalsuite.gating.gates.Evidence`):
delta with its bootstrap CI, the sign-flip p-value and the minimum detectable effect.

Adding a kind: one subclass of :class:`GateKind` below, listed in ``GATE_KINDS``, and its test. The
``--gate`` help, the parser's errors and the README's gate table read ``GATE_KINDS``. From another package: the
subclass, named by an entry point in the group ``evalsuite.gate_kinds`` (:mod:`evalsuite.base.plugins`);
:func:`gate_kinds` lists both, and the help and the parser read it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..base.errors import SpecError
from ..scoring.metrics import paired_test, parse_metric
from .gates import (
    TOLERANCE,
    Drop,
    Evidence,
    Gate,
    GateKind,
    Judgement,
    Outcome,
    Scores,
    SliceBounds,
    Valued,
    decided,
    number,
)
from .history_kinds import MaxDropFromBest, MaxDropFromFirst, Trend
from .slices import drop_on_slice, floor_on_slice, split_selector, with_selector

DEFAULT_MAX_DROP = 0.01
DEFAULT_ALPHA = 0.05
_RELATIVE = re.compile(r"^\s*(?P<metric>[^:\s]+)\s*:\s*(?P<kind>[a-z_]+)\s*(?:=\s*(?P<value>[-+0-9.eE]+%?))?\s*$")


class Floor(GateKind):
    name = "floor"
    against = None
    form = "METRIC>=VALUE"
    example = "ndcg@10>=0.35"
    fails_when = "the candidate is below the floor"

    def pattern(self) -> re.Pattern[str]:
        return re.compile(r"^\s*(?P<metric>[^:<>=\s]+)\s*>=\s*(?P<value>[-+0-9.eE]+)\s*$")

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        assert raw is not None  # the pattern requires a value
        return number(raw, expr), f"{metric}>={raw}"

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        return Judgement.of(value >= gate.threshold - TOLERANCE)

    def pass_line(self, threshold: float, reference: float | None) -> float | None:
        return threshold

    def explain(self, outcome: Outcome) -> str:
        g = outcome.gate
        return (
            f"{g.subject} = {outcome.candidate:.4f} is below the floor {g.threshold:g} "
            f"(gate {g.expr}, short by {g.threshold - outcome.candidate:.4f})"
        )

    def on_slice(self, gate: Gate, candidate: Scores, reference: Scores | None, evidence: Evidence) -> SliceBounds:
        return floor_on_slice(gate, candidate)


class MaxDrop(Drop):
    name = "max_drop"
    form = "METRIC:max_drop=VALUE"
    example = "ndcg@10:max_drop=0.01"
    fails_when = "candidate − reference < −0.01"

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        assert ref_value is not None
        return Judgement.of(ref_value - value <= gate.threshold + TOLERANCE)

    def pass_line(self, threshold: float, reference: float | None) -> float | None:
        return None if reference is None else reference - threshold

    def explain(self, outcome: Outcome) -> str:
        return f"allowed drop {outcome.gate.threshold:g} (gate {outcome.gate.expr})"

    def on_slice(self, gate: Gate, candidate: Scores, reference: Scores | None, evidence: Evidence) -> SliceBounds:
        return drop_on_slice(evidence, gate.threshold)


class MaxRelDrop(Drop):
    name = "max_rel_drop"
    form = "METRIC:max_rel_drop=PCT%"
    example = "recall@100:max_rel_drop=2%"
    fails_when = "the relative drop exceeds 2%"

    @staticmethod
    def relative_drop(candidate: float, reference: float) -> float:
        return (reference - candidate) / reference if reference > 0 else 0.0

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        assert ref_value is not None
        return Judgement.of(self.relative_drop(value, ref_value) <= gate.threshold + TOLERANCE)

    def pass_line(self, threshold: float, reference: float | None) -> float | None:
        return None if reference is None else reference * (1 - threshold)

    def explain(self, outcome: Outcome) -> str:
        assert outcome.reference is not None
        rel = self.relative_drop(outcome.candidate, outcome.reference)
        return f"relative drop {rel:.2%}, allowed {outcome.gate.threshold:.2%} (gate {outcome.gate.expr})"

    def on_slice(self, gate: Gate, candidate: Scores, reference: Scores | None, evidence: Evidence) -> SliceBounds:
        if reference is None:
            raise SpecError(f"gate {gate.expr!r}: a relative drop on a slice needs the reference side")
        return drop_on_slice(evidence, gate.threshold * reference.metrics[gate.metric])


class NoSignificantDrop(GateKind):
    name = "no_significant_drop"
    form = "METRIC:no_significant_drop[=ALPHA]"
    example = "mrr@10:no_significant_drop"
    optional_value = "[=ALPHA]"
    fails_when = (
        "a paired t-test over per-query scores (ranx's own test) finds a drop at p < alpha "
        f"({DEFAULT_ALPHA:g}), p Holm-adjusted across the session's significance gates; no evidence of a "
        "drop is not evidence of no drop (see below)"
    )

    def threshold(self, raw: str | None, metric: str, expr: str) -> tuple[float, str]:
        alpha = number(raw, expr) if raw else DEFAULT_ALPHA
        if not 0 < alpha < 1:
            raise SpecError(f"gate {expr!r}: alpha must be between 0 and 1")
        return alpha, f"{metric}:{self.name}" + (f"={raw}" if raw else "")

    tests_significance = True

    def p_value(self, gate: Gate, candidate: Scores, reference: Scores) -> float | None:
        return paired_test(
            reference.per_query.get(gate.metric, {}), candidate.per_query.get(gate.metric, {}), alpha=gate.threshold
        )

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        assert ref_value is not None
        p = evidence.p_adjusted if evidence.p_adjusted is not None else evidence.p_value
        assert p is not None
        return Judgement.of(not (value < ref_value and p < gate.threshold))

    def explain(self, outcome: Outcome) -> str:
        g, e = outcome.gate, outcome.evidence
        p = e.p_adjusted if e.p_adjusted is not None else outcome.p_value
        which = "Holm-adjusted paired t-test p" if e.correction == "holm" else "paired t-test p"
        return f"{which} = {p:.4g} < alpha {g.threshold:g} (gate {g.expr})"


class NonInferior(Drop):
    """A release gate: the drop is at most the margin, with 95% confidence (one-sided)."""

    name = "non_inferior"
    form = "METRIC:non_inferior=MARGIN"
    example = "ndcg@10:non_inferior=0.01"
    fails_when = (
        "the one-sided 95% upper bound of candidate − reference is below −0.01; passes only when the "
        "lower bound is ≥ −0.01; otherwise INCONCLUSIVE, with the minimum detectable effect and the "
        "queries that would decide it"
    )

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        from ..scoring.stats import paired_scores, queries_needed

        assert reference is not None and evidence.comparison is not None
        ci = evidence.comparison.ci
        if ci.lower_bound >= -gate.threshold - TOLERANCE:
            return Judgement("pass")
        if ci.upper_bound < -gate.threshold:
            return Judgement("fail")
        _, a, b = paired_scores(candidate.per_query, reference.per_query, [gate.metric])
        need = float(queries_needed(a - b, gate.threshold)[0])
        return Judgement("inconclusive", int(need) if need != float("inf") else None)

    def explain(self, outcome: Outcome) -> str:
        g, c = outcome.gate, outcome.comparison
        assert c is not None
        bounds = (
            f"one-sided {c.ci.confidence:.0%} bounds {c.ci.lower_bound:+.4f} / {c.ci.upper_bound:+.4f} "
            f"against margin -{g.threshold:g}"
        )
        need = (
            f"about {outcome.queries_needed} queries would decide it"
            if outcome.queries_needed is not None
            else "no number of queries would decide it at this delta"
        )
        return decided(
            outcome,
            bounds,
            "the drop exceeds the margin",
            "neither non-inferiority nor a drop beyond the margin is shown; minimum detectable "
            f"effect {c.mde:.4f} with {c.ci.n_queries} queries, {need}",
        )


class MinGain(Valued):
    """What the reranker brings: the reranked stage minus the candidate's own first stage, query by query."""

    name = "min_gain"
    against = "first stage"
    stage = "reranked"
    form = "METRIC:min_gain=VALUE"
    example = "ndcg@10:min_gain=0.01"
    fails_when = (
        "the reranker's gain (reranked − first stage, on the same queries) has its two-sided 95% upper bound "
        "below 0.01; passes only when the one-sided 95% lower bound is ≥ 0.01; otherwise INCONCLUSIVE. "
        "Needs --reranker, no baseline"
    )

    def judge(
        self,
        gate: Gate,
        candidate: Scores,
        reference: Scores | None,
        value: float,
        ref_value: float | None,
        evidence: Evidence,
    ) -> Judgement:
        from ..rerank.gain import StageDelta
        from ..rerank.gates import judge_gain

        assert ref_value is not None and evidence.comparison is not None
        c = evidence.comparison
        gain = StageDelta(
            gate.metric, ref_value, value, c.ci.delta, c.ci.n_queries, c.ci.low, c.ci.high, c.ci.lower_bound
        )
        return Judgement(judge_gain(gain, gate.threshold))

    def explain(self, outcome: Outcome) -> str:
        g, c = outcome.gate, outcome.comparison
        assert c is not None
        bounds = (
            f"gain one-sided {c.ci.confidence:.0%} lower bound {c.ci.lower_bound:+.4f}, two-sided upper bound "
            f"{c.ci.high:+.4f}, against the required gain {g.threshold:g}"
        )
        return decided(
            outcome,
            bounds,
            "the reranker brings less than required",
            f"neither the gain nor its absence is shown; minimum detectable effect {c.mde:.4f} with "
            f"{c.ci.n_queries} queries",
        )


GATE_KINDS: tuple[GateKind, ...] = (
    Floor(),
    MaxDrop(),
    MaxRelDrop(),
    NoSignificantDrop(),
    NonInferior(),
    MinGain(),
    MaxDropFromFirst(),
    MaxDropFromBest(),
    Trend(),
)


def gate_kinds() -> tuple[GateKind, ...]:
    """The built-in kinds, then the plug-ins' (entry points ``evalsuite.gate_kinds``; PluginError for a broken one)."""
    from ..base import plugins

    return GATE_KINDS + plugins.cached(plugins.GATE_KINDS, GateKind, tuple(k.name for k in GATE_KINDS))


def kind_of(gate: Gate) -> GateKind:
    return next(k for k in gate_kinds() if k.name == gate.kind)


def forms() -> str:
    """``use A, B or C``: every kind's syntax, for error messages."""
    names = [k.form for k in gate_kinds()]
    return "use " + ", ".join(names[:-1]) + " or " + names[-1]


def gate_help() -> str:
    from ..base.plugins import PluginError

    try:
        kinds, broken = gate_kinds(), ""
    except PluginError as exc:  # the help must print; the gate that uses it says so again
        kinds, broken = GATE_KINDS, f"; a plug-in gate kind failed to load: {exc}"
    return (
        "gate expression, repeatable: "
        + ", ".join(f"'{k.example}'" for k in kinds)
        + "; a [slice] after the metric judges that slice's queries: 'ndcg@10[topic=finance]:max_drop=0.02', "
        "'recall@100[doclen>256]>=0.6'; with --reranker, [stage=reranked] judges the reranked stage: "
        "'ndcg@10[stage=reranked]>=0.4', 'ndcg@10[stage=reranked,topic=finance]:max_drop=0.02'" + broken
    )


def kinds_markdown() -> str:
    """The README's gate table: one row per kind."""
    rows = [f"| `{k.example}{k.optional_value}` | {k.fails_when} |" for k in GATE_KINDS]
    return "\n".join(["| expression | fails when |", "|---|---|", *rows]) + "\n"


def parse_gate(expr: str) -> Gate:
    """Parse one gate expression (with an optional ``[stage=...,slice]`` after the metric); errors say which
    forms are allowed."""
    plain, selector, stage = split_selector(expr)
    for kind in gate_kinds():
        m = kind.pattern().match(plain)
        if m:
            metric = parse_metric(m.group("metric"))
            threshold, canonical = kind.threshold(m.group("value"), metric, expr)
            if kind.stage is not None and stage is not None:
                raise SpecError(
                    f"gate {expr!r}: {kind.name} always judges the {kind.stage} stage against the "
                    f"{kind.against}; write it without a stage, e.g. {kind.example}"
                )
            return Gate(
                metric,
                kind.name,
                threshold,
                with_selector(canonical, metric, selector, stage),
                kind.needs_reference,
                selector.text if selector else None,
                kind.stage or stage or "first",
            )
    expr = plain
    m = _RELATIVE.match(expr)
    if m:
        parse_metric(m.group("metric"))
        raise SpecError(f"gate {expr!r}: unknown kind {m.group('kind')!r}; {forms()}")
    raise SpecError(f"gate {expr!r} is not understood; {forms()}")


def parse_gates(exprs: Sequence[str]) -> tuple[Gate, ...]:
    return tuple(parse_gate(e) for e in exprs)


def default_gates(metrics: Sequence[str]) -> tuple[Gate, ...]:
    """One absolute drop gate per metric, used when a baseline is given without gates."""
    return tuple(parse_gate(f"{m}:{MaxDrop.name}={DEFAULT_MAX_DROP}") for m in metrics)
