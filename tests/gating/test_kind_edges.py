"""The gate kinds and the session's judging at their edges: tolerance boundaries, a zero reference, alpha's
open interval, the Holm family, errors per gate, the losers list and the explanations. Each test kills
mutants the behavioural gate tests let survive (docs/mutation.md)."""

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.gates import TOLERANCE, Evidence, Outcome, Scores, decided
from evalsuite.gating.judge import evaluate_gate, explain, gather_evidence
from evalsuite.gating.kinds import GATE_KINDS, forms, gate_help, kind_of, parse_gate
from evalsuite.gating.verdicts import GateRequest, VerdictPolicy, judge_all
from evalsuite.scoring import stats

METRIC = "ndcg@10"


def _scores(label: str, values: list[float]) -> Scores:
    per_query = {METRIC: {f"q{i}": v for i, v in enumerate(values)}}
    return Scores(label, {METRIC: sum(values) / len(values)}, per_query)


def _judge(expr: str, value: float, ref_value: float | None, evidence: Evidence | None = None) -> str:
    gate = parse_gate(expr)
    side = _scores("candidate", [value])
    return kind_of(gate).judge(gate, side, side, value, ref_value, evidence or Evidence()).verdict


def _ci(lower: float, upper: float) -> stats.Comparison:
    ci = stats.DeltaCI((lower + upper) / 2, lower - 0.01, upper + 0.01, lower, upper, 0.01, 0.95, 10, 100, 0)
    return stats.Comparison(ci, 0.5, 0.02)


def test_each_kind_passes_exactly_at_its_tolerance_boundary():
    t = 0.35
    assert _judge("ndcg@10>=0.35", t - TOLERANCE, None) == "pass"
    assert _judge("ndcg@10:max_drop=0.25", 0.0, 0.25 + TOLERANCE) == "pass"
    value = 1.0 - (0.5 + TOLERANCE)  # relative drop exactly 50% + tolerance (exact in binary)
    assert (1.0 - value) / 1.0 == 0.5 + TOLERANCE
    assert _judge("ndcg@10:max_rel_drop=50%", value, 1.0) == "pass"
    ev = Evidence(_ci(-0.01 - TOLERANCE, 0.02))
    assert _judge("ndcg@10:non_inferior=0.01", 0.5, 0.5, ev) == "pass"


def test_non_inferior_fails_only_strictly_below_the_margin():
    gate = parse_gate("ndcg@10:non_inferior=0.25")
    cand, ref = _scores("candidate", [0.5, 0.25, 0.0]), _scores("baseline", [0.5, 0.5, 0.5])
    at_margin = Evidence(_ci(-0.5, -0.25))  # the upper bound touches -margin: not shown to be worse
    judged = kind_of(gate).judge(gate, cand, ref, 0.25, 0.5, at_margin)
    assert judged.verdict == "inconclusive"
    assert kind_of(gate).judge(gate, cand, ref, 0.25, 0.5, Evidence(_ci(-0.5, -0.26))).verdict == "fail"


def test_non_inferior_with_the_mean_exactly_at_the_margin_cannot_be_decided_by_more_queries():
    ref = _scores("baseline", [0.5] * 10)
    cand = _scores("candidate", [0.6, 0.4] * 5)  # differences +-0.1, mean exactly 0 = -margin
    out = evaluate_gate(parse_gate("ndcg@10:non_inferior=0"), cand, ref)
    assert out.verdict == "inconclusive" and out.queries_needed is None
    assert "no number of queries would decide it at this delta" in explain(out, {})


def test_a_zero_reference_has_no_relative_drop():
    assert _judge("ndcg@10:max_rel_drop=2%", 0.0, 0.0) == "pass"
    out = evaluate_gate(parse_gate("ndcg@10:max_rel_drop=2%"), _scores("c", [0.0, 0.0]), _scores("b", [0.0, 0.0]))
    assert out.passed and "relative drop 0.00%, allowed 2.00%" in kind_of(out.gate).explain(out)
    worse = evaluate_gate(parse_gate("ndcg@10:max_rel_drop=2%"), _scores("c", [0.4, 0.4]), _scores("b", [0.5, 0.5]))
    assert kind_of(worse.gate).explain(worse) == "relative drop 20.00%, allowed 2.00% (gate ndcg@10:max_rel_drop=2%)"


@pytest.mark.parametrize("alpha", ["0", "1", "1.5"])
def test_alpha_lies_strictly_between_zero_and_one(alpha):
    with pytest.raises(SpecError, match="alpha must be between 0 and 1"):
        parse_gate(f"ndcg@10:no_significant_drop={alpha}")


@pytest.mark.parametrize(
    "expr", ["ndcg@10>=1e", "ndcg@10:max_drop=1e", "ndcg@10:min_gain=1e", "ndcg@10:no_significant_drop=1e"]
)
def test_a_malformed_value_names_the_gate(expr):
    with pytest.raises(SpecError, match=f"gate '{expr}': '1e' is not a number"):
        parse_gate(expr)


def test_no_significant_drop_fails_only_on_a_drop_below_alpha():
    expr = "ndcg@10:no_significant_drop=0.05"
    assert _judge(expr, 0.5, 0.5, Evidence(p_value=0.001, p_adjusted=0.001)) == "pass"  # no drop at all
    assert _judge(expr, 0.4, 0.5, Evidence(p_value=0.05, p_adjusted=0.05)) == "pass"  # p == alpha is not < alpha
    assert _judge(expr, 0.4, 0.5, Evidence(p_value=0.01, p_adjusted=0.049)) == "fail"
    assert _judge(expr, 0.4, 0.5, Evidence(p_value=0.01, p_adjusted=0.2)) == "pass"  # the adjusted p decides


def test_the_correction_field_says_which_kinds_test_significance():
    ref = _scores("baseline", [0.8, 0.7, 0.9, 0.6, 0.8, 0.7])
    cand = _scores("candidate", [0.7, 0.6, 0.85, 0.5, 0.75, 0.6])
    sig = gather_evidence(parse_gate("ndcg@10:no_significant_drop"), cand, ref)
    assert sig.correction == "none" and sig.p_adjusted == sig.p_value is not None
    assert gather_evidence(parse_gate("ndcg@10:max_drop=0.01"), cand, ref).correction is None


def test_holm_corrects_only_the_significance_gates_and_errors_stay_per_gate():
    ref = _scores("baseline", [0.8, 0.7, 0.9, 0.6, 0.8, 0.7])
    cand = _scores("candidate", [0.7, 0.6, 0.85, 0.5, 0.75, 0.6])
    other = Scores("baseline", {"mrr@10": 0.5, "recall@10": 0.5}, {"mrr@10": ref.per_query[METRIC]})
    requests = [
        GateRequest("sig", parse_gate("ndcg@10:no_significant_drop"), cand, ref),
        GateRequest("drop", parse_gate("ndcg@10:max_drop=0.5"), cand, ref),
        GateRequest("bad", parse_gate("ndcg@10:no_significant_drop"), cand, other),
    ]
    out = judge_all(requests, "holm")
    alone = evaluate_gate(parse_gate("ndcg@10:no_significant_drop"), cand, ref)
    sig = out["sig"]
    assert isinstance(sig, Outcome) and sig.evidence.p_adjusted == pytest.approx(alone.p_value)  # a family of one
    assert sig.evidence.correction == "holm"
    assert isinstance(out["drop"], Outcome) and out["drop"].evidence.correction is None
    assert isinstance(out["bad"], SpecError) and str(out["bad"]).endswith(
        "the baseline has no ndcg@10; it has mrr@10, recall@10"
    )


def test_a_floor_ignores_the_reference_and_counts_its_slice_queries():
    ref, cand = _scores("baseline", [0.9, 0.9]), _scores("candidate", [0.4, 0.6])
    out = evaluate_gate(parse_gate("ndcg@10>=0.5"), cand, ref)
    assert out.passed and out.reference is None and out.delta is None and out.losers == ()


def test_losers_are_the_five_largest_strict_drops():
    ref = _scores("baseline", [0.9] * 8)
    cand = _scores("candidate", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.9, 0.95])
    out = evaluate_gate(parse_gate("ndcg@10:max_drop=0.01"), cand, ref)
    assert [q for q, _, _ in out.losers] == ["q0", "q1", "q2", "q3", "q4"]
    few = evaluate_gate(parse_gate("ndcg@10:max_drop=0.01"), _scores("c", [0.1, 0.9, 0.9]), _scores("b", [0.9] * 3))
    assert [q for q, _, _ in few.losers] == ["q0"]  # unchanged queries did not lose


def test_explain_truncates_long_query_texts_and_names_missing_ones_empty():
    ref, cand = _scores("baseline", [0.9, 0.9]), _scores("candidate", [0.1, 0.5])
    out = evaluate_gate(parse_gate("ndcg@10:max_drop=0.01"), cand, ref)
    long = "x" * 71
    text = explain(out, {"q0": long})
    assert "\nqueries that lost most:\n  q0  baseline 0.9000 -> candidate 0.1000  '" + "x" * 67 + "...'" in text
    assert "\n  q1  baseline 0.9000 -> candidate 0.5000  ''" in text
    assert "'" + "x" * 70 + "'" in explain(out, {"q0": "x" * 70})


def test_explain_of_a_paired_outcome_without_reference_says_so():
    gate = parse_gate("ndcg@10:max_drop=0.01")
    with pytest.raises(ValueError, match=r"outcome of ndcg@10:max_drop=0\.01 has no reference value to explain"):
        explain(Outcome(gate, "fail", 0.5), {})


def test_explanations_of_interval_kinds():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.3, 0.9, 40)
    ref, cand = _scores("baseline", base.tolist()), _scores("candidate", (base - 0.2).tolist())
    out = evaluate_gate(parse_gate("ndcg@10:non_inferior=0.01"), cand, ref)
    c = out.comparison
    assert out.verdict == "fail"
    assert kind_of(out.gate).explain(out) == (
        f"one-sided 95% bounds {c.ci.lower_bound:+.4f} / {c.ci.upper_bound:+.4f} against margin -0.01"
        ": the drop exceeds the margin (gate ndcg@10:non_inferior=0.01)"
    )
    passed = evaluate_gate(parse_gate("ndcg@10:non_inferior=0.5"), cand, ref)
    assert decided(passed, "B", "F", "I") == "B (gate ndcg@10:non_inferior=0.5)"
    floor = evaluate_gate(parse_gate("ndcg@10>=0.9"), cand, None)
    assert kind_of(floor.gate).explain(floor).endswith(f"short by {0.9 - floor.candidate:.4f})")


def test_forms_and_help_list_every_kind():
    names = [k.form for k in GATE_KINDS]
    assert forms() == "use " + ", ".join(names[:-1]) + " or " + names[-1]
    assert gate_help().startswith("gate expression, repeatable: " + ", ".join(f"'{k.example}'" for k in GATE_KINDS))


def test_policy_statement_names_families_and_the_alternative():
    holm = VerdictPolicy()
    one = holm.statement([("the gate items", 2)])
    assert "Holm-Bonferroni over 2 significance test p-value(s) (2 in the gate items; --multiplicity none" in one
    assert "each family corrected on its own" not in one
    two = holm.statement([("the gate items", 1), ("the sweep cells of x", 3)])
    assert "(1 in the gate items; 3 in the sweep cells of x, each family corrected on its own;" in two
    none = VerdictPolicy(multiplicity="none").statement([("the gate items", 1), ("the sweep cells of x", 3)])
    assert "no correction over 4" in none and "each family" not in none and "--multiplicity holm to change" in none
    assert "no significance-tested gate, so no multiplicity correction" in holm.statement([("the gate items", 0)])
    assert "(--inconclusive fail|xfail|skip)" in one
    with pytest.raises(SpecError, match="multiplicity 'bonferroni': choose holm, none"):
        VerdictPolicy(multiplicity="bonferroni")  # type: ignore[arg-type]


def test_no_significant_drop_explains_the_p_value_that_decided():
    gate = parse_gate("ndcg@10:no_significant_drop")
    holm = Outcome(gate, "fail", 0.4, 0.5, -0.1, 0.01, (), Evidence(None, 0.01, 0.03, "holm"))
    assert kind_of(gate).explain(holm) == (
        "Holm-adjusted paired t-test p = 0.03 < alpha 0.05 (gate ndcg@10:no_significant_drop)"
    )
    raw = Outcome(gate, "fail", 0.4, 0.5, -0.1, 0.0123456, (), Evidence(None, 0.0123456, None, "none"))
    assert kind_of(gate).explain(raw) == "paired t-test p = 0.01235 < alpha 0.05 (gate ndcg@10:no_significant_drop)"


def test_min_gain_explains_its_bounds_against_the_required_gain():
    gate = parse_gate("ndcg@10:min_gain=0.01")
    ci = stats.DeltaCI(0.004, -0.002, 0.009, -0.001, 0.008, 0.003, 0.95, 40, 100, 0)
    out = Outcome(gate, "fail", 0.5, 0.496, 0.004, None, (), Evidence(stats.Comparison(ci, 0.2, 0.006)))
    assert kind_of(gate).explain(out) == (
        "gain one-sided 95% lower bound -0.0010, two-sided upper bound +0.0090, against the required gain 0.01"
        ": the reranker brings less than required (gate ndcg@10:min_gain=0.01)"
    )
