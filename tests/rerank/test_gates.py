"""Gate helpers: either stage's scores, and the minimum-gain decision from the interval of the gain."""

from __future__ import annotations

import pytest

from evalsuite.rerank.gain import StageDelta, stage_deltas
from evalsuite.rerank.gates import explain_gain, judge_gain


def delta(d, low=None, high=None, lower=None):
    return StageDelta("ndcg@10", 0.5, 0.5 + d, d, 40, low=low, high=high, lower_bound=lower)


@pytest.mark.parametrize(
    "d, expected",
    [
        (delta(0.05, 0.02, 0.08, 0.025), "pass"),  # lower bound above the required gain
        (delta(0.02, -0.01, 0.05, -0.005), "inconclusive"),
        (delta(-0.03, -0.06, 0.005, -0.055), "fail"),  # the whole interval below 0.01
        (delta(0.02), "pass"),
        (delta(0.0), "fail"),  # no interval: the point gain decides
        # the boundaries (bugs caught: > for >=, <= for <, `and` for `or` in the no-interval test)
        (delta(0.03, 0.005, 0.06, 0.01), "pass"),  # lower bound exactly the required gain
        (delta(-0.02, -0.05, 0.01, -0.045), "inconclusive"),  # upper bound exactly the required gain
        (delta(0.01), "pass"),  # point gain exactly the required gain
        (delta(0.0, high=0.5), "fail"),  # half an interval is no interval: the point gain decides
        (delta(0.5, lower=-0.5), "pass"),
    ],
)
def test_judge_gain(d, expected):
    assert judge_gain(d, 0.01) == expected
    assert expected in explain_gain(d, 0.01)


def test_stage_deltas_point_values_are_reranked_minus_first():
    first = {"m": {"a": 0.0, "b": 1.0, "c": 0.5}}
    reranked = {"m": {"a": 1.0, "b": 1.0, "c": 0.0, "extra": 1.0}}
    (d,) = stage_deltas(first, reranked, ["m"])
    assert d.n_queries == 3 and d.first == pytest.approx(0.5) and d.reranked == pytest.approx(2 / 3)
    assert d.delta == pytest.approx(1 / 6)
    if d.low is not None:  # evalsuite.scoring.stats present: the interval contains the point delta
        assert d.low <= d.delta <= d.high
