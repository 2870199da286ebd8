"""Partial faults: one replica of a fleet, one vector of a batch, long texts only, big batches only, a fault
after warm-up. Each is caught by the check responsible for it, judging the worst case, and the canary
states what its probe requests could have caught (checked against a seeded simulation)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evalsuite.canary.embedding.registry import run_check
from evalsuite.canary.runner import run_canary
from evalsuite.checks.detection import detection_probability, requests_needed
from evalsuite.checks.parity import rank_overlap

from .fault_server import Replica

RUNS = 20  # seeded canary runs per fault (the acceptance: 20 of 20)


@pytest.mark.parametrize("share, detect", [(0.1, 0.3), (0.05, 0.1), (0.2, 0.2)])
def test_the_detection_statement_matches_a_seeded_simulation_of_the_router(share, detect):
    # the router of the fault server's replica, drawn as the canary's probe requests would be: 4000 seeded runs
    n = requests_needed(detect)
    caught = 0
    for seed in range(4000):
        replica = Replica(share, seed=seed)
        caught += any(replica.route() for _ in range(n))
    assert caught / 4000 == pytest.approx(detection_probability(share, n), abs=0.02)


def test_the_probe_check_fails_exactly_when_a_probe_reached_the_bad_replica(fault_server, make_context):
    # few probes (detect 0.5 -> 7 requests), a replica serving 10%: some seeds reach it, some do not
    fault_server.latency = 0.0
    outcomes = []
    for seed in range(6):
        fault_server.replica = Replica(0.1, "cls", seed=seed)
        ctx = make_context(fault_server.url, detect=0.5)
        ctx.reference_vectors()  # the reference first, so every request the server counts is a probe
        v = run_check("repeated_requests", ctx)
        reached = sum(fault_server.replica.routed)
        assert v.details["requests"] == len(fault_server.replica.routed) == 7
        assert v.passed is (reached == 0), v.message
        assert v.details["disagreeing_requests"] == reached
        outcomes.append(v.passed)
    assert True in outcomes and False in outcomes  # both cases were exercised


def _canary(make_context, url, previous=None):
    """One whole canary with the default settings; after the first, a next round (the local reference
    computed once and shared, every request to the server new)."""
    from evalsuite.canary.runner import next_round

    ctx = make_context(url) if previous is None else next_round(previous)
    return run_canary(ctx), ctx


def _probe_round(first, server, replica):
    """The repeated-requests check alone, in a new round against the server routing through ``replica``: the
    reference first, so every request the server counts is one of the check's probes."""
    from evalsuite.canary.runner import next_round

    ctx = next_round(first)
    try:
        ctx.reference_vectors()
        server.replica = replica
        return run_check("repeated_requests", ctx)
    finally:
        ctx.close()


WHOLE = 2  # whole canaries per fault beside the statistics: the check's failure is the canary's


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["cls", "unnormalized"])
def test_one_replica_in_ten_fails_every_seeded_run_and_a_faithful_pool_passes_every_one(
    fault_server, make_context, fault
):
    """Done when: behind one URL sending 1 request in 10 (seeded, at random) to a CLS or an unnormalized
    replica, the canary fails in each of 20 seeded runs with the default settings; faithful: 20 of 20 pass.

    The statistics are the check responsible for a partial fault's: 20 seeded rounds of the repeated-requests check
    (its default 44 probes) fail on the bad replica's answers and 20 against a faithful pool pass with the detection
    statement; whole canaries with the default settings (two per fault, two faithful) fail and pass with it."""
    fault_server.latency = 0.0
    first = make_context(fault_server.url)
    for seed in range(RUNS):
        replica = Replica(0.1, fault, seed=seed)
        probe = _probe_round(first, fault_server, replica)
        reached = sum(replica.routed)
        assert probe.passed is False, f"seed {seed}: the probes passed a fleet with one bad replica in ten"
        # every probe request was sent, or probing stopped at an answer that is broken on its own (norm 1.7)
        assert len(replica.routed) <= probe.details["requests"] == requests_needed(0.1)
        assert probe.details["disagreeing_requests"] == reached > 0, probe.message
    ctx = first
    for seed in range(WHOLE):
        fault_server.replica = Replica(0.1, fault, seed=seed)
        outcome, ctx = _canary(make_context, fault_server.url, ctx)
        assert not outcome.passed, f"seed {seed}: the canary passed a fleet with one bad replica in ten"
        probe = next(v for v in outcome.verdicts if v.check == "repeated_requests")
        assert probe.passed is False or sum(fault_server.replica.routed) > 0
    if fault == "cls":  # the faithful pool once per parametrization is enough
        statement = "probability 0.9903 >= 0.99 (44 requests sent"
        for seed in range(RUNS):
            replica = Replica(0.0, fault, seed=seed)
            probe = _probe_round(first, fault_server, replica)
            assert probe.passed is True, f"seed {seed}: {probe.message}"
            assert statement in probe.message and not any(replica.routed)
        for seed in range(WHOLE):
            fault_server.replica = Replica(0.0, fault, seed=seed)
            outcome, ctx = _canary(make_context, fault_server.url, ctx)
            assert outcome.passed, [v.message for v in outcome.verdicts if v.passed is False]
            probe = next(v for v in outcome.verdicts if v.check == "repeated_requests")
            assert statement in probe.message


def test_the_statement_is_in_the_verdict_canary_json_and_report_md(fault_server, make_context, tmp_path):
    import json

    from evalsuite.canary.report import write_canary_reports

    fault_server.latency = 0.0
    ctx = make_context(fault_server.url, detect=0.05)
    v = run_check("repeated_requests", ctx)
    assert v.passed is True, v.message
    statement = (
        "a replica serving >= 5% of requests with another contract would have been caught with probability "
        "0.9901 >= 0.99 (90 requests sent; any share >= 5.0% with probability >= 0.99)"
    )
    assert statement in v.message
    from evalsuite.canary.runner import CanaryOutcome

    outcome = CanaryOutcome(ctx.settings, ctx.contract.to_dict(), {"name": "x"}, None, (v,))
    paths = write_canary_reports(outcome, tmp_path)
    report = json.loads(paths["json"].read_text())
    assert report["verdicts"][0]["details"]["detection"]["statement"] == statement
    assert report["verdicts"][0]["details"]["detection"]["requests"] == 90
    md = paths["markdown"].read_text()
    assert "## Detection power" in md and statement in md and "independently" in md


def test_a_fault_after_warm_up_is_caught_by_the_probes(fault_server, make_context):
    fault_server.latency = 0.0
    fault_server.fault_after = 3  # the first answers (vector agreement's) are faithful
    fault_server.replica = Replica(1.0, "cls", seed=0)
    ctx = make_context(fault_server.url, batch_size=32)
    assert run_check("vector_agreement", ctx).passed is True  # one request: still warming up
    v = run_check("repeated_requests", ctx)
    assert v.passed is False and f"of {requests_needed(0.1)} requests disagree" in v.message


# -- one vector, long texts, big batches: the worst case decides ------------------------------------------
def test_only_long_texts_wrong_fail_vector_agreement_on_the_worst_text(fault_server, make_context):
    fault_server.long_from = 40  # tokens
    ctx = make_context(fault_server.url)
    v = run_check("vector_agreement", ctx)
    assert v.passed is False, v.message
    per_text = v.details["per_text"]
    assert v.details["median"] > 0.99 > v.details["min"]  # most texts agree: a median would pass
    assert per_text[v.details["worst"]] == v.details["min"]


def test_only_big_batches_wrong_fail_batch_invariance(fault_server, make_context):
    fault_server.batch_from = 8  # texts per request
    ctx = make_context(fault_server.url, batch_size=4)  # the canary's own batches stay small
    assert run_check("vector_agreement", ctx).passed is True
    v = run_check("batch_invariance", ctx)
    assert v.passed is False and "the server's batching (padding or order) changes vectors" in v.message


def test_one_wrong_vector_per_batch_fails_batch_invariance_on_its_min_not_its_median(fault_server, make_context):
    # only the longest text of each request of several texts is wrong: the median of 27 texts agrees
    fault_server.one_wrong = True
    v = run_check("batch_invariance", make_context(fault_server.url))
    assert v.passed is False, v.message
    assert v.details["median"] >= 0.999 > v.details["min"]  # bug caught: judged on the median


def test_one_vector_per_batch_with_a_wrong_norm_fails_norm_agreement_naming_it(
    prepared_with, fault_server, make_context
):
    prepared = prepared_with(normalize=False, similarity="dot")
    fault_server.normalize = False
    ctx = make_context(fault_server.url, prepared)
    assert run_check("norm_agreement", ctx).passed is True  # faithful unnormalized vectors agree
    fault_server.one_norm = 3.0
    ctx = make_context(fault_server.url, prepared)
    v = run_check("norm_agreement", ctx)
    assert v.passed is False, v.message  # bug caught: the best text judged (argmin for argmax)
    assert "served norm 3.0000" in v.message and f"on {v.details['worst']}" in v.message


# -- rank overlap and Matryoshka at their edges --------------------------------------------------------
def test_rank_overlap_is_judged_at_ten_not_deeper():
    # the endpoint ranks the reference's top 10 at 11..20: the top-10 overlap is 0.0 (1.0 at depth 20)
    docs = [f"d{i:02d}" for i in range(30)]
    ref = {"q": {d: 30.0 - i for i, d in enumerate(docs)}}
    swapped = docs[10:20] + docs[:10] + docs[20:]
    ep = {"q": {d: 30.0 - i for i, d in enumerate(swapped)}}
    assert rank_overlap(ref, ep) == {"q": 0.0}


def test_matryoshka_accepts_the_models_full_dimension(fault_server, make_context, tiny_info):
    from evalsuite.canary.embedding.checks.matryoshka import validate_dimensions

    hidden = tiny_info.hidden_size
    validate_dimensions((hidden,), hidden, (hidden // 2, hidden // 4))  # bug caught: refusing d == hidden
    validate_dimensions((hidden,), hidden, None)
    v = run_check("matryoshka", make_context(fault_server.url, dimensions=(hidden,)))
    assert v.passed is True, v.message


def test_the_fault_server_partial_faults_hit_only_what_they_say(fault_server):
    """The fault models themselves: a faithful answer where the fault does not apply."""
    import httpx

    texts = ["short text", " ".join(["word"] * 60)]

    def ask(batch):
        r = httpx.post(fault_server.url + "/embeddings", json={"input": batch, "model": "tiny-model"})
        return np.array([d["embedding"] for d in r.json()["data"]])

    good = fault_server.expected(texts)
    fault_server.long_from = 20
    got = ask(texts)
    assert np.allclose(got[0], good[0], atol=1e-5) and not np.allclose(got[1], good[1], atol=1e-2)
    fault_server.long_from, fault_server.batch_from = None, 1
    assert np.allclose(ask(texts[:1]), good[:1], atol=1e-5) and not np.allclose(ask(texts), good, atol=1e-2)
    fault_server.batch_from, fault_server.one_norm = None, 2.0
    got = ask(texts)
    assert np.linalg.norm(got, axis=1) == pytest.approx([1.0, 2.0], abs=1e-5)
    fault_server.one_norm, fault_server.fault_after, fault_server.fault = None, fault_server.answered + 1, "zero"
    assert np.allclose(ask(texts), good, atol=1e-5)  # the last faithful answer
    assert not np.linalg.norm(ask(texts)[0])  # then the fault
    replica, rng = Replica(0.5, seed=3), random.Random(3)
    assert [replica.route() is not None for _ in range(50)] == [rng.random() < 0.5 for _ in range(50)]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_the_probes_go_at_the_endpoints_concurrency_and_judge_every_answer(fault_server, make_context, concurrency):
    """The probe requests are sent as a run's batches are: at most ``--endpoint-concurrency`` at once (one by one
    at 1); every request sent is answered and judged, so the disagreeing count is exactly the requests the bad
    replica answered, whatever the overlap."""
    fault_server.latency = 0.02
    ctx = make_context(fault_server.url, detect=0.2, concurrency=concurrency)
    ctx.reference_vectors()
    fault_server.max_in_flight = 0
    fault_server.replica = Replica(0.3, "cls", seed=3)
    v = run_check("repeated_requests", ctx)
    routed = fault_server.replica.routed
    assert len(routed) == v.details["requests"] == requests_needed(0.2)  # cls answers are not broken: all sent
    assert v.details["disagreeing_requests"] == sum(routed) > 0 and v.passed is False
    assert fault_server.max_in_flight == concurrency  # requests of 20 ms each: they overlap up to the limit
