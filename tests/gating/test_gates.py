import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.gates import Scores
from evalsuite.gating.judge import evaluate_gate, explain
from evalsuite.gating.kinds import default_gates, parse_gate


@pytest.mark.parametrize(
    "expr, kind, threshold, canonical",
    [
        ("ndcg@10>=0.35", "floor", 0.35, "ndcg@10>=0.35"),
        (" NDCG@10 >= 0.35 ", "floor", 0.35, "ndcg@10>=0.35"),
        ("ndcg@10:max_drop=0.01", "max_drop", 0.01, "ndcg@10:max_drop=0.01"),
        ("recall@100:max_rel_drop=2%", "max_rel_drop", 0.02, "recall@100:max_rel_drop=2%"),
        ("recall@100:max_rel_drop=0.02", "max_rel_drop", 0.02, "recall@100:max_rel_drop=0.02"),
        ("mrr@10:no_significant_drop", "no_significant_drop", 0.05, "mrr@10:no_significant_drop"),
        ("mrr@10:no_significant_drop=0.01", "no_significant_drop", 0.01, "mrr@10:no_significant_drop=0.01"),
    ],
)
def test_parse(expr, kind, threshold, canonical):
    g = parse_gate(expr)
    assert (g.kind, g.threshold, g.expr) == (kind, pytest.approx(threshold), canonical)


@pytest.mark.parametrize(
    "expr, msg",
    [
        ("ndcg@10~0.3", "is not understood"),
        ("ndcg@10:max_dorp=0.1", "unknown kind 'max_dorp'"),
        ("ndcg@10:max_drop", "needs a value"),
        ("ndcg@10:max_drop=-1", "must be >= 0"),
        ("bogus@10>=0.3", "not a ranx metric"),
        ("mrr@10:no_significant_drop=2", "alpha must be between 0 and 1"),
        ("ndcg@10>=abc", "is not understood"),
    ],
)
def test_parse_errors(expr, msg):
    with pytest.raises(SpecError, match=msg):
        parse_gate(expr)


def _scores(label, values):
    per_query = {"ndcg@10": {f"q{i}": v for i, v in enumerate(values)}}
    return Scores(label, {"ndcg@10": sum(values) / len(values)}, per_query)


def test_floor_and_drops():
    ref = _scores("baseline", [0.8] * 20)
    cand = _scores("candidate", [0.8] * 18 + [0.0, 0.2])
    assert evaluate_gate(parse_gate("ndcg@10>=0.5"), cand, None).passed
    out = evaluate_gate(parse_gate("ndcg@10:max_drop=0.01"), cand, ref)
    assert not out.passed and out.delta == pytest.approx(-0.07)
    assert out.losers[0] == ("q18", 0.8, 0.0)
    assert evaluate_gate(parse_gate("ndcg@10:max_drop=0.08"), cand, ref).passed
    assert not evaluate_gate(parse_gate("ndcg@10:max_rel_drop=5%"), cand, ref).passed
    assert evaluate_gate(parse_gate("ndcg@10:max_rel_drop=10%"), cand, ref).passed
    text = explain(out, {"q18": "why does bread rise"})
    assert "ndcg@10: baseline 0.8000, candidate 0.7300, delta -0.0700 (95% CI " in text
    assert "sign-flip p " in text and "MDE " in text and "; allowed drop 0.01" in text
    assert "q18  baseline 0.8000 -> candidate 0.0000  'why does bread rise'" in text


def test_significance_uses_per_query_scores():
    ref = _scores("baseline", [0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9] * 3)
    consistent_drop = _scores("candidate", [v - 0.1 for v in ref.per_query["ndcg@10"].values()])
    noisy = _scores(
        "candidate",
        [0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.6] + [0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9, 0.8, 0.7, 0.9] * 2,
    )
    gate = parse_gate("ndcg@10:no_significant_drop")
    sig = evaluate_gate(gate, consistent_drop, ref)
    assert not sig.passed and sig.p_value < 0.05
    assert evaluate_gate(gate, noisy, ref).passed


def test_reference_needed_and_metric_missing():
    cand = _scores("candidate", [0.5, 0.6])
    with pytest.raises(SpecError, match="--baseline FILE or --reference-rev"):
        evaluate_gate(parse_gate("ndcg@10:max_drop=0.1"), cand, None)
    with pytest.raises(SpecError, match="add it to --metrics"):
        evaluate_gate(parse_gate("mrr@10>=0.1"), cand, None)


def test_default_gates():
    assert [g.expr for g in default_gates(["ndcg@10", "mrr@10"])] == ["ndcg@10:max_drop=0.01", "mrr@10:max_drop=0.01"]
