"""Gates on a slice: ``ndcg@10[topic=finance]:max_drop=0.02``, ``recall@100[doclen>256]>=0.6``.

The selector is parsed once, for every kind, in the gate grammar (:func:`split_selector`). A slice
gate judges the slice's queries only: both sides are restricted to the queries the candidate's
slice index puts in the slice (membership of the candidate's contract; the reference side is paired
on the same queries), and each metric becomes the mean of the per-query values over them.

On a slice, a verdict must be backed by the slice's own uncertainty, never by a point estimate of
a handful of queries:

* fewer than :data:`~evalsuite.slicing.MIN_QUERIES` queries: INCONCLUSIVE, saying so;
* a floor: pass when the one-sided 95% lower bound of the slice mean (bootstrap over its queries) is
  >= the floor, fail when the upper bound is below it, else INCONCLUSIVE;
* ``max_drop`` / ``max_rel_drop``: pass when the one-sided 95% lower bound of the paired delta is
  >= -allowed (``max_rel_drop``: the allowed fraction of the reference's slice value), fail when the
  upper bound is below -allowed, else INCONCLUSIVE (the CI is too wide to decide);
* ``non_inferior`` and ``no_significant_drop`` already judge with their test.

Each kind says which applies (:meth:`~evalsuite.gating.gates.GateKind.on_slice`, with the helpers below).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from ..base.errors import SpecError
from ..rerank.gates import Stage
from ..slicing import MIN_QUERIES, Selector, SliceIndex, parse_selector
from .gates import Evidence, Gate, Judgement, Scores, SliceBounds, bracket
from .stages import split_stage

_SLICED = re.compile(r"^\s*(?P<metric>[^\[\]:<>=\s]+)\s*\[(?P<selector>[^\]]*)\]\s*(?P<rest>.*)$")


def split_selector(expr: str) -> tuple[str, Selector | None, Stage | None]:
    """``ndcg@10[stage=reranked,topic=finance]:max_drop=0.02`` -> (``ndcg@10:max_drop=0.02``, the slice's
    selector, the stage); the brackets may hold a slice, a stage (`stages.py`) or both."""
    if "[" not in expr and "]" not in expr:
        return expr, None, None
    m = _SLICED.match(expr)
    if not m:
        raise SpecError(
            f"gate {expr!r}: write the slice or stage right after the metric, e.g. ndcg@10[topic=finance]"
            ":max_drop=0.02, recall@100[doclen>256]>=0.6 or ndcg@10[stage=reranked]>=0.4"
        )
    stage, inside = split_stage(m.group("selector"), expr)
    selector = (
        None if stage is not None and not inside.strip() else parse_selector(inside, where=f"gate {expr!r}: slice")
    )
    return m.group("metric") + m.group("rest"), selector, stage


def with_selector(canonical: str, metric: str, selector: Selector | None, stage: Stage | None = None) -> str:
    """The canonical expression with the stage and slice after the metric."""
    return bracket(metric, stage, selector.text if selector else None) + canonical[len(metric) :]


def restrict(scores: Scores, qids: Collection[str]) -> Scores:
    """The side on ``qids`` only: per-query values kept, each metric the mean over the kept queries."""
    keep = set(qids)
    per_query = {m: {q: s for q, s in pq.items() if q in keep} for m, pq in scores.per_query.items()}
    metrics = {m: (sum(pq.values()) / len(pq) if pq else 0.0) for m, pq in per_query.items()}
    return Scores(scores.label, metrics, per_query, scores.slices)


def slice_sides(gate: Gate, candidate: Scores, reference: Scores | None) -> tuple[Scores, Scores | None, int]:
    """Both sides restricted to the gate's slice, and how many queries it holds (both sides scored)."""
    assert gate.selector is not None
    if candidate.slices is None:
        raise SpecError(
            f"gate {gate.expr!r}: this side has no slice index (lengths and metadata of its queries); "
            "slice gates apply to runs of evalsuite's pipeline"
        )
    qids = set(candidate.slices.members(parse_selector(gate.selector)))
    if reference is not None:
        qids &= set(next(iter(reference.per_query.values()), {}))
    cand = restrict(candidate, qids)
    ref = restrict(reference, qids) if reference is not None else None
    return cand, ref, len(next(iter(cand.per_query.values()), {}).keys() & qids)


def too_few(gate: Gate, n: int) -> tuple[Judgement, str] | None:
    """INCONCLUSIVE with its note when the slice has fewer than :data:`MIN_QUERIES` queries; None otherwise."""
    if n >= MIN_QUERIES:
        return None
    return Judgement("inconclusive"), (
        f"slice [{gate.selector}] has {n} queries, fewer than {MIN_QUERIES}: too few to decide"
    )


def floor_on_slice(gate: Gate, candidate: Scores) -> SliceBounds:
    """A floor on a slice: the one-sided 95% bounds of the slice mean (bootstrap over its queries)."""
    import numpy as np

    from ..scoring.stats import decide, mean_bootstrap

    values = np.array(list(candidate.per_query[gate.metric].values()))
    ci = mean_bootstrap(values)[0]
    return SliceBounds(
        decide(ci, -gate.threshold),  # lower bound >= floor passes, upper bound < floor fails
        f"one-sided 95% bounds of the slice mean {ci.lower_bound:.4f} / {ci.upper_bound:.4f}",
        f"against the floor {gate.threshold:g}",
    )


def drop_on_slice(evidence: Evidence, allowed: float) -> SliceBounds:
    """An allowed drop on a slice: the one-sided 95% bounds of the paired delta against ``-allowed``."""
    from ..scoring.stats import decide

    if evidence.comparison is None:
        raise ValueError("a drop on a slice is judged on the paired comparison, which the evidence lacks")
    ci = evidence.comparison.ci
    return SliceBounds(
        decide(ci, allowed),
        f"one-sided 95% bounds of the delta {ci.lower_bound:+.4f} / {ci.upper_bound:+.4f}",
        f"against the allowed drop -{allowed:.4g}",
    )


def judge_slice(
    gate: Gate, kind_verdict: Judgement, on_slice: SliceBounds | None, n: int
) -> tuple[Judgement, str | None]:
    """The verdict of a slice gate with enough queries (see the module doc) and the note that explains it:
    ``on_slice``, what the kind's :meth:`~.gates.GateKind.on_slice` says (None: its own verdict stands)."""
    if on_slice is None:
        return kind_verdict, None
    tail = {
        "pass": "passes",
        "fail": "fails",
        "inconclusive": "straddle it: the CI is too wide to decide on this slice",
    }[on_slice.verdict]
    head = f"slice [{gate.selector}] has {n} queries"
    return Judgement(on_slice.verdict), f"{head}; {on_slice.bounds} {on_slice.against}: {tail}"


def check_gate_slices(gates: Collection[Gate], index: SliceIndex, where: str) -> None:
    """Before encoding: every slice gate names a field and value the dataset has (SpecError listing the known
    ones otherwise)."""
    for g in gates:
        if g.selector is not None:
            index.check(parse_selector(g.selector), f"{where}: gate {g.expr!r}")
