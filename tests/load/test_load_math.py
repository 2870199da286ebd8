"""Percentiles, length buckets, request draws and capacity gates, against independent computations."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.load.gates import evaluate_gates, parse_capacity_gate
from evalsuite.load.runner import Level, LoadPlan, LoadProfile
from evalsuite.load.summary import Sample, figures, percentile
from evalsuite.load.workload import Workload, bucket_of, draw_requests, token_counts


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 257])
def test_percentiles_match_numpy_and_statistics(n):
    rng = random.Random(n)
    xs = [rng.expovariate(1.0) for _ in range(n)]
    for q in (0, 1, 50, 95, 99, 100):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-12, abs=1e-12)
    if n >= 2:
        cuts = statistics.quantiles(xs, n=100, method="inclusive")
        assert percentile(xs, 95) == pytest.approx(cuts[94], rel=1e-12)
        assert percentile(xs, 50) == pytest.approx(statistics.median(xs), rel=1e-12)


def test_percentile_edges():
    assert math.isnan(percentile([], 50))
    assert percentile([7.0], 99) == 7.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0  # unsorted input
    with pytest.raises(SpecError, match="out of range"):
        percentile([1.0], 101)


def _s(seconds, status="ok", bucket="<=32", inputs=4, tokens=40):
    return Sample("t", 1, 4, bucket, inputs, tokens, seconds, status)


def test_figures_count_only_successes_for_throughput_and_latency():
    samples = [_s(0.010), _s(0.020), _s(0.030), _s(0.001, "429"), _s(0.002, "error"), _s(0.040)]
    f = figures(samples, wall_seconds=2.0)
    assert (f.requests, f.ok, f.errors, f.throttled) == (6, 4, 1, 1)
    assert f.inputs == 16 and f.tokens == 160
    assert f.requests_per_s == 2.0 and f.inputs_per_s == 8.0 and f.tokens_per_s == 80.0
    ok_ms = [10.0, 20.0, 30.0, 40.0]
    assert f.p50_ms == pytest.approx(np.percentile(ok_ms, 50))
    assert f.p95_ms == pytest.approx(np.percentile(ok_ms, 95))
    assert f.p99_ms == pytest.approx(np.percentile(ok_ms, 99))
    assert f.error_rate == pytest.approx(2 / 6)
    assert f.value("throughput") == f.inputs_per_s
    empty = figures([_s(0.01, "error")], wall_seconds=1.0)
    assert empty.to_dict()["p95_ms"] is None and empty.inputs_per_s == 0.0


@pytest.mark.parametrize(
    "tokens,bucket",
    [
        (1, "<=32"),
        (32, "<=32"),
        (33, "<=128"),
        (128, "<=128"),
        (129, "<=256"),
        (256, "<=256"),
        (257, "<=512"),
        (512, "<=512"),
        (513, ">512"),
        (10_000, ">512"),
    ],
)
def test_bucket_edges_are_inclusive(tokens, bucket):
    assert bucket_of(tokens) == bucket


def test_workload_buckets_and_processed_tokens():
    tokens = [5, 32, 33, 300, 700, 20, 129]
    w = Workload(tuple(f"t{i}" for i in range(len(tokens))), tuple(tokens), max_length=256)
    expected: dict[str, list[int]] = {}
    for i, n in enumerate(tokens):  # an independent bucketing
        name = "<=32" if n <= 32 else "<=128" if n <= 128 else "<=256" if n <= 256 else "<=512" if n <= 512 else ">512"
        expected.setdefault(name, []).append(i)
    assert w.by_bucket() == {k: expected[k] for k in ("<=32", "<=128", "<=256", "<=512", ">512")}
    assert [w.processed_tokens(i) for i in range(len(tokens))] == [min(n, 256) for n in tokens]
    assert w.to_dict()["buckets"]["<=512"]["truncated"] == 1 and w.to_dict()["buckets"][">512"]["truncated"] == 1
    with pytest.raises(SpecError, match="empty"):
        Workload((), (), 10)


def test_draws_follow_the_length_distribution_and_are_seeded():
    tokens = [10] * 60 + [100] * 30 + [300] * 10
    w = Workload(tuple(f"t{i}" for i in range(100)), tuple(tokens), max_length=512)
    draws = draw_requests(w, batch_size=3, n=4000, seed=5)
    assert draws == draw_requests(w, batch_size=3, n=4000, seed=5)
    assert draws != draw_requests(w, batch_size=3, n=4000, seed=6)
    share = {b: sum(d.bucket == b for d in draws) / len(draws) for b in ("<=32", "<=128", "<=512")}
    assert share["<=32"] == pytest.approx(0.6, abs=0.03)
    assert share["<=128"] == pytest.approx(0.3, abs=0.03)
    assert share["<=512"] == pytest.approx(0.1, abs=0.02)
    for d in draws:  # every text of a request is from the request's bucket
        assert len(d.indices) == 3 and {bucket_of(tokens[i]) for i in d.indices} == {d.bucket}


def test_token_counts_use_the_models_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    texts = ["how does a database commit", "", "bread " * 200]
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    assert token_counts(str(tiny_model_dir), texts) == [len(tok(t)["input_ids"]) for t in texts]
    assert token_counts(str(tiny_model_dir), texts)[2] > 200  # not truncated


# -- capacity gates --------------------------------------------------------------------------------
def test_gate_parsing():
    g = parse_capacity_gate("throughput:max_rel_drop=10%")
    assert (g.metric, g.kind, g.limit, g.expr) == ("throughput", "max_rel_drop", 0.1, "throughput:max_rel_drop=10%")
    assert parse_capacity_gate("p95_ms:max_rel_rise=0.2").limit == 0.2
    assert parse_capacity_gate("error_rate:max_abs_rise=0").limit == 0.0
    for bad, match in [
        ("throughput", "METRIC:KIND=LIMIT"),
        ("speed:max_rel_drop=10%", "unknown metric"),
        ("throughput:max_rel_rise=10%", "higher-is-better"),
        ("p95_ms:max_rel_drop=1%", "lower-is"),
        ("throughput:max_drop=1%", "unknown kind"),
        ("throughput:max_rel_drop=100%", "below 100%"),
    ]:
        with pytest.raises(SpecError, match=match):
            parse_capacity_gate(bad)


@pytest.mark.parametrize(
    "gate,old,new,passed",
    [
        ("throughput:max_rel_drop=10%", 100.0, 90.0, True),  # exactly at the limit
        ("throughput:max_rel_drop=10%", 100.0, 89.9, False),
        ("throughput:max_rel_drop=10%", 100.0, 250.0, True),
        ("p95_ms:max_rel_rise=20%", 50.0, 60.0, True),  # exactly at the limit
        ("p95_ms:max_rel_rise=20%", 50.0, 60.01, False),
        ("p95_ms:max_rel_rise=20%", 50.0, 10.0, True),
        ("error_rate:max_abs_rise=0.01", 0.02, 0.03, True),
        ("error_rate:max_abs_rise=0.01", 0.02, 0.0301, False),
        ("throughput:max_rel_drop=10%", math.nan, 90.0, None),
        ("throughput:max_rel_drop=10%", 0.0, 90.0, None),
    ],
)
def test_gate_edges(gate, old, new, passed):
    assert parse_capacity_gate(gate).check(old, new)[0] is passed


def _profile(old_values, new_values):
    from evalsuite.load.summary import Figures

    def lv(target, c, inputs_per_s, p95):
        f = Figures(
            requests=10,
            ok=10,
            errors=0,
            throttled=0,
            inputs=int(inputs_per_s * 10),
            tokens=0,
            wall_seconds=10.0,
            p50_ms=p95 / 2,
            p95_ms=p95,
            p99_ms=p95,
            mean_ms=p95 / 2,
        )
        return Level(target, 8, c, f, {})

    levels = [lv("old", c, *v) for c, v in old_values.items()] + [lv("new", c, *v) for c, v in new_values.items()]
    return LoadProfile(("old", "new"), LoadPlan(concurrency=tuple(old_values), batch_sizes=(8,)), {}, tuple(levels))


def test_gates_fail_when_one_level_breaks():
    gates = (parse_capacity_gate("throughput:max_rel_drop=10%"), parse_capacity_gate("p95_ms:max_rel_rise=20%"))
    ok = evaluate_gates(gates, _profile({1: (100, 10), 4: (300, 20)}, {1: (95, 11), 4: (290, 24)}), "old", "new")
    assert [o.passed for o in ok] == [True, True]
    bad = evaluate_gates(gates, _profile({1: (100, 10), 4: (300, 20)}, {1: (100, 10), 4: (200, 30)}), "old", "new")
    assert [o.passed for o in bad] == [False, False]
    assert "1 of 2 level(s) fail" in bad[0].message() and "x 4" in bad[0].message()
    assert bad[0].to_dict()["levels"][1]["change"] == pytest.approx(200 / 300 - 1)


def test_a_gate_is_inconclusive_on_a_level_without_values_unless_another_level_fails():
    """One verdict type: fail over inconclusive over pass across levels (a level where the old side served
    nothing decides nothing); the JSON keeps ``passed`` (None when inconclusive) beside ``status``."""
    gate = (parse_capacity_gate("throughput:max_rel_drop=10%"),)
    old = {1: (100, 10), 4: (0, 20)}
    (undecided,) = evaluate_gates(gate, _profile(old, {1: (100, 10), 4: (300, 20)}), "old", "new")
    assert undecided.verdict == "inconclusive" and undecided.passed is None and undecided.status == "INCONCLUSIVE"
    assert undecided.to_dict()["passed"] is None
    (failed,) = evaluate_gates(gate, _profile(old, {1: (50, 10), 4: (300, 20)}), "old", "new")
    assert failed.verdict == "fail" and failed.to_dict()["status"] == "FAIL"


def test_gates_with_no_comparable_level_are_inconclusive_never_a_pass():
    # no level ran on both targets: nothing was compared (bug caught: an empty list of levels called PASS)
    gates = (parse_capacity_gate("throughput:max_rel_drop=10%"),)
    empty = LoadProfile(("old", "new"), LoadPlan(concurrency=(1,), batch_sizes=(8,)), {}, ())
    (out,) = evaluate_gates(gates, empty, "old", "new")
    assert out.passed is None and out.status == "INCONCLUSIVE"
    assert "nothing to compare" in out.message()
