"""Issue 40's probes against the loopback fault server: a truncation cap at an arbitrary length, case collapse,
collisions, nondeterminism at a known rate, a NaN for one input. A faithful server passes every one, within the
stated request budget; each fault fails the check that owns it, named with its evidence."""

from __future__ import annotations

import numpy as np
import pytest

from evalsuite.canary.diagnosis import diagnosis_for
from evalsuite.canary.embedding.checks.ladder import MAX_REQUESTS
from evalsuite.canary.embedding.registry import run_check

PROBES = ("length_ladder", "case_variants", "distinct_inputs", "determinism", "stress_inputs")
# requests each probe sends to a faithful server (the canary's texts, already served, cost none)
REQUESTS = {"length_ladder": 1, "case_variants": 1, "distinct_inputs": 0, "determinism": 9, "stress_inputs": 1}


def _warm(ctx):
    """The reference and the canary texts' served vectors first, so the server's count is the probe's own."""
    ctx.reference_vectors()
    ctx.served_vectors()


def test_a_faithful_server_passes_every_probe_within_the_stated_requests(fault_server, make_context):
    fault_server.latency = 0.0
    ctx = make_context(fault_server.url)
    _warm(ctx)
    for name in PROBES:
        before = len(fault_server.bodies)
        v = run_check(name, ctx)
        assert v.passed is True, v.message
        assert len(fault_server.bodies) - before == REQUESTS[name] == v.details["requests"], name
    assert sum(REQUESTS.values()) == 12


@pytest.mark.parametrize("cap", [45, 37])
def test_the_ladder_names_an_arbitrary_cap_exactly(fault_server, make_context, cap):
    """The fault server encodes at ``cap`` tokens (a length no fixed list holds); the contract says 64."""
    fault_server.latency = 0.0
    fault_server.max_length = cap
    ctx = make_context(fault_server.url)
    _warm(ctx)
    before = len(fault_server.bodies)
    v = run_check("length_ladder", ctx)
    sent = len(fault_server.bodies) - before
    assert v.passed is False, v.message
    assert (v.details["agrees"], v.details["departs"], v.details["exact"]) == (cap, cap + 1, True), v.details
    assert f"the server truncates at {cap} tokens (the contract's max_length: 64)" in v.message
    assert sent == v.details["requests"] <= MAX_REQUESTS
    # each step's text has exactly the tokens it claims, counted independently by the server's own tokenizer
    tokenizer = fault_server.encoders(64).tokenizer
    for body, step in zip(fault_server.bodies[before:], v.details["steps"], strict=True):
        assert len(tokenizer(body["input"][0])["input_ids"]) == step["tokens"]
        assert step["agrees"] is (step["tokens"] <= cap)
    # the departing text's served vector is the reference cut at the cap
    assert v.details["cosine_against_cut"] >= 0.99999 > v.details["cosine_departing"]
    if cap != 45:
        return
    # the diagnosis tries the ladder's length and names it, with the remedy
    agreement = run_check("vector_agreement", ctx)
    found = diagnosis_for(ctx, agreement if agreement.passed is False else v)
    assert found is not None and [(c.factor, c.value) for c in found.causes] == [("max_length", cap)], found.sentence()


def test_case_collapse_fails_case_variants_and_distinct_inputs(fault_server, make_context):
    fault_server.latency = 0.0
    fault_server.case_collapse = True
    ctx = make_context(fault_server.url)
    v = run_check("case_variants", ctx)
    assert v.passed is False, v.message
    assert "every upper variant departs" in v.message and "all-uppercase" in v.message
    upper = [i for i in v.details["per_text"] if i.endswith(".upper")]
    assert set(v.details["disagreeing"]) == set(upper) and len(upper) == 3
    d = run_check("distinct_inputs", ctx)
    assert d.passed is False, d.message
    collided = {frozenset((c["a"], c["b"])) for c in d.details["collisions"]}
    assert frozenset(("q1.upper", "q3.upper")) in collided  # both texts named
    assert "collision" in d.message


def test_a_prefix_keyed_cache_is_named_a_collision_with_both_texts(fault_server, make_context):
    fault_server.latency = 0.0
    fault_server.prefix_cache = 60  # the prefix pairs share more than their first 60 characters
    ctx = make_context(fault_server.url)
    assert run_check("case_variants", ctx).passed is True
    d = run_check("distinct_inputs", ctx)
    assert d.passed is False, d.message
    pairs = {frozenset((c["a"], c["b"])) for c in d.details["collisions"]}
    assert pairs == {frozenset((f"pair{k}a", f"pair{k}b")) for k in (1, 2, 3)}, d.details
    assert 'pair1a "the team player' in d.message and "pair1b" in d.message


def test_nondeterminism_is_named_with_its_rate_inside_the_interval(fault_server, make_context):
    fault_server.latency = 0.0
    ctx = make_context(fault_server.url)
    _warm(ctx)
    fault_server.nondeterministic = 0.3
    v = run_check("determinism", ctx)
    assert v.passed is False and v.details["kind"] == "nondeterminism", v.message
    assert "the same request gave" in v.message and "at batch size(s)" in v.message
    # the rate the check estimates, against the server's own record of what it moved
    truth = np.mean(fault_server.moved)
    lo, hi = v.details["moved_vectors_ci95"]
    assert lo <= 0.3 <= hi and lo <= truth <= hi, (lo, hi, truth)


def test_a_batch_size_fault_is_named_composition_not_nondeterminism(fault_server, make_context):
    fault_server.latency = 0.0
    fault_server.fault = "batch_dependent"  # vectors shift with the number of texts in a request
    ctx = make_context(fault_server.url)
    v = run_check("determinism", ctx)
    assert v.passed is False and v.details["kind"] == "batch_composition", v.message
    assert "not nondeterminism" in v.message


def test_a_nan_for_one_input_is_named_with_that_input(fault_server, make_context):
    fault_server.latency = 0.0
    fault_server.nan_for = "தமிழ்"
    ctx = make_context(fault_server.url)
    v = run_check("stress_inputs", ctx)
    assert v.passed is False, v.message
    assert list(v.details["broken"]) == ["s_tamil"] and "non-finite" in v.details["broken"]["s_tamil"]["what"]
    assert v.details["requests"] == 1 + v.details["texts"]  # the batch, then each text on its own
    assert "s_tamil" in v.message and "characters" in v.message


def test_the_ladder_names_a_refusal_limit_below_the_contract(fault_server, make_context):
    """A server that refuses (HTTP 400) any text over 40 tokens, as vLLM does over its --max-model-len: the canary texts
    are refused too, so the ladder calibrates on a short text and names the limit exactly."""
    fault_server.latency = 0.0
    fault_server.refuse_tokens = 40
    ctx = make_context(fault_server.url)
    ctx.reference_vectors()
    before = len(fault_server.bodies)
    v = run_check("length_ladder", ctx)
    assert v.passed is False, v.message
    assert (v.details["agrees"], v.details["departs"]) == (40, 41), v.details
    assert "the server refuses texts of more than 40 tokens (the contract's max_length: 64)" in v.message
    assert "maximum context length is 40 tokens" in v.details["refused"]
    assert v.details["steps"][0]["tokens"] == 16 and v.details["steps"][0]["agrees"] is True  # the calibration
    assert len(fault_server.bodies) - before == v.details["requests"] + 1 <= MAX_REQUESTS + 1  # + the canary batch


@pytest.mark.parametrize("max_length", [16, 40, 128])
def test_every_stress_text_fits_the_max_length_by_the_tokenizers_count(max_length):
    """A byte-level count (a tiny or byte-level vocabulary spends a token per byte of a rare script): every probe fits,
    so a server refusing over-long inputs (vLLM's 400) does not refuse the whole request (bug: only the repeated token
    and the number were cut; a faithful vLLM decoder failed stress_inputs)."""
    from evalsuite.canary.embedding.checks.stress import RARE_SCRIPTS, stress_texts

    def tokens(text: str) -> int:
        return len(text.encode("utf-8")) + 2  # bytes plus two specials

    probes = dict(stress_texts(max_length, tokens))
    assert set(probes) == {"s_repeat", "s_number", *(i for i, _ in RARE_SCRIPTS)}
    for i, text in probes.items():
        assert tokens(text) <= max_length or len(text) <= 8, (i, tokens(text))
        assert len(text) >= min(8, len(dict(RARE_SCRIPTS).get(i, text)))
    # a count that fits leaves the rare scripts whole
    assert dict(stress_texts(max_length, lambda t: 1))["s_tamil"] == dict(RARE_SCRIPTS)["s_tamil"]
