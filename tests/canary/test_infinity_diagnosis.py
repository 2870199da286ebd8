"""The diagnosis against real infinity-emb servers (started once per session by the root conftest):
a CLS-pooling deployment, Infinity's `dimensions` without re-normalizing, and Infinity truncating at the
model's 256 tokens under a 512-token contract. Each canary names that cause, with Infinity's remedy.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.canary.diagnosis import diagnosis_for
from evalsuite.canary.embedding.registry import run_check
from evalsuite.canary.embedding.settings import CanarySettings
from evalsuite.canary.runner import local_context, run_canary
from evalsuite.cli import main
from evalsuite.run.pipeline import prepare
from evalsuite.run.spec import RunSpec

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]

KEY_ENV = "EVALSUITE_INFINITY_TEST_KEY"


def test_cls_deployment_is_named_with_infinitys_remedy(
    infinity_servers, canary_dataset, tmp_path, reference_cache, capsys
):
    rc = main(
        [
            "canary",
            "--endpoint",
            infinity_servers["cls"].url,
            "--dataset",
            str(canary_dataset),
            "--device",
            "cpu",
            "--cache-dir",
            str(reference_cache),
            "--out",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert "cause: the server pools with CLS (the contract's: mean)" in out
    assert "Infinity: fix 1_Pooling/config.json" in out
    report = json.loads((tmp_path / "canary.json").read_text())
    [diagnosis] = report["diagnosis"]
    assert diagnosis["engine"] == "infinity"
    assert [c["factor"] for c in diagnosis["causes"]] == ["pooling"]
    assert diagnosis["ranked"][0]["min_cosine"] > 0.9999
    assert diagnosis["contract"]["min_cosine"] < 0.9
    bad_input = next(v for v in report["verdicts"] if v["check"] == "bad_input")
    assert "truncates at another length" not in bad_input["message"]


def test_dimensions_without_renormalizing_are_named(infinity_servers, canary_dataset, monkeypatch, reference_cache):
    monkeypatch.setenv(KEY_ENV, infinity_servers["key"])
    prepared = prepare(RunSpec(dataset=str(canary_dataset), device="cpu", cache_dir=str(reference_cache)))
    ctx = local_context(
        CanarySettings(endpoint=infinity_servers["good"].url, api_key_env=KEY_ENV, dimensions=(128,)), prepared
    )
    try:
        verdict = run_check("matryoshka", ctx)
        d = diagnosis_for(ctx, verdict)
    finally:
        ctx.close()
    assert verdict.passed is False and d is not None
    assert {c.factor: c.value for c in d.causes} == {"renormalize": False}
    assert "Infinity cuts 'dimensions' without re-normalizing" in d.sentence()


def test_truncation_at_the_models_256_under_a_512_contract_is_named(
    infinity_servers, canary_dataset, monkeypatch, reference_cache
):
    monkeypatch.setenv(KEY_ENV, infinity_servers["key"])
    prepared = prepare(
        RunSpec(dataset=str(canary_dataset), device="cpu", cache_dir=str(reference_cache), max_length=512)
    )
    ctx = local_context(CanarySettings(endpoint=infinity_servers["good"].url, api_key_env=KEY_ENV), prepared)
    outcome = run_canary(ctx)
    assert not outcome.passed, [v.message for v in outcome.verdicts]
    [d] = outcome.diagnoses
    assert {c.factor: c.value for c in d.causes} == {"max_length": 256}
    assert "the server truncates at 256 tokens (the contract's max_length: 512)" in d.sentence()
