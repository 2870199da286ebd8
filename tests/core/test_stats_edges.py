"""stats.py at its edges: the boundaries of every argument check, defaults, pass-through of options, dtype
handling and the documented seed logic of the Monte Carlo sign-flip test. Each test kills mutants that the
behavioural tests in test_stats.py let survive (docs/mutation.md)."""

import itertools
import math
import warnings

import numpy as np
import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.scoring import stats

Z95, Z80 = 1.6448536269514722, 0.8416212335729143  # standard normal quantiles 0.95 and 0.80


def loop_sign_flip(d: np.ndarray, n_resamples: int, seed: int) -> float:
    """The documented Monte Carlo seed logic, resample by resample, one column, plain Python sums."""
    n = len(d)
    rng = np.random.default_rng(seed)
    observed = abs(sum(d))
    extreme = 0
    for start in range(0, n_resamples, stats._BLOCK):
        rows = min(stats._BLOCK, n_resamples - start)
        packed = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
        for flips in np.unpackbits(packed, axis=1, count=n):
            flipped = sum(-x if f else x for x, f in zip(d, flips, strict=True))
            extreme += abs(flipped) >= observed - 1e-10 * sum(abs(x) for x in d)
    return (1 + extreme) / (n_resamples + 1)


def exact_sign_flip(d: np.ndarray) -> float:
    observed = abs(sum(d))
    hits = [abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed - 1e-12 for signs in
            itertools.product((1, -1), repeat=len(d))]  # fmt: skip
    return sum(hits) / len(hits)


def test_confidence_and_resample_bounds_are_open_and_closed_where_documented():
    d, z = np.array([0.1, 0.2, -0.1, 0.3]), np.zeros(4)
    for confidence in (0.5, 1.0, 1.5):
        with pytest.raises(SpecError, match=f"confidence {confidence} must be between 0.5 and 1"):
            stats.paired_bootstrap(d, z, confidence=confidence)
    with pytest.raises(SpecError, match="n_resamples 0 must be >= 1"):
        stats.sign_flip_test(d, z, n_resamples=0)
    (one,) = stats.paired_bootstrap(d, z, n_resamples=1)  # one resample is allowed: no spread to measure
    assert one.n_resamples == 1 and one.std_error == 0.0
    assert stats.paired_bootstrap(d, z, n_resamples=10, seed=42)[0].seed == 42  # recorded in the JSON


def test_std_error_is_the_sample_deviation_of_the_bootstrap_means():
    rng = np.random.default_rng(3)
    d = rng.normal(0.0, 0.2, (30, 2))
    for n_resamples in (2, 3, 200):
        means = stats.bootstrap_means(d, n_resamples=n_resamples, seed=7)
        cis = stats.paired_bootstrap(d, np.zeros_like(d), n_resamples=n_resamples, seed=7)
        for j, ci in enumerate(cis):
            col = means[:, j]
            by_hand = math.sqrt(sum((x - col.mean()) ** 2 for x in col) / (n_resamples - 1))
            assert ci.std_error == pytest.approx(by_hand, rel=1e-12)


def test_the_default_seed_is_zero_everywhere():
    rng = np.random.default_rng(4)
    cand, ref = rng.random((40, 2)), rng.random((40, 2))
    d = cand - ref
    assert (stats.bootstrap_means(d, n_resamples=300) == stats.bootstrap_means(d, n_resamples=300, seed=0)).all()
    assert stats.paired_bootstrap(cand, ref, n_resamples=300) == stats.paired_bootstrap(
        cand, ref, n_resamples=300, seed=0
    )
    assert (
        stats.sign_flip_test(cand, ref, n_resamples=300) == stats.sign_flip_test(cand, ref, n_resamples=300, seed=0)
    ).all()
    assert stats.non_inferiority(cand, ref, margin=0.01, n_resamples=300) == stats.non_inferiority(
        cand, ref, margin=0.01, n_resamples=300, seed=0
    )
    assert stats.compare(cand, ref, n_resamples=300) == stats.compare(cand, ref, n_resamples=300, seed=0)


def test_non_inferiority_and_compare_pass_every_option_through():
    rng = np.random.default_rng(8)
    ref = rng.random((25, 2))
    cand = ref + rng.normal(-0.01, 0.05, (25, 2))
    d = cand - ref
    opts = {"n_resamples": 333, "seed": 5, "confidence": 0.9}
    cis = stats.paired_bootstrap(cand, ref, **opts)
    mde = Z80 + 1.2815515655446004  # z_0.90 + z_0.80 for confidence 0.9
    power_mde = [mde * float(np.std(d[:, j], ddof=1)) / 5 for j in range(2)]  # sqrt(25) = 5
    for j, ni in enumerate(stats.non_inferiority(cand, ref, margin=0.02, power=0.8, **opts)):
        assert ni.ci == cis[j] and ni.mde == pytest.approx(power_mde[j], rel=1e-9)
        gap = abs(d[:, j].mean() + 0.02)
        need = max(math.ceil((mde * float(np.std(d[:, j], ddof=1)) / gap) ** 2), 2)
        assert ni.queries_needed == need
    high_power = stats.non_inferiority(cand, ref, margin=0.02, power=0.9, **opts)[0]
    z90 = 2 * 1.2815515655446004  # z_0.90 + z_0.90
    gap0 = abs(d[:, 0].mean() + 0.02)
    assert high_power.queries_needed == max(math.ceil((z90 * float(np.std(d[:, 0], ddof=1)) / gap0) ** 2), 2)
    assert high_power.mde > stats.non_inferiority(cand, ref, margin=0.02, power=0.8, **opts)[0].mde
    for j, c in enumerate(stats.compare(cand, ref, power=0.8, **opts)):
        assert c.ci == cis[j] and c.mde == pytest.approx(power_mde[j], rel=1e-9)
    assert stats.compare(cand, ref, power=0.9, **opts)[0].mde == pytest.approx(high_power.mde)


def test_integer_scores_are_differenced_as_floats():
    # uint8 hit/miss scores: 0 - 1 must be -1, not 255
    cand, ref = np.array([0, 1, 0], dtype=np.uint8), np.array([1, 1, 1], dtype=np.uint8)
    (ci,) = stats.paired_bootstrap(cand, ref, n_resamples=50)
    assert ci.delta == pytest.approx(-2 / 3)
    assert stats.sign_flip_test(cand, ref)[0] == pytest.approx(exact_sign_flip(np.array([-1.0, 0.0, -1.0])))
    _, a, b = stats.paired_scores({"m": {"q1": 1, "q2": 0}}, {"m": {"q1": 0, "q2": 1}}, ["m"])
    assert a.dtype == np.float64 and b.dtype == np.float64


def test_bad_input_messages_say_what_is_wrong():
    with pytest.raises(ContractError, match="paired scores: no queries to compare"):
        stats.paired_bootstrap(np.zeros(0), np.zeros(0))
    with pytest.raises(ContractError, match="paired scores contain NaN or infinity"):
        stats.paired_bootstrap(np.array([0.1, np.inf]), np.zeros(2))
    with pytest.raises(ContractError, match="per-query scores of ndcg@10 are missing on one side"):
        stats.paired_scores({"ndcg@10": {"q": 1.0}}, {"mrr@10": {"q": 1.0}}, ["ndcg@10"])
    with pytest.raises(ContractError, match="per-query scores of ndcg@10, mrr@10 are missing"):
        stats.paired_scores({}, {}, ["ndcg@10", "mrr@10"])
    with pytest.raises(ContractError, match="the two sides share no scored query"):
        stats.paired_scores({"m": {"a": 1.0}}, {"m": {"b": 1.0}}, [])


@pytest.mark.parametrize("alpha, power", [(0.0, 0.8), (0.5, 0.8), (0.7, 0.8), (0.05, 1.0), (0.05, 1.5), (0.05, 0.4)])
def test_power_planning_rejects_alpha_and_power_outside_their_ranges(alpha, power):
    with pytest.raises(SpecError, match=f"alpha {alpha} must be in \\(0, 0.5\\) and power {power} in \\[0.5, 1\\)"):
        stats.minimum_detectable_effect(np.array([0.1, 0.2, 0.3]), alpha=alpha, power=power)


def test_power_half_is_allowed_and_two_queries_have_a_finite_mde():
    d = np.array([0.1, 0.3])
    sd = math.sqrt(((0.1 - 0.2) ** 2 + (0.3 - 0.2) ** 2) / 1)
    assert stats.minimum_detectable_effect(d)[0] == pytest.approx((Z95 + Z80) * sd / math.sqrt(2))
    assert stats.minimum_detectable_effect(d, power=0.5)[0] == pytest.approx(Z95 * sd / math.sqrt(2))


def test_queries_needed_per_column_and_for_tiny_samples():
    d = np.array([[0.01, -0.2], [0.03, 0.1], [-0.02, 0.05], [0.04, -0.1]])
    got = stats.queries_needed(d, [0.01, 0.05])
    for j, margin in enumerate((0.01, 0.05)):
        col = d[:, j]
        sd = math.sqrt(sum((x - col.mean()) ** 2 for x in col) / 3)
        assert got[j] == max(math.ceil(((Z95 + Z80) * sd / abs(col.mean() + margin)) ** 2), 2)
    assert stats.queries_needed(np.array([0.1]), 0.0)[0] == 2  # one query: no spread, the minimum
    two = np.array([0.0, 0.02])  # two queries have a spread: sd 0.01414, gap 0.01
    assert stats.queries_needed(two, 0.0)[0] == math.ceil(((Z95 + Z80) * math.sqrt(2) * 0.01 / 0.01) ** 2)
    assert stats.queries_needed(np.array([0.1, 0.1 + 1e-9]), 0.0)[0] == 2  # a clear case still reports 2


def test_queries_needed_at_the_margin_is_infinite_without_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stats.queries_needed(np.array([-0.01, -0.01, -0.01]), 0.01)[0] == np.inf  # 0/0
        assert stats.queries_needed(np.array([-0.02, 0.0]), 0.01)[0] == np.inf  # x/0


def test_exact_enumeration_is_used_up_to_and_including_two_to_the_n_resamples():
    d = np.array([0.3, 0.1, 0.2, -0.05, 0.15])  # 2**5 = 32 sign vectors
    exact = exact_sign_flip(d)
    assert stats.sign_flip_test(d, np.zeros(5), n_resamples=32)[0] == pytest.approx(exact, abs=1e-15)
    assert stats.sign_flip_test(d, np.zeros(5), n_resamples=100)[0] == pytest.approx(exact, abs=1e-15)
    assert stats.sign_flip_test(d, np.zeros(5), n_resamples=31)[0] == pytest.approx(loop_sign_flip(d, 31, 0))


@pytest.mark.parametrize("n, n_resamples", [(15, 200), (16, 90), (100, 50), (70, 130)])  # 16: whole bytes
def test_monte_carlo_sign_flip_follows_the_documented_seed_logic(n, n_resamples):
    rng = np.random.default_rng(n)
    d = rng.normal(0.05, 0.3, n)
    assert stats.sign_flip_test(d, np.zeros(n), n_resamples=n_resamples, seed=3)[0] == pytest.approx(
        loop_sign_flip(d, n_resamples, 3), abs=1e-15
    )


def test_sign_flip_is_scale_invariant_and_columns_keep_their_own_rounding_tolerance():
    d = np.array([3.0, 1.0, 1.0, 1.0])  # by hand: |3+1+1+1| = 6 and |3+1+1-1| ... only +-6 reach 6 -> 2/16
    assert stats.sign_flip_test(d, np.zeros(4))[0] == 0.125
    assert stats.sign_flip_test(d * 1e-6, np.zeros(4))[0] == 0.125
    both = stats.sign_flip_test(np.c_[d * 1e6, d * 1e-6], np.zeros((4, 2)))
    assert both.tolist() == [0.125, 0.125]


def test_corrections_clip_at_one_and_check_the_range_inclusively():
    assert stats.holm([0.6, 0.7]).tolist() == [1.0, 1.0]  # 2 * 0.6 = 1.2 clipped
    assert stats.holm([0.0, 1.0]).tolist() == [0.0, 1.0]  # both ends of [0, 1] are valid p-values
    grid = np.array([[0.01, 0.04], [0.03, 0.2]])
    assert stats.holm(grid).tolist() == pytest.approx(stats.holm(grid.ravel()).tolist())
    assert stats.holm(grid).tolist() == pytest.approx([0.04, 0.09, 0.09, 0.2])  # 4*.01, 3*.03, max(2*.04, .09), .2
    for bad in ([-0.1], [1.5], [0.2, -0.01]):
        with pytest.raises(ContractError, match="p-values must lie in \\[0, 1\\]"):
            stats.holm(bad)


def test_inconclusive_summary_and_dict_keys():
    rng = np.random.default_rng(2)
    d = rng.normal(-0.01, 0.05, 30)
    (ni,) = stats.non_inferiority(d, np.zeros(30), margin=0.01, n_resamples=500)
    assert ni.decision == "inconclusive"
    text = ni.summary()
    assert text.startswith(f"delta {ni.ci.delta:+.4f} (95% CI ")
    assert f"; minimum detectable effect {ni.mde:.4f} with 30 queries, about {ni.queries_needed} queries would" in text
    undecidable = stats.NonInferiority("inconclusive", 0.01, ni.ci, ni.mde, None)
    assert "with 30 queries, no finite number of queries would decide it" in undecidable.summary()
    assert list(ni.to_dict()) == ["decision", "margin", "ci", "mde", "queries_needed"]
    assert ni.to_dict()["ci"] == ni.ci.to_dict() and ni.to_dict()["decision"] == "inconclusive"
    (c,) = stats.compare(d, np.zeros(30), n_resamples=500)
    assert c.to_dict() == {"ci": c.ci.to_dict(), "p_value": c.p_value, "mde": c.mde}


def test_more_than_4096_queries_are_resampled_in_smaller_groups():
    # above 4096 queries a group holds fewer than 16 blocks; the group size must stay an integer
    rng = np.random.default_rng(6)
    d = rng.normal(0.02, 0.1, 5000)
    (ci,) = stats.paired_bootstrap(d, np.zeros(5000), n_resamples=130, seed=1)
    means = stats.bootstrap_means(d[:, None], n_resamples=130, seed=1)[:, 0]
    assert ci.delta == pytest.approx(d.mean()) and ci.low == pytest.approx(np.quantile(means, 0.025))
    assert stats.sign_flip_test(d, np.zeros(5000), n_resamples=130, seed=1)[0] == pytest.approx(1 / 131)


def test_compare_each_is_compare_of_each_pair_bit_for_bit():
    # sizes below and above exact enumeration (2**13 <= 10,000 < 2**14), sizes met once and several times, one
    # and two metric columns, in an order that interleaves the sizes: each pair's numbers are compare()'s alone
    rng = np.random.default_rng(11)
    sizes = [5, 40, 13, 14, 40, 5, 64, 40, 14, 2, 300]
    pairs = []
    for k, n in enumerate(sizes):
        shape = (n,) if k % 3 else (n, 2)
        pairs.append((rng.random(shape), rng.random(shape)))
    got = stats.compare_each(pairs)
    assert got == [stats.compare(a, b) for a, b in pairs]
    # every field is compared: another seed or resample count changes the bootstrap spread and the sign-flip p-values
    # of the Monte Carlo sizes, so a batch that drew them from the wrong stream could not pass the line above
    for other in (stats.compare_each(pairs, seed=1), stats.compare_each(pairs, n_resamples=9_999)):
        for n, mine, theirs in zip(sizes, got, other, strict=True):
            assert mine[0].ci.std_error != theirs[0].ci.std_error
            assert n <= 13 or mine[0].p_value != theirs[0].p_value
    options = {"n_resamples": 500, "seed": 4, "confidence": 0.9, "power": 0.9}
    assert stats.compare_each(pairs[:4], **options) == [stats.compare(a, b, **options) for a, b in pairs[:4]]
    assert stats.compare_each([]) == []
    with pytest.raises(ContractError, match="same shape"):
        stats.compare_each([(np.zeros(3), np.zeros(4))])
    with pytest.raises(SpecError, match="n_resamples 0 must be >= 1"):
        stats.compare_each(pairs[:1], n_resamples=0)
