"""The canary checks through CanaryContext/run_check (the plugin's API) against the fault server."""

from __future__ import annotations

import dataclasses
import logging

import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.canary.embedding.registry import CANARY_CHECKS, check_names, run_check
from evalsuite.canary.embedding.settings import CanarySettings
from evalsuite.checks import CheckOutcome

from .conftest import API_KEY_ENV, CHECK_ORDER

ALL = CHECK_ORDER


def run_all(ctx) -> dict[str, CheckOutcome]:
    return {name: run_check(name, ctx) for name in check_names(ctx.settings)}


def test_check_names_follow_the_settings():
    base = CanarySettings(endpoint="http://127.0.0.1:1/v1")
    assert check_names(base) == ALL[:12]
    assert check_names(dataclasses.replace(base, dimensions=(16,), api_key_env="K")) == ALL
    with pytest.raises(SpecError, match="unknown canary check 'nope'"):
        run_check("nope", None)


def test_every_check_passes_against_a_faithful_server(fault_server, make_context, api_key, caplog):
    caplog.set_level(logging.DEBUG)
    fault_server.api_key = api_key
    ctx = make_context(fault_server.url, api_key_env=API_KEY_ENV, dimensions=(16, 8), batch_size=4)
    verdicts = run_all(ctx)
    assert list(verdicts) == ALL
    for v in verdicts.values():
        assert v.passed is True, v.message
    for check in CANARY_CHECKS:  # each run function answers under its declaration's name and label
        assert verdicts[check.name].check == check.name
        assert verdicts[check.name].message.startswith(check.label + ": ")
    assert verdicts["identity"].message.startswith("identity: 'tiny-model' is listed by /v1/models")
    assert verdicts["vector_agreement"].message.startswith("vector agreement: 27 texts, min cosine ")
    assert "delta +0.0000" in verdicts["retrieval_agreement"].message
    assert verdicts["retrieval_agreement"].details["top10_overlap"]["mean"] == 1.0
    assert "empty list -> HTTP 422" in verdicts["bad_input"].message
    assert "over-long input -> truncated like the contract (64 tokens" in verdicts["bad_input"].message
    assert "dimensions=33 -> HTTP 400" in verdicts["matryoshka"].message
    assert verdicts["auth"].message.startswith("auth: no key -> HTTP 401, a wrong key -> HTTP 401")
    # the key: sent to the server, and nowhere else
    assert all(
        h.get("Authorization") in (f"Bearer {api_key}", None) or "wrong" in h["Authorization"]
        for h in fault_server.headers
    )
    seen = caplog.text + repr(ctx) + repr(ctx.settings) + repr(ctx.client()) + repr(ctx.client().config)
    seen += "".join(v.message + repr(v.details) for v in verdicts.values())
    assert api_key not in seen


def test_a_server_that_drops_the_query_prefix_fails_vector_agreement(prepared_with, fault_server, make_context):
    prepared = prepared_with(query_prefix="query: ")
    fault_server.strip_prefix = "query: "
    v = run_check("vector_agreement", make_context(fault_server.url, prepared))
    assert v.passed is False
    assert v.message.startswith("vector agreement: min cosine ")
    assert "only query texts disagree: check the query prefix ('query: ' per the contract)" in v.message
    sent = [t for b in fault_server.bodies for t in b["input"]]
    assert sum(t.startswith("query: ") for t in sent) == 12  # the client applied the contract's prefix


def test_a_cls_pooling_deployment_fails_vector_agreement(fault_server, make_context):
    fault_server.pooling = "cls"
    v = run_check("vector_agreement", make_context(fault_server.url))
    assert v.passed is False
    assert v.message.startswith("vector agreement: min cosine") and "< 0.99 on " in v.message
    assert v.details["min"] < 0.99


@pytest.mark.parametrize(
    "fault, needle",
    [
        ("nan", "vector agreement: item d_long "),
        ("drop", "vector agreement: response has "),
        ("dup_index", "vector agreement: item "),
        ("wrong_dim", "vector agreement: item "),
    ],
)
def test_response_faults_fail_the_check_with_the_item_named(fault_server, make_context, fault, needle):
    fault_server.fault = fault
    v = run_check("vector_agreement", make_context(fault_server.url))
    assert v.passed is False
    assert v.message.startswith(needle), v.message
    assert v.details["error"] in ("NonFiniteVector", "CountMismatch", "IndexMismatch", "DimensionMismatch")


def test_shuffled_indexes_pass_after_reordering(fault_server, make_context):
    fault_server.fault = "shuffle"
    ctx = make_context(fault_server.url, batch_size=5)
    for name in ("vector_agreement", "batch_invariance"):
        v = run_check(name, ctx)
        assert v.passed is True, v.message


def test_retried_errors_still_pass_and_a_hang_fails_within_its_timeout(fault_server, make_context):
    import time

    fault_server.fail_first = [500, 503, 429]
    ctx = make_context(fault_server.url)
    assert run_check("vector_agreement", ctx).passed is True
    fault_server.hang = True
    t0 = time.monotonic()
    v = run_check("batch_invariance", make_context(fault_server.url, timeout=0.5))
    assert time.monotonic() - t0 < 3
    assert v.passed is False and "no answer within 0.5s" in v.message


def test_bad_input_failures_are_named(fault_server, make_context, server_encoders):
    fault_server.empty_list_status = 200
    fault_server.fault = "empty_ok"
    fault_server.max_length = 16  # the deployment truncates at another length than the contract
    v = run_check("bad_input", make_context(fault_server.url))
    assert v.passed is False
    assert "empty string -> HTTP 200 with a vector unlike the reference's for ''" in v.message
    assert "empty list -> HTTP 200, expected a 4xx" in v.message
    assert "over-long input -> HTTP 200 with a vector unlike the reference truncated at 64 tokens" in v.message


def test_matryoshka_without_renormalization_and_ignored_dimensions(fault_server, make_context):
    fault_server.renormalize_dims = False  # what Infinity does
    v = run_check("matryoshka", make_context(fault_server.url, dimensions=(16,)))
    assert v.passed is False
    assert "dimensions=16: norms " in v.message and "truncates without re-normalizing" in v.message
    fault_server.honour_dimensions = False
    v = run_check("matryoshka", make_context(fault_server.url, dimensions=(16,)))
    assert v.passed is False and "the server ignored it" in v.message
    with pytest.raises(SpecError, match="exceeds the model's output dimension 32"):
        run_check("matryoshka", make_context(fault_server.url, dimensions=(64,)))


def test_auth_fails_when_the_server_does_not_enforce_the_key(fault_server, make_context, api_key):
    fault_server.api_key = api_key
    fault_server.enforce_key = False
    v = run_check("auth", make_context(fault_server.url, api_key_env=API_KEY_ENV))
    assert v.passed is False
    assert "a request with no key got HTTP 200, expected 401: the server does not enforce the API key" in v.message
    assert api_key not in v.message


def test_a_401_for_the_canary_names_the_fix_without_the_key(fault_server, make_context, api_key, caplog):
    caplog.set_level(logging.DEBUG)
    fault_server.api_key = "sk-the-servers-other-key"
    v = run_check("identity", make_context(fault_server.url, api_key_env=API_KEY_ENV, max_retries=0))
    assert v.passed is False
    assert v.message.startswith("identity: GET ") and "HTTP 401" in v.message and "--api-key-env" in v.message
    assert api_key not in v.message + caplog.text


def test_identity_names_an_unlisted_model_and_asks_when_ambiguous(fault_server, make_context):
    v = run_check("identity", make_context(fault_server.url, served_model="prod-embed"))
    assert v.passed is False
    assert "served model 'prod-embed' is not listed by /v1/models (it lists 'tiny-model')" in v.message
    fault_server.listed = ["a", "b"]
    with pytest.raises(SpecError, match=r"lists 2 models \(a, b\); pass --served-model NAME"):
        run_check("identity", make_context(fault_server.url))


def test_retrieval_agreement_reports_metric_deltas(fault_server, make_context, tiny_prepared):
    from evalsuite.run.pipeline import run

    ctx = make_context(fault_server.url)
    real = ctx.reference_result()
    shifted = dataclasses.replace(real, metrics={m: v + 0.1 for m, v in real.metrics.items()})
    ctx._reference_result = lambda: shifted  # fault injection: a reference that scores 0.1 higher
    ctx._cache.pop("reference_result")
    v = run_check("retrieval_agreement", ctx)
    assert v.passed is False
    assert v.message.startswith("retrieval agreement: |delta ndcg@10| 0.1000 > 0.005")
    assert "recall@10 -0.1000" in v.message and "mean top-10 overlap 1.000" in v.message
    other = run(
        tiny_prepared.spec.replace(pooling="cls"),
        dataclasses.replace(tiny_prepared, contract=tiny_prepared.contract.replace(pooling="cls")),
    )
    ctx._reference_result = lambda: other  # the reference of another contract
    ctx._cache.pop("reference_result")
    with pytest.raises(ContractError, match="pooling: reference 'cls', canary 'mean'"):
        run_check("retrieval_agreement", ctx)


def test_silent_truncation_fails_when_the_contract_rejects_long_input(
    fault_server, make_context, tiny_model_dir, canary_dataset
):
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    prepared = prepare(
        RunSpec(
            model=str(tiny_model_dir), dataset=str(canary_dataset), device="cpu", use_cache=False, truncation="reject"
        )
    )
    v = run_check("bad_input", make_context(fault_server.url, prepared))
    assert v.passed is False
    assert (
        "over-long input -> HTTP 200: the server truncates silently, but the contract's truncation policy is "
        "'reject'" in v.message
    )


# -- each check's named failure ----------------------------------------------------------------------
def _length_coded_prepared(tmp_path, make_beir, tiny_model_dir, **spec):
    """40 documents of 1..40 words, queries of 1..5 words, every text one in-vocabulary word (one token)
    repeated: the tiny model's vectors depend on the token count only, so a query's nearest documents are the
    ones of about its length."""
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    docs = [{"_id": f"d{n:02d}", "title": "", "text": " ".join(["index"] * n)} for n in range(1, 41)]
    queries = [{"_id": f"q{n}", "text": " ".join(["index"] * n)} for n in range(1, 6)]
    root = make_beir(tmp_path / "coded", docs, queries, [(f"q{n}", f"d{n:02d}", 1) for n in range(1, 6)])
    return prepare(RunSpec(model=str(tiny_model_dir), dataset=str(root), device="cpu", use_cache=False, **spec))


def test_a_server_truncating_shorter_passes_the_delta_but_fails_rank_agreement(
    fault_server, make_context, tmp_path, make_beir, tiny_model_dir
):
    prepared = _length_coded_prepared(tmp_path, make_beir, tiny_model_dir)
    faithful = run_check("retrieval_agreement", make_context(fault_server.url, prepared))
    assert faithful.passed is True and faithful.details["top10_overlap"]["mean"] == 1.0
    assert "(95% CI +0.0000 .. +0.0000)" in faithful.message
    fault_server.max_length = 8  # the contract says 64: every document over 6 words gets the same vector
    v = run_check("retrieval_agreement", make_context(fault_server.url, prepared))
    details = v.details
    assert details["metrics"]["ndcg@10"]["delta"] == 0.0  # every relevant document is still first
    assert details["top10_overlap"]["mean"] < 0.9
    assert v.passed is False
    assert v.message.startswith(
        f"retrieval agreement: mean top-10 overlap {details['top10_overlap']['mean']:.3f} "
        "< 0.9 although |delta ndcg@10| 0.0000 is within 0.005"
    )
    relaxed = run_check("retrieval_agreement", make_context(fault_server.url, prepared, min_overlap=0.3))
    assert relaxed.passed is True  # the threshold is a setting
    # slices of the canary: every short query is in the qlen<=32 slice, whose delta is the whole set's
    by_slice = {m["slice"]: m for m in details["slices"]}
    assert by_slice["qlen<=32"]["n_queries"] == details["queries"] == len(prepared.dataset.query_ids)
    assert by_slice["qlen<=32"]["ci"]["delta"] == pytest.approx(details["metrics"]["ndcg@10"]["delta"], abs=1e-9)


def test_rank_overlap_reads_the_documented_tie_order():
    from evalsuite.checks.parity import rank_overlap
    from evalsuite.retrieval.search import Ranking

    ref = Ranking.from_scores({"q": {f"d{i}": 1.0 for i in range(12)}})  # all tied: d9, d8, ... d11, d10, d1, d0
    shuffled = {"q": dict(reversed(list(ref["q"].items())))}  # same scores, other insertion order
    assert rank_overlap(ref, shuffled, k=10) == {"q": 1.0}
    assert rank_overlap(ref, {"q": {"d0": 2.0, "d1": 1.5}}, k=2) == {"q": 0.0}  # ref top-2 is d9, d8


def test_norm_agreement_fails_when_the_server_normalizes_an_unnormalized_contract(
    fault_server, make_context, tmp_path, make_beir, tiny_model_dir
):
    prepared = _length_coded_prepared(tmp_path, make_beir, tiny_model_dir, normalize=False, similarity="dot")
    v = run_check("norm_agreement", make_context(fault_server.url, prepared))
    assert v.passed is False
    assert v.message.startswith("norm agreement: served norm 1.0000 vs reference ")
    assert "the server normalizes but the contract says normalize=false" in v.message


def test_batch_invariance_fails_when_vectors_depend_on_the_batch(fault_server, make_context):
    assert run_check("batch_invariance", make_context(fault_server.url)).passed is True
    fault_server.fault = "batch_dependent"
    v = run_check("batch_invariance", make_context(fault_server.url))
    assert v.passed is False
    assert "the server's batching (padding or order) changes vectors" in v.message
