"""The parity rule any family's served-run check is judged by (evalsuite.checks.parity), on runs built by hand."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from evalsuite.checks.parity import Parity, rank_overlap
from evalsuite.reports.parity import metric_rows


@dataclass
class Run:
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    ranking: dict[str, dict[str, float]] = field(default_factory=dict)


def ranking(order: list[str]) -> dict[str, float]:
    return {d: float(len(order) - i) for i, d in enumerate(order)}


DOCS = [f"d{i}" for i in range(20)]
REF = Run(
    {"ndcg@10": 0.80, "recall@10": 0.90},
    {"ndcg@10": {"q1": 0.9, "q2": 0.7}, "recall@10": {"q1": 1.0, "q2": 0.8}},  # {metric: {qid: score}}
    {"q1": ranking(DOCS), "q2": ranking(DOCS)},
)


def served(ndcg: float, q2_order: list[str]) -> Run:
    return Run(
        {"ndcg@10": ndcg, "recall@10": 0.90, "mrr@10": 0.5},  # a metric the reference lacks is not compared
        {"ndcg@10": {"q1": 0.9, "q2": 0.7 + 2 * (ndcg - 0.8)}, "recall@10": {"q1": 1.0, "q2": 0.8}},
        {"q1": ranking(DOCS), "q2": ranking(q2_order)},
    )


def test_rank_overlap_is_the_share_of_the_reference_top10_kept():
    swapped = DOCS[10:12] + DOCS[:10] + DOCS[12:]  # d10, d11 first: 8 of the reference's top 10 kept
    got = rank_overlap(REF.ranking, {"q1": ranking(DOCS), "q2": ranking(swapped)})
    assert got == {"q1": 1.0, "q2": len(set(DOCS[:10]) & set(swapped[:10])) / 10} == {"q1": 1.0, "q2": 0.8}


def test_the_verdict_is_the_delta_then_the_overlap():
    same = Parity.of(REF, served(0.80, DOCS))
    assert (same.metrics, same.primary, same.mean_overlap) == (["ndcg@10", "recall@10"], "ndcg@10", 1.0)
    v = same.verdict("x", "x check", tolerance=0.005, min_overlap=0.9, details={})
    assert v.passed is True and v.message.startswith("x check: ndcg@10 endpoint 0.8000 vs reference 0.8000")
    moved = Parity.of(REF, served(0.79, DOCS))
    assert moved.deltas["ndcg@10"] == pytest.approx(-0.01)
    v = moved.verdict("x", "x check", tolerance=0.005, min_overlap=0.9, details={}, served_word="served")
    assert v.passed is False and v.message.startswith("x check: |delta ndcg@10| 0.0100 > 0.005 (ndcg@10 served 0.79")
    reordered = Parity.of(REF, served(0.80, DOCS[6:] + DOCS[:6]))  # q2 keeps d6..d9, 4 of 10: mean 0.7
    assert reordered.mean_overlap == pytest.approx(0.7) and reordered.lowest == ["q2", "q1"]
    v = reordered.verdict("x", "x check", tolerance=0.005, min_overlap=0.9, details={}, others=False)
    assert v.passed is False and "mean top-10 overlap 0.700 < 0.9 although |delta ndcg@10| 0.0000" in v.message
    rows = metric_rows({"metrics": moved.metric_details()})
    assert [r[:4] for r in rows] == [("ndcg@10", 0.8, 0.79, "-0.0100"), ("recall@10", 0.9, 0.9, "+0.0000")]
