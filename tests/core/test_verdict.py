"""The one verdict type: gates, reranker gains, capacity gates and canary checks answer with it."""

from __future__ import annotations

import pytest

from evalsuite.base import verdict


@pytest.mark.parametrize(
    "given, expected",
    [
        ([], None),
        (["pass", "pass"], "pass"),
        (["pass", "inconclusive", "pass"], "inconclusive"),
        (["inconclusive", "fail", "pass"], "fail"),  # fail over inconclusive over pass, whatever the order
        (["fail", "inconclusive"], "fail"),
    ],
)
def test_worst(given, expected):
    assert verdict.worst(given) == expected
    assert verdict.worst(iter(given)) == expected  # any iterable, read once


def test_of_label_and_exit_status():
    assert [verdict.of(p) for p in (True, False, None)] == ["pass", "fail", "inconclusive"]
    assert [verdict.label(v) for v in verdict.VERDICTS] == ["PASS", "FAIL", "INCONCLUSIVE"]
    assert verdict.exit_status(["pass", "inconclusive"]) == 0
    assert verdict.exit_status(iter(["pass", "fail"])) == 1
    assert verdict.exit_status([]) == 0


def test_every_family_uses_it():
    """gating's GateVerdict, stats' Decision and the rerank gain's verdict are the one type, not copies of it."""
    from evalsuite.gating import gates
    from evalsuite.rerank import gates as rerank_gates
    from evalsuite.scoring import stats

    assert gates.GateVerdict is verdict.Verdict and stats.Decision is verdict.Verdict
    assert rerank_gates.judge_gain.__annotations__["return"] == "Verdict"
