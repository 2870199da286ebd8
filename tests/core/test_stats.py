"""stats.py against independent computations: a slow loop bootstrap, exact enumeration, coverage on
synthetic data with a known mean, hand-worked corrections and the closed-form detectable effect."""

import itertools
import json
import math

import numpy as np
import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.scoring import stats
from evalsuite.scoring.stats import DeltaCI

Z95, Z80 = 1.6448536269514722, 0.8416212335729143  # standard normal quantiles 0.95 and 0.80


def loop_bootstrap(d: np.ndarray, n_resamples: int, seed: int, confidence: float) -> list[tuple[float, ...]]:
    """The documented seed logic, resample by resample, with a plain Python mean."""
    n = len(d)
    rng = np.random.default_rng(seed)
    means = []
    for start in range(0, n_resamples, stats._BLOCK):
        for row in rng.integers(0, n, size=(min(stats._BLOCK, n_resamples - start), n), dtype=np.uint32):
            means.append([sum(d[i, j] for i in row) / n for j in range(d.shape[1])])
    a = 1 - confidence
    out = []
    for j in range(d.shape[1]):
        col = np.array([m[j] for m in means])
        out.append(tuple(float(np.quantile(col, p)) for p in (a / 2, 1 - a / 2, a, 1 - a)))
    return out


def test_bootstrap_equals_a_loop_over_resamples():
    rng = np.random.default_rng(5)
    ref = rng.random((37, 3))
    cand = ref + rng.normal([0.0, 0.05, -0.02], 0.1, size=(37, 3))
    for confidence in (0.95, 0.9):
        # 1100 resamples: more than one matrix-product group (1024 rows here) and a partial block
        cis = stats.paired_bootstrap(cand, ref, n_resamples=1100, seed=11, confidence=confidence)
        expected = loop_bootstrap(cand - ref, 1100, 11, confidence)
        for ci, (low, high, lower, upper) in zip(cis, expected, strict=False):
            assert (ci.low, ci.high, ci.lower_bound, ci.upper_bound) == pytest.approx(
                (low, high, lower, upper), abs=1e-12
            )
            assert ci.low < ci.lower_bound < ci.delta < ci.upper_bound < ci.high
    assert [ci.delta for ci in cis] == pytest.approx((cand - ref).mean(axis=0).tolist())
    assert cis[0].n_queries == 37 and cis[0].n_resamples == 1100 and cis[0].confidence == 0.9


def test_bootstrap_is_seeded_and_columns_are_independent_of_each_other():
    rng = np.random.default_rng(0)
    ref, cand = rng.random((50, 4)), rng.random((50, 4))
    a = stats.paired_bootstrap(cand, ref, n_resamples=500, seed=3)
    assert a == stats.paired_bootstrap(cand, ref, n_resamples=500, seed=3)
    assert a != stats.paired_bootstrap(cand, ref, n_resamples=500, seed=4)
    for j in range(4):  # a metric's interval does not depend on which other metrics share the call
        (alone,) = stats.paired_bootstrap(cand[:, j], ref[:, j], n_resamples=500, seed=3)
        assert alone.to_dict() == pytest.approx(a[j].to_dict(), rel=1e-12, abs=1e-15)


def test_bootstrap_interval_covers_the_true_mean_at_its_confidence():
    """300 synthetic experiments of 200 queries with a known true mean difference of 0.02."""
    rng = np.random.default_rng(2024)
    two_sided = lower = upper = 0
    trials = 300
    for t in range(trials):
        ref = rng.random(200)
        cand = np.clip(ref + 0.02 + rng.normal(0, 0.15, 200), -5, 5)
        true = 0.02  # no clipping happens at these values
        (ci,) = stats.paired_bootstrap(cand, ref, n_resamples=1000, seed=t)
        two_sided += ci.low <= true <= ci.high
        lower += true >= ci.lower_bound
        upper += true <= ci.upper_bound
    assert 0.91 <= two_sided / trials <= 0.98
    assert 0.91 <= lower / trials <= 0.985 and 0.91 <= upper / trials <= 0.985


def exact_sign_flip(d: np.ndarray) -> float:
    obs = abs(d.sum())
    hits = sum(
        abs(sum(s * x for s, x in zip(signs, d, strict=False))) >= obs - 1e-12
        for signs in itertools.product((1, -1), repeat=len(d))
    )
    return hits / 2 ** len(d)


def test_sign_flip_exact_on_enumerable_cases():
    # by hand: sums of +-1 +-2 +-3 are 6, 4, 2, 0, 0, -2, -4, -6; only +-6 reach |6|
    assert stats.sign_flip_test(np.array([1.0, 2.0, 3.0]), np.zeros(3))[0] == 0.25
    d = np.array([0.1, 0.2, -0.05, 0.3, 0.0, 0.1, -0.2, 0.25])
    p = stats.sign_flip_test(d[:, None] + 1, np.ones((8, 1)))
    assert p[0] == pytest.approx(exact_sign_flip(d), abs=1e-15)
    assert stats.sign_flip_test(np.zeros(5), np.zeros(5))[0] == 1.0


def test_sign_flip_monte_carlo_approaches_the_exact_value_with_the_plus_one_correction():
    rng = np.random.default_rng(9)
    d = rng.normal(0.15, 0.4, 15)  # 2**15 > 10,000 resamples: Monte Carlo
    p = stats.sign_flip_test(np.c_[d, -d, 0 * d], np.zeros((15, 3)), n_resamples=10_000, seed=1)
    exact = exact_sign_flip(d)
    assert 0.01 < exact < 0.5 and p[0] == pytest.approx(exact, abs=0.012) and p[1] == p[0] and p[2] == 1.0
    strong = np.full(40, 0.1)  # no random sign vector reaches the observed sum: p is 1/(B+1), never 0
    assert stats.sign_flip_test(strong, np.zeros(40), n_resamples=999)[0] == pytest.approx(1 / 1000)
    assert (
        stats.sign_flip_test(np.c_[d, d], np.zeros((15, 2)), seed=2)
        == stats.sign_flip_test(np.c_[d, d], np.zeros((15, 2)), seed=2)
    ).all()


def test_minimum_detectable_effect_formula_and_power():
    d = np.tile([0.1, -0.1], 50)  # n = 100, sd (ddof 1) = 0.1 * sqrt(100 / 99)
    mde = stats.minimum_detectable_effect(d)
    assert mde[0] == pytest.approx((Z95 + Z80) * 0.1 * math.sqrt(100 / 99) / 10, rel=1e-12)
    assert stats.minimum_detectable_effect(np.c_[d, 2 * d], alpha=0.05, power=0.8)[1] == pytest.approx(2 * mde[0])
    assert stats.minimum_detectable_effect(np.array([0.3]))[0] == math.inf
    # a true effect equal to the MDE is detected by a one-sided z test about 80% of the time
    rng = np.random.default_rng(1)
    effect = (Z95 + Z80) / math.sqrt(100)  # sd 1, n 100
    detected = 0
    for _ in range(2000):
        x = rng.normal(effect, 1.0, 100)
        detected += x.mean() / (x.std(ddof=1) / 10) > Z95
    assert 0.76 <= detected / 2000 <= 0.84


def test_queries_needed_decides_the_margin():
    rng = np.random.default_rng(4)
    d = rng.normal(0.0, 0.1, 25)
    d = d - d.mean() - 0.004  # mean -0.004, margin 0.01: gap 0.006
    sd = d.std(ddof=1)
    need = stats.queries_needed(d, 0.01)[0]
    assert need == math.ceil(((Z95 + Z80) * sd / 0.006) ** 2)
    (small,) = stats.non_inferiority(d, np.zeros(25), margin=0.01, n_resamples=2000)
    assert small.decision == "inconclusive" and small.queries_needed == need
    # the same differences observed on that many queries decide it
    tiled = np.resize(d, int(need))
    (large,) = stats.non_inferiority(tiled, np.zeros_like(tiled), margin=0.01, n_resamples=2000)
    assert large.decision == "pass"
    at_margin = np.array([-0.5, 0.5, -0.25, 0.25]) - 0.125  # mean exactly -0.125: no number of queries decides
    assert stats.queries_needed(at_margin, 0.125)[0] == math.inf
    assert small.to_dict()["queries_needed"] == need


def ci(lower: float, upper: float, low: float | None = None, high: float | None = None) -> DeltaCI:
    return DeltaCI(
        delta=(lower + upper) / 2,
        low=lower - 0.01 if low is None else low,
        high=upper + 0.01 if high is None else high,
        lower_bound=lower,
        upper_bound=upper,
        std_error=0.01,
        confidence=0.95,
        n_queries=100,
        n_resamples=1000,
        seed=0,
    )


def test_decision_edges():
    assert stats.decide(ci(-0.01, 0.02), 0.01) == "pass"  # exactly at -margin passes
    assert stats.decide(ci(-0.0100001, 0.02), 0.01) == "inconclusive"
    assert stats.decide(ci(-0.05, -0.0100001), 0.01) == "fail"
    assert stats.decide(ci(-0.05, -0.01), 0.01) == "inconclusive"  # upper bound at -margin is not below it
    # the one-sided bound decides, not the two-sided interval
    assert stats.decide(ci(-0.009, 0.02, low=-0.012), 0.01) == "pass"
    assert stats.decide(ci(-0.05, -0.011, high=-0.008), 0.01) == "fail"


def test_non_inferiority_verdicts_on_data():
    rng = np.random.default_rng(8)
    ref = rng.random((400, 3))
    cand = ref + np.c_[rng.normal(0.0, 0.05, 400), rng.normal(-0.05, 0.05, 400), np.zeros(400)]
    v = stats.non_inferiority(cand, ref, margin=0.01, n_resamples=2000)
    assert [x.decision for x in v] == ["pass", "fail", "pass"]
    few = stats.non_inferiority(cand[:20, 0] - 0.005, ref[:20, 0], margin=0.01, n_resamples=2000)[0]
    assert few.decision == "inconclusive" and few.queries_needed is not None and few.queries_needed > 20
    assert "inconclusive" in few.summary() and "20 queries" in few.summary()
    per_metric = stats.non_inferiority(cand, ref, margin=[0.01, 0.1, 0.0], n_resamples=2000)
    assert [x.decision for x in per_metric] == ["pass", "pass", "pass"] and per_metric[1].margin == 0.1
    json.dumps([x.to_dict() for x in v])
    with pytest.raises(SpecError, match="margin"):
        stats.non_inferiority(cand, ref, margin=-0.01)
    with pytest.raises(SpecError, match="margin"):
        stats.non_inferiority(cand, ref, margin=[0.01, 0.01])


def test_compare_bundles_interval_p_value_and_mde():
    rng = np.random.default_rng(3)
    ref = rng.random((60, 2))
    cand = ref + rng.normal(0.02, 0.1, (60, 2))
    out = stats.compare(cand, ref, n_resamples=500, seed=2)
    assert out[1].ci == stats.paired_bootstrap(cand, ref, n_resamples=500, seed=2)[1]
    assert out[1].p_value == stats.sign_flip_test(cand, ref, n_resamples=500, seed=2)[1]
    assert out[1].mde == stats.minimum_detectable_effect(cand - ref)[1]
    json.dumps(out[0].to_dict())


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # Holm: sorted 0.005 0.01 0.03 0.04 times 4 3 2 1 = 0.02 0.03 0.06 0.04, running max 0.02 0.03 0.06 0.06
    assert stats.holm(p).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: sorted times 4/1 4/2 4/3 4/4 = 0.02 0.02 0.04 0.04, running min from the top
    assert stats.benjamini_hochberg(p).tolist() == pytest.approx([0.02, 0.04, 0.04, 0.02])
    q = [0.01, 0.02, 0.03, 0.04, 0.05]
    assert stats.holm(q).tolist() == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])
    assert stats.benjamini_hochberg(q).tolist() == pytest.approx([0.05] * 5)
    # BH step-up: 0.04 * 3/2 = 0.06 comes down to the 0.045 of the larger p-value
    assert stats.benjamini_hochberg([0.045, 0.01, 0.04]).tolist() == pytest.approx([0.045, 0.03, 0.045])
    assert stats.holm([0.5, 0.6]).tolist() == [1.0, 1.0]
    assert stats.benjamini_hochberg([0.9, 0.01]).tolist() == pytest.approx([0.9, 0.02])
    assert stats.holm([]).tolist() == []
    with pytest.raises(ContractError, match=r"\[0, 1\]"):
        stats.holm([0.1, float("nan")])


def test_paired_scores_aligns_queries():
    cand = {"m": {"q2": 0.5, "q1": 0.25, "q3": 1.0}, "n": {"q1": 0.0, "q2": 1.0, "q3": 0.5}}
    ref = {"m": {"q1": 0.5, "q2": 0.5}, "n": {"q2": 0.0, "q1": 1.0}}
    qids, a, b = stats.paired_scores(cand, ref, ["m", "n"])
    assert qids == ("q1", "q2") and a.tolist() == [[0.25, 0.0], [0.5, 1.0]] and b.tolist() == [[0.5, 1.0], [0.5, 0.0]]
    with pytest.raises(ContractError, match="missing on one side"):
        stats.paired_scores(cand, ref, ["m", "x"])
    with pytest.raises(ContractError, match="share no scored query"):
        stats.paired_scores({"m": {"a": 1.0}}, {"m": {"b": 1.0}}, ["m"])


def test_bad_input():
    with pytest.raises(ContractError, match="same shape"):
        stats.paired_bootstrap(np.zeros(3), np.zeros(4))
    with pytest.raises(ContractError, match="NaN"):
        stats.sign_flip_test(np.array([0.1, np.nan]), np.zeros(2))
    with pytest.raises(ContractError, match="no queries"):
        stats.paired_bootstrap(np.zeros(0), np.zeros(0))
    with pytest.raises(SpecError, match="confidence"):
        stats.paired_bootstrap(np.zeros(3), np.zeros(3), confidence=95)
    with pytest.raises(SpecError, match="n_resamples"):
        stats.sign_flip_test(np.zeros(3), np.zeros(3), n_resamples=0)


def hand_mean_interval(v: np.ndarray, n_resamples: int, seed: int, confidence: float) -> tuple[float, float]:
    """The documented seed logic with numpy fancy indexing: each resample's mean over its drawn queries."""
    n = len(v)
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [
            rng.integers(0, n, size=(min(stats._BLOCK, n_resamples - s), n), dtype=np.uint32)
            for s in range(0, n_resamples, stats._BLOCK)
        ]
    )
    means = v[idx].sum(axis=1) / n
    a = 1 - confidence
    return float(np.quantile(means, a / 2)), float(np.quantile(means, 1 - a / 2))


def test_mean_bootstrap_is_the_interval_of_the_mean_by_hand():
    """Bugs caught: dividing a resample's sum by n - 1, low and high swapped, a column's interval from another."""
    rng = np.random.default_rng(12)
    values = np.stack([rng.random(23), rng.random(23) ** 3], axis=1)  # two series, different spreads
    cis = stats.mean_bootstrap(values, n_resamples=700, seed=5)
    for j, ci in enumerate(cis):
        assert (ci.low, ci.high) == pytest.approx(hand_mean_interval(values[:, j], 700, 5, 0.95), abs=1e-12)
        assert ci.delta == pytest.approx(values[:, j].mean())
        assert ci.low < ci.delta < ci.high and ci.n_queries == 23
    (alone,) = stats.mean_bootstrap(values[:, 1], n_resamples=700, seed=5)
    assert alone.to_dict() == pytest.approx(cis[1].to_dict(), rel=1e-12)  # up to BLAS rounding
    # the floor gate's former call: the same interval as the difference against zero
    assert stats.paired_bootstrap(values, np.zeros_like(values), n_resamples=700, seed=5) == cis
