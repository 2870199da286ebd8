"""The embedding canary against real vLLM servers (started once per session, see conftest).

Faithful server (the bundled model, served as a user would): every check passes, Matryoshka included when
the model is flagged through --hf-overrides. CLS pooling: vector agreement fails, naming it. Without the
Matryoshka flag vLLM refuses ``dimensions`` with HTTP 400, and the matryoshka check fails showing that 400.
base64 output decodes to exactly the float output.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.cli import main

from .conftest import KEY_ENV, SERVED_NAME

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def canary(url, dataset, out, cache, *extra):
    argv = ["canary", "--endpoint", url, "--dataset", str(dataset), "--device", "cpu"]
    rc = main([*argv, "--cache-dir", str(cache), "--out", str(out), *extra])
    return rc, {v["check"]: v for v in json.loads((out / "canary.json").read_text())["verdicts"]}


def test_canary_passes_against_the_faithful_vllm(vllm_servers, minibeir_dir, tmp_path, reference_cache, capsys):
    rc, verdicts = canary(vllm_servers.faithful, minibeir_dir, tmp_path, reference_cache)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert all(v["passed"] is not False for v in verdicts.values()), out
    report = json.loads((tmp_path / "canary.json").read_text())
    assert report["served_model"] == SERVED_NAME
    assert verdicts["vector_agreement"]["details"]["min"] >= 0.9999
    assert abs(verdicts["retrieval_agreement"]["details"]["metrics"]["ndcg@10"]["delta"]) <= 0.002
    # vLLM's own behaviours, accepted as the contract allows (docs/engines.md):
    bad = verdicts["bad_input"]["message"]
    assert "empty string -> HTTP 200 with the reference's vector for ''" in bad, bad
    assert "empty list -> HTTP 400" in bad, bad
    assert verdicts["bad_input"]["details"]["over_long"]["status"] == 400  # refused unless truncate_prompt_tokens


def test_canary_fails_against_cls_pooling_vllm(
    vllm_servers, small_beir, tmp_path, reference_cache, monkeypatch, capsys
):
    monkeypatch.setenv(KEY_ENV, vllm_servers.key)
    rc, verdicts = canary(vllm_servers.cls, small_beir, tmp_path, reference_cache, "--api-key-env", KEY_ENV)
    out, err = capsys.readouterr()
    assert rc == 1, out
    assert verdicts["vector_agreement"]["passed"] is False
    assert verdicts["vector_agreement"]["message"].startswith("vector agreement: min cosine 0.")
    assert "FAIL  vector agreement:" in out
    assert verdicts["auth"]["passed"] is True, verdicts["auth"]["message"]  # vLLM's --api-key: 401 without it
    for text in (out, err, (tmp_path / "report.md").read_text(), (tmp_path / "canary.json").read_text()):
        assert vllm_servers.key not in text
    # the failure names its cause, with vLLM's remedy (issue #20)
    assert "cause: the server pools with CLS (the contract's: mean)" in out, out
    assert "vLLM: --pooler-config" in out
    [diagnosis] = json.loads((tmp_path / "canary.json").read_text())["diagnosis"]
    assert diagnosis["engine"] == "vllm" and [c["factor"] for c in diagnosis["causes"]] == ["pooling"]


def test_matryoshka_flagged_through_hf_overrides_passes(vllm_servers, small_beir, tmp_path, reference_cache, capsys):
    rc, verdicts = canary(
        vllm_servers.faithful, small_beir, tmp_path, reference_cache, "--canary-dimensions", "256,128"
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    m = verdicts["matryoshka"]
    assert m["passed"] is True, m["message"]
    for d in ("256", "128"):  # vLLM truncates and re-normalizes, as the reference does
        assert m["details"][d]["cosine_min"] >= 0.9999
        assert abs(m["details"][d]["norm_min"] - 1) < 1e-3 and abs(m["details"][d]["norm_max"] - 1) < 1e-3
    assert m["details"]["invalid_dimension"]["status"] == 400


def test_dimensions_without_the_matryoshka_flag_is_vllms_400(
    vllm_servers, small_beir, tmp_path, reference_cache, monkeypatch, capsys
):
    monkeypatch.setenv(KEY_ENV, vllm_servers.key)
    rc, verdicts = canary(
        vllm_servers.cls, small_beir, tmp_path, reference_cache, "--api-key-env", KEY_ENV, "--canary-dimensions", "128"
    )
    capsys.readouterr()
    assert rc == 1
    m = verdicts["matryoshka"]
    assert m["passed"] is False
    assert "HTTP 400: Model 'all-MiniLM-L6-v2' does not support Matryoshka embeddings" in m["message"], m["message"]


def test_base64_equals_float(vllm_servers):
    from evalsuite.encode.endpoint import EndpointConfig, EndpointEncoder
    from evalsuite.encode.response import Expectation

    texts = ["how does a database commit a transaction", "", "yeast makes bread dough rise " * 20]
    got = {}
    for fmt in ("float", "base64"):
        config = EndpointConfig(url=vllm_servers.faithful, model=SERVED_NAME, encoding_format=fmt)
        with EndpointEncoder(config, Expectation(dim=384, normalized=True)) as client:
            got[fmt] = client.embed(texts)
            got[f"{fmt}-128"] = client.embed(texts, dimensions=128)
    assert got["float"].shape == (3, 384) and got["float-128"].shape == (3, 128)
    np.testing.assert_array_equal(got["base64"], got["float"])
    np.testing.assert_array_equal(got["base64-128"], got["float-128"])
