"""Every verdict pinned at its edges, without a model: gate arithmetic, non-inferiority against an
independent bootstrap, Holm across a session's significance-based gates, the verdict policy."""

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.gates import Scores
from evalsuite.gating.judge import evaluate_gate, explain
from evalsuite.gating.kinds import parse_gate
from evalsuite.gating.verdicts import GateRequest, VerdictPolicy, judge_all
from evalsuite.scoring.metrics import paired_test


def _scores(label, values, metric="ndcg@10"):
    values = [float(v) for v in values]
    return Scores(label, {metric: sum(values) / len(values)}, {metric: {f"q{i:03d}": v for i, v in enumerate(values)}})


def _verdict(expr, cand, ref):
    return evaluate_gate(
        parse_gate(expr), _scores("candidate", cand), _scores("baseline", ref) if ref else None
    ).verdict


def test_relative_drop_divides_by_the_baseline():
    # baseline 0.5, candidate 0.4: 20% of the baseline, 25% of the candidate
    assert _verdict("ndcg@10:max_rel_drop=22%", [0.4] * 4, [0.5] * 4) == "pass"  # divided by the candidate: fail
    assert _verdict("ndcg@10:max_rel_drop=18%", [0.4] * 4, [0.5] * 4) == "fail"
    # and an improvement is never a relative drop (a candidate below zero would flip the sign)
    assert _verdict("ndcg@10:max_rel_drop=0%", [0.6] * 4, [0.5] * 4) == "pass"


@pytest.mark.parametrize(
    "expr, cand, ref",
    [
        ("ndcg@10>=0.35", 0.35, None),  # exactly at the floor
        ("ndcg@10:max_drop=0.25", 0.5, 0.75),  # exactly the allowed drop (exact in binary)
        ("ndcg@10:max_drop=0.1", 0.7, 0.8),  # 0.8 - 0.7 = 0.10000000000000009: the allowed drop up to rounding
        ("ndcg@10:max_rel_drop=50%", 0.25, 0.5),  # exactly the allowed relative drop
    ],
)
def test_exactly_at_the_threshold_passes(expr, cand, ref):
    assert _verdict(expr, [cand] * 3, [ref] * 3 if ref is not None else None) == "pass"


@pytest.mark.parametrize(
    "expr, cand, ref",
    [
        ("ndcg@10>=0.35", 0.3499, None),
        ("ndcg@10:max_drop=0.25", 0.4999, 0.75),
        ("ndcg@10:max_rel_drop=50%", 0.2499, 0.5),
    ],
)
def test_just_beyond_the_threshold_fails(expr, cand, ref):
    assert _verdict(expr, [cand] * 3, [ref] * 3 if ref is not None else None) == "fail"


def test_a_significant_improvement_passes_a_no_drop_gate():
    rng = np.random.default_rng(3)
    ref = rng.uniform(0.2, 0.6, 40)
    better = ref + 0.2 + rng.normal(0, 0.02, 40)
    out = evaluate_gate(parse_gate("ndcg@10:no_significant_drop"), _scores("c", better), _scores("b", ref))
    assert out.p_value < 1e-6 and out.delta > 0.19
    assert out.verdict == "pass"
    worse = evaluate_gate(
        parse_gate("ndcg@10:no_significant_drop"), _scores("c", ref - 0.2 + rng.normal(0, 0.02, 40)), _scores("b", ref)
    )
    assert worse.verdict == "fail"


def _bootstrap_bounds(d, n=10_000, seed=0, confidence=0.95):
    """An independent loop bootstrap of the mean (not the vectorised one in stats.py)."""
    rng = np.random.default_rng(seed)
    means = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(n)])
    return np.quantile(means, [1 - confidence, confidence])


@pytest.mark.parametrize("shift, expected", [(0.0, "pass"), (-0.08, "fail"), (-0.012, "inconclusive")])
def test_non_inferiority_decisions_agree_with_an_independent_bootstrap(shift, expected):
    rng = np.random.default_rng(7)
    ref = rng.uniform(0.3, 0.9, 60)
    cand = np.clip(ref + shift + rng.normal(0, 0.03, 60), 0, 1)
    out = evaluate_gate(parse_gate("ndcg@10:non_inferior=0.01"), _scores("c", cand), _scores("b", ref))
    low, high = _bootstrap_bounds(cand - ref)
    oracle = "pass" if low >= -0.01 else "fail" if high < -0.01 else "inconclusive"
    assert out.verdict == oracle == expected
    c = out.comparison
    assert c.ci.delta == pytest.approx((cand - ref).mean())
    assert c.ci.lower_bound == pytest.approx(low, abs=0.003) and c.ci.upper_bound == pytest.approx(high, abs=0.003)
    d = cand - ref
    assert c.mde == pytest.approx((1.6448536 + 0.8416212) * d.std(ddof=1) / np.sqrt(60), rel=1e-5)
    if expected == "inconclusive":
        assert out.queries_needed is not None and out.queries_needed > 60
        assert f"about {out.queries_needed} queries would decide it" in explain(out, {})


def test_non_inferiority_lower_bound_exactly_at_the_margin_passes():
    # every per-query difference is -0.01: every bootstrap mean is -0.01, both bounds sit on the margin
    ref = np.full(30, 0.5)
    out = evaluate_gate(parse_gate("ndcg@10:non_inferior=0.01"), _scores("c", ref - 0.01), _scores("b", ref))
    assert out.comparison.ci.lower_bound == pytest.approx(-0.01)
    assert out.verdict == "pass"


def _with_p(target_t, n=30, base=0.5, seed=0):
    """Per-query scores whose paired t statistic against ``base`` is exactly ``target_t``."""
    z = np.random.default_rng(seed).normal(size=n)
    z = (z - z.mean()) / z.std(ddof=1)
    s = 0.05
    return base + target_t * s / np.sqrt(n) + s * z


def test_holm_corrects_the_session_and_none_turns_it_off():
    ref = np.full(30, 0.5)
    sides = {
        m: (_scores("c", _with_p(-2.3, seed=i), m), _scores("b", ref, m)) for i, m in enumerate(("ndcg@10", "mrr@10"))
    }
    raw = {m: paired_test(b.per_query[m], c.per_query[m]) for m, (c, b) in sides.items()}
    assert all(0.025 < p < 0.05 for p in raw.values())  # each alone is a significant drop
    requests = [GateRequest(m, parse_gate(f"{m}:no_significant_drop"), c, b) for m, (c, b) in sides.items()]
    requests.append(GateRequest("floor", parse_gate("ndcg@10>=0.1"), sides["ndcg@10"][0], None))
    plain = judge_all(requests, "none")
    assert [plain[m].verdict for m in raw] == ["fail", "fail"]
    corrected = judge_all(requests, "holm")
    assert [corrected[m].verdict for m in raw] == ["pass", "pass"]  # Holm: 2 * min(p) > 0.05
    for m, p in raw.items():
        assert corrected[m].evidence.p_adjusted == pytest.approx(min(1.0, 2 * max(raw.values())))
        assert corrected[m].p_value == pytest.approx(p)
    assert corrected["floor"].verdict == "pass" and corrected["floor"].comparison is None


def test_judge_all_keeps_one_bad_gate_from_stopping_the_others():
    c, b = _scores("c", [0.5] * 5), _scores("b", [0.5] * 5)
    out = judge_all(
        [
            GateRequest("bad", parse_gate("mrr@10:max_drop=0.1"), c, b),
            GateRequest("good", parse_gate("ndcg@10:max_drop=0.1"), c, b),
        ],
        "holm",
    )
    assert isinstance(out["bad"], SpecError) and "add it to --metrics" in str(out["bad"])
    assert out["good"].verdict == "pass"


def test_verdict_policy_values_and_statement():
    assert VerdictPolicy() == VerdictPolicy("fail", "holm")
    with pytest.raises(SpecError, match="choose fail, xfail, skip"):
        VerdictPolicy(inconclusive="warn")  # type: ignore[arg-type]
    line = VerdictPolicy("skip", "none").statement([("the gate items", 2)])
    assert "no correction over 2 significance test p-value(s) (2 in the gate items;" in line
    assert "--multiplicity holm to change" in line and "is skipped" in line


def test_statement_counts_the_p_values_each_family_corrected():
    line = VerdictPolicy().statement([("the gate items", 1), ("the sweep cells of d", 5), ("the sweep cells of e", 0)])
    assert "Holm-Bonferroni over 6 significance test p-value(s) (1 in the gate items; 5 in the sweep cells of d" in line
    assert "each family corrected on its own" in line and "sweep cells of e" not in line
    assert "no significance-tested gate, so no multiplicity correction" in VerdictPolicy().statement([("x", 0)])


def test_applied_statement_counts_only_significance_tested_outcomes():
    """A floor or a max_drop gate has no p-value to correct; a sweep cell's test is its dataset's family."""
    from evalsuite.gating.ledger import GateRecord, SweepCellRecord
    from evalsuite.gating.verdicts import applied_statement

    ref = _scores("baseline", [0.5, 0.6, 0.7, 0.8])
    cand = _scores("candidate", [0.4, 0.6, 0.6, 0.8])
    sig, floor, drop = (parse_gate(e) for e in ("ndcg@10:no_significant_drop", "ndcg@10>=0.1", "ndcg@10:max_drop=0.5"))
    out = {k: judge_all([GateRequest(k, g, cand, ref)], "holm")[k] for k, g in (("s", sig), ("f", floor), ("m", drop))}
    records = {
        "d": [GateRecord("d", "gate[s]", out["s"]), GateRecord("d", "gate[f]", out["f"])],
        "e": [
            GateRecord("e", "gate[m]", out["m"]),
            SweepCellRecord("e", "sweep[a]", "a", out["s"]),
            SweepCellRecord("e", "sweep[b]", "b", out["s"]),
            SweepCellRecord("e", "sweep[c]", "c", out["f"]),
        ],
    }
    line = applied_statement(VerdictPolicy(), records)
    assert "over 3 significance test p-value(s) (1 in the gate items; 2 in the sweep cells of e" in line, line
    assert applied_statement(VerdictPolicy(), {"d": []}) is None
    floor_only = applied_statement(VerdictPolicy(), {"d": [GateRecord("d", "gate[f]", out["f"])]})
    assert floor_only is not None and "no significance-tested gate" in floor_only


def test_non_inferiority_with_the_point_inside_the_margin_but_the_bound_outside_is_inconclusive():
    # the mean drop (-0.004) is within the margin, the one-sided lower bound is not: undecided, never a pass
    # (bug caught: passing on the point delta instead of the lower bound)
    ref = np.full(40, 0.5)
    d = np.array([0.05, -0.058] * 20)  # mean -0.004, sd ~0.054 over 40 queries
    out = evaluate_gate(parse_gate("ndcg@10:non_inferior=0.01"), _scores("c", ref + d), _scores("b", ref))
    ci = out.comparison.ci
    assert -0.01 < ci.delta < 0 and ci.lower_bound < -0.01 <= ci.upper_bound
    assert out.verdict == "inconclusive"
    from evalsuite.scoring.stats import decide

    assert decide(ci, 0.01) == "inconclusive"
