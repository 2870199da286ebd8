"""The budget's attribution rules against independent computations: Shapley values against a brute-force average
over every order of the stages, sequential charges against the plain difference of consecutive stages, and both
adding up to the total query by query."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evalsuite.budget.attribution import charges, disagreements, sequential, shapley, shapley_contributions

METRICS = ("ndcg@10", "recall@10")
N = 40


def _game(players: tuple[str, ...], seed: int = 0):
    """A per-query value function over subsets with interactions: each player's own effect, pairwise and triple
    interactions, different per query and metric."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.9, (N, len(METRICS)))
    main = {p: rng.normal(-0.05, 0.05, (N, len(METRICS))) for p in players}
    pairs = {pq: rng.normal(0, 0.04, (N, len(METRICS))) for pq in itertools.combinations(players, 2)}
    triple = rng.normal(0, 0.03, (N, len(METRICS)))

    def value(subset: frozenset[str]) -> np.ndarray:
        v = base.copy()
        for p in subset:
            v += main[p]
        for (a, b), w in pairs.items():
            if a in subset and b in subset:
                v += w
        if len(subset) >= 3 and set(players[:3]) <= subset:
            v += triple
        return v

    return value


def _brute_force(players: tuple[str, ...], value) -> dict[str, np.ndarray]:
    """Each player's marginal contribution averaged over all k! orders (the definition)."""
    total = {p: np.zeros((N, len(METRICS))) for p in players}
    orders = list(itertools.permutations(players))
    for order in orders:
        have: frozenset[str] = frozenset()
        for p in order:
            total[p] += value(have | {p}) - value(have)
            have = have | {p}
    return {p: t / len(orders) for p, t in total.items()}


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_shapley_equals_the_average_over_every_order(k: int) -> None:
    """Bugs caught: a wrong weight (|S|!(k-|S|-1)!/k!), a subset left out, the marginal taken the wrong way round."""
    players = ("precision", "served", "dimension", "compression", "ann")[:k]
    value = _game(players, seed=k)
    fast = shapley_contributions(players, value)
    slow = _brute_force(players, value)
    for p in players:
        np.testing.assert_allclose(fast[p], slow[p], atol=1e-12)
    # efficiency: the values add up to v(all) - v(none) for every query and metric
    np.testing.assert_allclose(sum(fast.values()), value(frozenset(players)) - value(frozenset()), atol=1e-12)


def test_shapley_calls_each_subset_once() -> None:
    players = ("a", "b", "c", "d")
    value = _game(players)
    seen: list[frozenset[str]] = []

    def counted(s: frozenset[str]) -> np.ndarray:
        seen.append(s)
        return value(s)

    shapley_contributions(players, counted)
    assert len(seen) == len(set(seen)) == 2 ** len(players)


def test_sequential_charges_each_stage_against_the_one_before_and_telescopes() -> None:
    """Bugs caught: a stage charged against the reference instead of the previous stage; deltas of the wrong sign."""
    rng = np.random.default_rng(3)
    chain = [rng.uniform(0, 1, (N, 2))]
    for _ in range(4):
        chain.append(np.clip(chain[-1] + rng.normal(-0.03, 0.05, (N, 2)), 0, 1))
    got = sequential(chain, METRICS)
    for i, by_metric in enumerate(got, start=1):
        for j, m in enumerate(METRICS):
            assert by_metric[m].value == pytest.approx(float(np.mean(chain[i][:, j] - chain[i - 1][:, j])), abs=1e-15)
            lost = float(np.mean(chain[i][:, j] < chain[i - 1][:, j]))
            assert by_metric[m].lost_share == pytest.approx(lost)
    total = charges(chain[-1], chain[0], METRICS)
    for m in METRICS:
        assert sum(c[m].value for c in got) == pytest.approx(total[m].value, abs=1e-12)


def test_a_charge_carries_the_paired_ci_and_p_value() -> None:
    """A clear loss has a CI below zero and a small p; a null change has a CI holding zero."""
    rng = np.random.default_rng(5)
    before = rng.uniform(0.2, 0.8, (200, 2))
    after = before.copy()
    after[:, 0] -= 0.05 + rng.normal(0, 0.01, 200)
    after[:, 1] += rng.normal(0, 0.02, 200)
    c = charges(after, before, METRICS)
    assert c["ndcg@10"].high < 0 and c["ndcg@10"].p < 0.001 and c["ndcg@10"].measurable
    assert c["recall@10"].low < 0 < c["recall@10"].high and not c["recall@10"].measurable


def test_disagreements_name_the_stages_whose_order_matters() -> None:
    players = ("dimension", "compression")
    rng = np.random.default_rng(8)
    base = rng.uniform(0.4, 0.9, (N, 2))
    hit = np.full((N, 2), -0.1)

    def value(s: frozenset[str]) -> np.ndarray:  # either stage alone costs nothing, both together 0.1
        return base + (hit if s == frozenset(players) else 0)

    shap = shapley(players, value, METRICS)
    seq = dict(
        zip(
            players,
            sequential([value(frozenset()), value(frozenset({"dimension"})), value(frozenset(players))], METRICS),
            strict=True,
        )
    )
    assert shap["dimension"]["ndcg@10"].value == pytest.approx(-0.05)
    assert seq["dimension"]["ndcg@10"].value == pytest.approx(0.0) and seq["compression"][
        "ndcg@10"
    ].value == pytest.approx(-0.1)
    found = disagreements(seq, shap, "ndcg@10")
    assert [d.split(":")[0] for d in found] == ["dimension", "compression"]
    assert not disagreements(shap, shap, "ndcg@10")
    assert math.isclose(sum(shap[p]["ndcg@10"].value for p in players), -0.1)
