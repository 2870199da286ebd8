"""Judging gates: the paired evidence for a gate, the kind's verdict on it (whole set or a slice), and the
failure message a person can act on. The kinds themselves are declared in `kinds.py`."""

from __future__ import annotations

from collections.abc import Mapping

from ..base.errors import SpecError
from .gates import Evidence, Gate, Outcome, Scores
from .kinds import kind_of
from .slices import judge_slice, slice_sides, too_few


def _losers(ref: Mapping[str, float], cand: Mapping[str, float], n: int = 5) -> tuple[tuple[str, float, float], ...]:
    drops = sorted(((ref[q] - cand[q], q) for q in ref if q in cand), reverse=True)
    return tuple((q, ref[q], cand[q]) for d, q in drops[:n] if d > 0)


def gather_evidence(gate: Gate, candidate: Scores, reference: Scores | None) -> Evidence:
    """The paired comparison of one relative gate's metric (CI, sign-flip p, MDE) and the kind's own
    p-value, uncorrected; empty for a floor. Raises SpecError when a side lacks the metric."""
    if gate.metric not in candidate.metrics:
        raise SpecError(f"gate {gate.expr!r}: metric {gate.metric} was not computed; add it to --metrics")
    kind = kind_of(gate)
    if not kind.paired:
        return Evidence()
    if reference is None:
        if not kind.needs_reference:  # the candidate's own first stage: only missing without a reranker
            raise SpecError(f"gate {gate.expr!r} compares the reranked stage with the first stage; pass --reranker DIR")
        raise SpecError(f"gate {gate.expr!r} compares against a reference; pass --baseline FILE or --reference-rev")
    if gate.metric not in reference.metrics:
        raise SpecError(
            f"gate {gate.expr!r}: the {reference.label} has no {gate.metric}; it has {', '.join(reference.metrics)}"
        )
    from ..scoring.stats import compare, paired_scores

    if gate.selector is not None:
        candidate, sliced, n = slice_sides(gate, candidate, reference)
        assert sliced is not None
        reference = sliced
        if n == 0:
            return Evidence()

    _, a, b = paired_scores(candidate.per_query, reference.per_query, [gate.metric])
    p = kind.p_value(gate, candidate, reference)
    return Evidence(compare(a, b)[0], p, p, "none" if kind.tests_significance else None)


def judge_gate(gate: Gate, candidate: Scores, reference: Scores | None, evidence: Evidence) -> Outcome:
    """The outcome of one gate given its evidence (whose ``p_adjusted`` the session may have corrected)."""
    kind = kind_of(gate)
    n: int | None = None
    if gate.selector is not None:
        candidate, sliced, n = slice_sides(gate, candidate, reference)
        reference = sliced if kind.paired else None
    value = candidate.metrics[gate.metric]
    ref = reference.metrics[gate.metric] if kind.paired and reference is not None else None
    side = reference if ref is not None else None
    if n is None:
        judged, note = kind.judge(gate, candidate, side, value, ref, evidence), None
    else:  # a slice: too few queries decide nothing; otherwise its CI backs the kind's verdict
        judged, note = too_few(gate, n) or judge_slice(
            gate,
            kind.judge(gate, candidate, side, value, ref, evidence),
            kind.on_slice(gate, candidate, side, evidence),
            n,
        )
    if ref is None or side is None:
        return Outcome(gate, judged.verdict, value, note=note, n_queries=n)
    losers = _losers(side.per_query.get(gate.metric, {}), candidate.per_query.get(gate.metric, {}))
    return Outcome(
        gate,
        judged.verdict,
        value,
        ref,
        value - ref,
        evidence.p_value,
        losers,
        evidence,
        judged.queries_needed,
        note,
        n,
    )


def evaluate_gate(gate: Gate, candidate: Scores, reference: Scores | None) -> Outcome:
    """One gate on its own (no multiplicity correction): evidence, then the kind's verdict."""
    return judge_gate(gate, candidate, reference, gather_evidence(gate, candidate, reference))


def explain(
    outcome: Outcome, queries: Mapping[str, str], reference_label: str = "baseline", candidate_label: str = "candidate"
) -> str:
    """A failure message a person can act on; the labels name the two sides (``first stage`` and ``reranked``
    for the reranker's gain)."""
    g, kind = outcome.gate, kind_of(outcome.gate)
    if outcome.note is not None:
        where = f" on [{g.selector}]" if g.selector is not None else ""  # a history gate's note is on all queries
        head = f"{g.subject}{where}: {candidate_label} {outcome.candidate:.4f}"
        if outcome.reference is not None:
            head += f", {reference_label} {outcome.reference:.4f}, {outcome.uncertainty()}"
        head += f"; {outcome.note} (gate {g.expr})"
    elif not kind.paired:
        return kind.explain(outcome)
    elif outcome.reference is None or outcome.delta is None:
        raise ValueError(f"outcome of {g.expr} has no reference value to explain")
    else:
        head = (
            f"{g.subject}: {reference_label} {outcome.reference:.4f}, {candidate_label} {outcome.candidate:.4f}, "
            f"{outcome.uncertainty() or f'delta {outcome.delta:+.4f}'}; {kind.explain(outcome)}"
        )
    if outcome.losers:
        head += "\nqueries that lost most:"
        for qid, ref, cand in outcome.losers:
            text = queries.get(qid, "")
            text = text if len(text) <= 70 else text[:67] + "..."
            head += f"\n  {qid}  {reference_label} {ref:.4f} -> {candidate_label} {cand:.4f}  {text!r}"
    return head
