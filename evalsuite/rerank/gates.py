"""What gates read from a two-stage result: the stage names, and a verdict on the gain.

Plain values only (no import of :mod:`evalsuite.gating`, which sits above this package): the gating
``min_gain`` kind calls :func:`judge_gain`; ``gating/stages.py`` picks a stage's scores.
"""

from __future__ import annotations

from typing import Literal

from ..base.verdict import Verdict
from .gain import StageDelta

Stage = Literal["first", "reranked"]
STAGES: tuple[str, ...] = ("first", "reranked")


def judge_gain(delta: StageDelta, min_gain: float) -> Verdict:
    """The reranker must add at least ``min_gain`` (reranked minus first stage, mean over queries).

    pass: the one-sided 95% lower bound of the gain is >= ``min_gain``; fail: the two-sided interval lies
    entirely below it; otherwise inconclusive. Without an interval (no :mod:`evalsuite.scoring.stats`), the point
    gain decides pass or fail.
    """
    if delta.lower_bound is None or delta.high is None:
        return "pass" if delta.delta >= min_gain else "fail"
    if delta.lower_bound >= min_gain:
        return "pass"
    if delta.high < min_gain:
        return "fail"
    return "inconclusive"


def explain_gain(delta: StageDelta, min_gain: float) -> str:
    decision = judge_gain(delta, min_gain)
    ci = f", 95% CI [{delta.low:+.4f}, {delta.high:+.4f}]" if delta.low is not None else " (point gain, no interval)"
    return (
        f"{delta.metric}: first stage {delta.first:.4f}, reranked {delta.reranked:.4f}, gain {delta.delta:+.4f}"
        f"{ci}; required gain >= {min_gain:g}: {decision}"
    )
