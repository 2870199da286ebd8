"""A failed canary names its cause: the loopback fault server serves the real tiny reference's vectors
under one altered contract (or two), and the diagnosis must name exactly that departure.

The one-line bugs each test catches: pooling not among the tested alternatives, the normalization
axis dropped, truncation lengths not tried, the cut re-normalized always, the prefix modes not
rendered, output rounding not derived, alternatives tested one axis at a time only, or a diagnosis
made for a server that agrees.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.canary.report import write_canary_reports
from evalsuite.canary.runner import run_canary


def causes(outcome):
    assert outcome.diagnoses, [v.message for v in outcome.verdicts]
    return {c.factor: c.value for c in outcome.diagnoses[0].causes}


def test_faithful_server_passes_and_names_no_cause(fault_server, make_context, tmp_path):
    outcome = run_canary(make_context(fault_server.url))
    assert outcome.passed, [v.message for v in outcome.verdicts if v.passed is False]
    assert outcome.diagnoses == ()
    write_canary_reports(outcome, tmp_path)
    assert json.loads((tmp_path / "canary.json").read_text())["diagnosis"] == []
    assert "## Triage" not in (tmp_path / "report.md").read_text()


def test_cls_pooling_is_named_with_evidence_rank_and_triage(fault_server, make_context, tmp_path):
    fault_server.pooling = "cls"
    outcome = run_canary(make_context(fault_server.url))
    assert not outcome.passed
    assert causes(outcome) == {"pooling": "cls"}
    d = outcome.diagnoses[0]
    assert d.best.min_cosine > 0.9999 and d.best.max_difference < 1e-3
    assert d.contract.min_cosine < 0.99
    sentence = d.sentence()
    assert sentence.startswith("cause: the server pools with CLS (the contract's: mean)")
    assert "served vectors equal pooling=cls of the reference" in sentence
    write_canary_reports(outcome, tmp_path)
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["diagnosis"][0]["causes"][0]["factor"] == "pooling"
    assert report["diagnosis"][0]["ranked"][0] == {
        "rank": 1,
        "hypothesis": "pooling=cls",
        "min_cosine": pytest.approx(1.0, abs=1e-4),
        "max_relative_difference": pytest.approx(0.0, abs=1e-3),
        "worst": report["diagnosis"][0]["ranked"][0]["worst"],
    }
    first = [link for link in report["triage"] if link["first_broken"]]
    assert [link["stage"] for link in first] == ["shape"]  # before the agreement check that failed
    md = (tmp_path / "report.md").read_text()
    assert "## Triage" in md and "<- first broken link" in md and "pooling=cls" in md
    bad_input = next(v for v in outcome.verdicts if v.check == "bad_input")
    assert bad_input.passed is False  # the over-long text's vector is a CLS one too
    assert "truncates at another length" not in bad_input.message
    assert "disagree too" in bad_input.message and "so truncation is not the first cause" in bad_input.message


def test_identity_says_when_the_served_name_is_not_the_pinned_model(fault_server, make_context, tiny_prepared):
    fault_server.model = fault_server.listed[0] = fault_server.response_model = "prod-embed"
    outcome = run_canary(make_context(fault_server.url))
    identity = outcome.verdicts[0]
    assert identity.passed is True
    assert f"note: served as 'prod-embed', not as the pinned model {tiny_prepared.model.name!r}" in identity.message
    fault_server.model = fault_server.listed[0] = fault_server.response_model = tiny_prepared.model.name
    named = run_canary(make_context(fault_server.url)).verdicts[0]
    assert named.passed is True and "note:" not in named.message


def test_no_normalization_is_named(fault_server, make_context):
    fault_server.normalize = False
    outcome = run_canary(make_context(fault_server.url))
    assert causes(outcome) == {"normalize": False}
    assert "does not normalize" in outcome.diagnoses[0].sentence()


def test_two_faults_at_once_are_named_together(fault_server, make_context):
    fault_server.pooling = "cls"
    fault_server.normalize = False
    outcome = run_canary(make_context(fault_server.url))
    assert causes(outcome) == {"pooling": "cls", "normalize": False}
    assert "pools with CLS (the contract's: mean) and the server does not normalize" in outcome.diagnoses[0].sentence()


def test_truncation_shorter_than_the_contract_is_named(fault_server, make_context, tiny_model_dir, canary_dataset):
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    prepared = prepare(
        RunSpec(model=str(tiny_model_dir), dataset=str(canary_dataset), device="cpu", use_cache=False, max_length=128)
    )
    fault_server.max_length = 64  # the contract says 128
    # the tiny model's vectors of long texts change little with the cut: a strict threshold sees it
    outcome = run_canary(make_context(fault_server.url, prepared, min_cosine=0.9999))
    assert causes(outcome) == {"max_length": 64}
    assert "truncates at 64 tokens (the contract's max_length: 128)" in outcome.diagnoses[0].sentence()
    bad_input = next(v for v in outcome.verdicts if v.check == "bad_input")
    assert "truncates at another length" in bad_input.message  # here it does


def test_server_max_length_from_v1_models_is_tried(fault_server, make_context, tiny_model_dir, canary_dataset):
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    prepared = prepare(
        RunSpec(model=str(tiny_model_dir), dataset=str(canary_dataset), device="cpu", use_cache=False, max_length=128)
    )
    fault_server.max_length = 40  # in no fixed list: only the server's own report names it
    fault_server.model_extra = {"owned_by": "vllm", "max_model_len": 40}
    outcome = run_canary(make_context(fault_server.url, prepared, min_cosine=0.9999))
    assert causes(outcome) == {"max_length": 40}
    assert outcome.diagnoses[0].engine == "vllm"
    assert "vLLM: --max-model-len 128" in outcome.diagnoses[0].sentence()


def test_dimensions_without_renormalizing_are_named(fault_server, make_context):
    fault_server.renormalize_dims = False
    outcome = run_canary(make_context(fault_server.url, dimensions=(16,)))
    matryoshka = next(v for v in outcome.verdicts if v.check == "matryoshka")
    assert matryoshka.passed is False
    [d] = outcome.diagnoses
    assert d.what.endswith("dimensions=16")
    assert {c.factor: c.value for c in d.causes} == {"renormalize": False}
    assert "cuts without re-normalizing" in d.sentence()


def test_dropped_query_prefix_is_named(prepared_with, fault_server, make_context):
    prepared = prepared_with(query_prefix="query: ")
    fault_server.strip_prefix = "query: "
    outcome = run_canary(make_context(fault_server.url, prepared))
    assert causes(outcome) == {"prefix": "none"}
    assert "the server gets no prefixes" in outcome.diagnoses[0].sentence()


def test_texts_the_server_refuses_are_left_out_and_the_rest_diagnosed(prepared_with, fault_server, make_context):
    """A server that refuses the requests holding the long canary documents (HTTP 400) still has its cause named
    from the texts it embeds, sent again one a request; the texts it refuses are named."""
    prepared = prepared_with(query_prefix="query: ")
    fault_server.strip_prefix = "query: "
    fault_server.refuse_tokens = 40
    ctx = make_context(fault_server.url, prepared)
    outcome = run_canary(ctx)
    assert causes(outcome) == {"prefix": "none"}
    [d] = outcome.diagnoses
    assert "refused by the server and left out: " in d.what and "d_long" in d.what, d.what
    refused = int(d.what.split("(")[1].split(" ")[0])
    assert refused >= 1 and d.texts == len(ctx.canary_set().ids) - refused  # every other canary text is diagnosed
    assert [len(b["input"]) for b in fault_server.bodies].count(1) >= refused  # resent one text a request


def test_float16_rounded_vectors_are_named(fault_server, make_context):
    fault_server.rounding = "float16"
    outcome = run_canary(make_context(fault_server.url, min_cosine=0.999999999))
    assert causes(outcome) == {"rounding": "float16"}
    d = outcome.diagnoses[0]
    assert d.best.max_difference * 10 < d.contract.max_difference


def test_nothing_explains_a_server_of_another_model(fault_server, make_context):
    fault_server.fault = "batch_dependent"  # vectors shift with the request size: no contract makes them
    outcome = run_canary(make_context(fault_server.url))
    [d] = outcome.diagnoses
    assert not d.explained
    assert d.sentence().startswith("cause: no hypothesis explains the served vectors")
    assert "closest:" in d.sentence()


@pytest.mark.usefixtures("model_stack_loaded")
def test_pytest_item_message_and_junit_property_name_the_cause(
    pytester, fault_server, tiny_model_dir, canary_dataset, tmp_path
):
    fault_server.pooling = "cls"
    junit = tmp_path / "junit.xml"
    result = pytester.runpytest(
        *("-p", "no:randomly", "-p", "no:cacheprovider", "--device", "cpu", "--no-cache"),
        *("--model", str(tiny_model_dir), "--dataset", str(canary_dataset), "--endpoint", fault_server.url),
        *("-k", "vector_agreement", f"--junitxml={junit}"),
    )
    assert result.ret == 1
    assert "cause: the server pools with CLS (the contract's: mean)" in result.stdout.str()
    xml = junit.read_text()
    assert 'name="canary:vector_agreement:cause"' in xml and "the server pools with CLS" in xml


def test_suspect_model_revision_is_named(fault_server, make_context, tmp_path):
    from conftest import write_tiny_bert
    from evalsuite.encode.local import LocalEncoder
    from evalsuite.model import resolve_model

    other = write_tiny_bert(tmp_path / "other-revision", seed=1)  # same architecture, other weights
    served = LocalEncoder(resolve_model(str(other)), device="cpu", progress=False)
    fault_server.encoders = lambda max_length: served
    outcome = run_canary(make_context(fault_server.url, suspect_models=(str(other),)))
    assert causes(outcome) == {"model": str(other)}
    assert f"the server runs another model or revision ({other})" in outcome.diagnoses[0].sentence()
