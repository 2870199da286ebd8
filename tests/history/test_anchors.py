"""The history gates on synthetic records: which release each compares with, the paired delta and its CI, the
trend's slope against an independent least-squares fit, and an incomparable record making the gate inconclusive
with the reason, never mixed in."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.gating.gates import Scores
from evalsuite.gating.history_kinds import trend_window
from evalsuite.gating.kinds import parse_gate
from evalsuite.gating.releases import check_history_gates, judge_history_gate
from evalsuite.history.anchors import Candidate
from evalsuite.history.record import GateVerdict

from .conftest import CONTRACT, record

RNG = np.random.default_rng(7)
BASE = RNG.uniform(0.3, 1.0, 120)
WHO = Candidate("minilm", "cand" + "0" * 36, "minibeir", "a" * 64, {**CONTRACT, "model_revision": "cand"})


def _cand(scores: np.ndarray) -> Scores:
    per_query = {f"q{i:03d}": float(s) for i, s in enumerate(scores)}
    return Scores("candidate", {"ndcg@10": float(np.mean(scores))}, {"ndcg@10": per_query})


def _releases(drops: list[float]) -> list:
    """Releases with every query moved by the cumulative drop, one day apart."""
    return [
        record(f"r{i}" + "0" * 38, list(BASE - d), when=f"2026-01-{i + 1:02d}T00:00:00Z") for i, d in enumerate(drops)
    ]


def test_max_drop_from_first_pairs_with_the_first_release_and_fails_past_the_allowance():
    records = _releases([0.0, 0.008, 0.016])
    cand = BASE - 0.024 + RNG.normal(0, 0.01, BASE.size)
    outcome = judge_history_gate(parse_gate("ndcg@10:max_drop_from_first=0.02"), _cand(cand), records, WHO, None)
    expected = float(np.mean(cand - BASE))  # independent: the paired mean difference against release 0
    assert outcome.verdict == "fail"
    assert outcome.delta == pytest.approx(expected, abs=1e-9)
    assert outcome.reference == pytest.approx(float(np.mean(BASE)))
    ci = outcome.comparison.ci
    assert ci.n_queries == BASE.size and ci.low < expected < ci.high and ci.high - ci.low < 0.01
    # the previous release is within 0.01: a max_drop gate against it would pass; from the first it does not
    assert float(np.mean(BASE - 0.016)) - float(np.mean(cand)) < 0.01


def test_the_pinned_anchor_and_the_best_release_are_the_sides_compared():
    records = _releases([0.0, -0.03, 0.01])  # release 1 is the best
    cand = BASE - 0.02
    pinned = judge_history_gate(parse_gate("ndcg@10:max_drop_from_first=0.02"), _cand(cand), records, WHO, "r2")
    assert pinned.delta == pytest.approx(-0.01) and pinned.verdict == "pass"
    best = judge_history_gate(parse_gate("ndcg@10:max_drop_from_best=0.04"), _cand(cand), records, WHO, None)
    assert best.delta == pytest.approx(-0.05) and best.verdict == "fail"
    missing = judge_history_gate(parse_gate("ndcg@10:max_drop_from_first=0.02"), _cand(cand), records, WHO, "zz")
    assert missing.verdict == "inconclusive" and "anchor revision zz is not recorded" in (missing.note or "")


def test_the_first_release_passes_saying_it_is_the_first():
    outcome = judge_history_gate(parse_gate("ndcg@10:max_drop_from_first=0.02"), _cand(BASE), [], WHO, None)
    assert outcome.verdict == "pass" and "this one is the first" in (outcome.note or "")


def test_a_failed_release_and_the_candidates_own_record_are_not_anchors():
    failed = GateVerdict("ndcg@10:max_drop=0.01", "max_drop", "ndcg@10", 0.01, "fail")
    records = [
        record("x" + "0" * 39, list(BASE + 0.2), when="2026-01-01T00:00:00Z", gates=(failed,)),
        record("r1" + "0" * 38, list(BASE), when="2026-01-02T00:00:00Z"),
        record(WHO.revision, list(BASE - 0.5), when="2026-01-03T00:00:00Z"),
    ]
    outcome = judge_history_gate(parse_gate("ndcg@10:max_drop_from_best=0.01"), _cand(BASE), records, WHO, None)
    assert outcome.delta == pytest.approx(0.0) and outcome.verdict == "pass"


def test_an_anchor_on_another_dataset_or_contract_is_inconclusive_and_says_why():
    other_data = [record("r0" + "0" * 38, list(BASE), when="2026-01-01T00:00:00Z", sha="b" * 64)]
    gate = parse_gate("ndcg@10:max_drop_from_first=0.02")
    outcome = judge_history_gate(gate, _cand(BASE - 0.5), other_data, WHO, None)
    assert outcome.verdict == "inconclusive" and outcome.comparison is None
    assert "dataset sha256 bbbbbbbbbbbbbbbb…, the candidate on aaaaaaaaaaaaaaaa…" in (outcome.note or "")
    assert "history_anchor" in (outcome.note or "")
    other_contract = [
        record("r0" + "0" * 38, list(BASE), when="2026-01-01T00:00:00Z", contract={**CONTRACT, "pooling": "cls"})
    ]
    outcome = judge_history_gate(gate, _cand(BASE), other_contract, WHO, None)
    assert outcome.verdict == "inconclusive" and "pooling 'cls' -> 'mean'" in (outcome.note or "")
    # best: the incomparable release is left out and named, never mixed in
    mixed = [*other_contract, record("r1" + "0" * 38, list(BASE - 0.01), when="2026-01-02T00:00:00Z")]
    best = judge_history_gate(parse_gate("ndcg@10:max_drop_from_best=0.02"), _cand(BASE), mixed, WHO, None)
    assert best.delta == pytest.approx(0.01) and "1 earlier release(s) scored on another" in (best.note or "")


def test_the_trend_is_the_least_squares_slope_of_the_release_means_with_a_paired_ci():
    drops = [0.0, 0.004, 0.011, 0.013]
    records = _releases(drops)
    noise = RNG.normal(0, 0.02, (len(drops) + 1, BASE.size))
    records = [
        record(r.revision, list(np.clip(BASE - d + noise[i], 0, 1)), when=r.recorded_at)
        for i, (r, d) in enumerate(zip(records, drops, strict=True))
    ]
    cand = np.clip(BASE - 0.02 + noise[-1], 0, 1)
    gate = parse_gate("ndcg@10:trend=0.001@5")
    assert trend_window(gate) == 5
    outcome = judge_history_gate(gate, _cand(cand), records, WHO, None)
    means = [np.mean(r.per_query["ndcg@10"]) for r in records] + [np.mean(cand)]
    slope = np.polyfit(np.arange(5), means, 1)[0]  # independent: numpy's least-squares line
    ci = outcome.comparison.ci
    assert outcome.delta == pytest.approx(slope, abs=1e-9)
    assert ci.low < slope < ci.high and ci.high < -0.001
    assert outcome.verdict == "fail"
    lenient = judge_history_gate(parse_gate("ndcg@10:trend=0.02"), _cand(cand), records, WHO, None)
    assert lenient.verdict == "pass"  # a fall of ~0.005 per release, allowed 0.02


def test_a_trend_with_too_few_comparable_releases_is_inconclusive():
    records = _releases([0.0, 0.01, 0.02])
    records[1] = record(records[1].revision, list(BASE), when=records[1].recorded_at, sha="c" * 64)
    outcome = judge_history_gate(parse_gate("ndcg@10:trend=0.01@4"), _cand(BASE), records, WHO, None)
    assert outcome.verdict == "inconclusive"
    assert "2 comparable release(s) in the window, a trend needs 3" in (outcome.note or "")
    assert "window stops at a change" in (outcome.note or "")


def test_history_gates_parse_and_need_a_history_directory():
    with pytest.raises(SpecError, match=r"a trend needs a window of at least 3"):
        parse_gate("ndcg@10:trend=0.01@2")
    with pytest.raises(SpecError, match=r"max_drop_from_first.*always judges the first stage"):
        parse_gate("ndcg@10[stage=reranked]:max_drop_from_first=0.01")
    gates = (parse_gate("ndcg@10:max_drop=0.01"), parse_gate("ndcg@10:max_drop_from_first=0.02"))
    with pytest.raises(SpecError, match=r"minibeir: gate\(s\) ndcg@10:max_drop_from_first=0.02 .*--history DIR"):
        check_history_gates(gates, None, "minibeir")


@pytest.mark.parametrize(
    "expr", ["ndcg@10:max_drop_from_first=0.02", "ndcg@10:max_drop_from_best=0.02", "ndcg@10:trend=0.005@3"]
)
def test_no_release_of_this_lineage_beside_releases_of_others_is_inconclusive_naming_them(expr):
    """A release evaluated from a new directory without model_name is a lineage of its own: with releases of
    another lineage on the same dataset, no history gate passes it as the first (the bug: it did, forever)."""
    records = [
        record("r0" + "0" * 38, list(BASE), when="2026-01-01T00:00:00Z", model="embedder"),
        record("r1" + "0" * 38, list(BASE - 0.01), when="2026-01-02T00:00:00Z", model="embedder"),
        record("z0" + "0" * 38, list(BASE), when="2026-01-01T00:00:00Z", model="other", dataset="elsewhere"),
    ]
    unnamed = Candidate("embedder-v1.4", "cand" + "0" * 36, "minibeir", "a" * 64, CONTRACT)
    outcome = judge_history_gate(parse_gate(expr), _cand(BASE - 0.05), records, unnamed, None)
    assert outcome.verdict == "inconclusive"
    note = outcome.note or ""
    assert "no earlier release of 'embedder-v1.4' on minibeir" in note
    assert "'embedder' (2 release(s), the last r10000000000" in note and 'model_name = "embedder"' in note
    assert "'other'" not in note  # another dataset's lineage is not this dataset's history


def test_a_new_lineage_on_a_dataset_no_one_else_recorded_is_the_first_release():
    records = [record("z0" + "0" * 38, list(BASE), when="2026-01-01T00:00:00Z", model="other", dataset="elsewhere")]
    outcome = judge_history_gate(parse_gate("ndcg@10:max_drop_from_first=0.02"), _cand(BASE), records, WHO, None)
    assert outcome.verdict == "pass" and "this one is the first" in (outcome.note or "")


def test_a_named_lineage_gates_releases_from_other_directories_against_its_first():
    """The lineage, not the directory: records of 'embedder' read from three directories pair with a candidate of
    that lineage, and the drop against the first fails."""
    records = [
        record(f"r{i}" + "0" * 38, list(BASE - d), when=f"2026-01-0{i + 1}T00:00:00Z", model="embedder")
        for i, d in enumerate([0.0, 0.01])
    ]
    records = [dataclasses.replace(r, source=f"/artifacts/embedder-v1.{i}") for i, r in enumerate(records)]
    named = Candidate("embedder", "cand" + "0" * 36, "minibeir", "a" * 64, CONTRACT)
    outcome = judge_history_gate(
        parse_gate("ndcg@10:max_drop_from_first=0.02"), _cand(BASE - 0.05), records, named, None
    )
    assert outcome.verdict == "fail" and outcome.delta == pytest.approx(-0.05)
