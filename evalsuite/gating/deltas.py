"""The candidate's deltas against the baseline or reference run, each with its CI, for the session report:
every metric (the summary's A/B rows) and every reported slice. Nothing here computes a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.errors import EvalsuiteError
from ..run.result import Result
from .gates import Scores
from .reference import Reference

if TYPE_CHECKING:
    from ..run.prepared import Prepared
    from ..scoring.stats import Comparison
    from ..slicing.compare import SliceMove


def slice_moves_against(result: Result | None, ref: Reference | None, prepared: Prepared) -> list[SliceMove]:
    """Every reported slice's delta against the baseline or reference run, with its CI, largest first."""
    if result is None or result.slices is None or ref is None:
        return []
    if ref.problems(prepared.contract, prepared.dataset.identity.sha256):
        return []  # not comparable: the contract item says why
    from ..slicing.compare import slice_moves

    cand = ref.comparable(Scores("candidate", result.metrics, result.per_query))
    return slice_moves(
        result.slices,
        cand.per_query,
        ref.scores.per_query,
        [m for m in result.metrics if m in ref.scores.per_query],
    )


def comparisons(result: Result | None, ref: Reference | None) -> dict[str, Comparison]:
    """Every metric's delta against the baseline or reference run with its CI (empty without both sides),
    so the summary's A/B rows carry their uncertainty whether or not a gate tests them."""
    if result is None or ref is None:
        return {}
    from ..scoring.stats import compare, paired_scores

    cand = ref.comparable(Scores("candidate", result.metrics, result.per_query))
    metrics = [m for m in cand.per_query if m in ref.scores.per_query]
    if not metrics:
        return {}
    try:
        _, a, b = paired_scores(cand.per_query, ref.scores.per_query, metrics)
    except EvalsuiteError:
        return {}  # the sides share no query: the contract item already says why
    return dict(zip(metrics, compare(a, b), strict=True))
