"""The reranker canary against a real vLLM serving a one-label BertForSequenceClassification.

vLLM answers /v1/rerank (best first) and /v1/score (request order) with a sigmoid applied. It refuses a
pair over the model's max length with HTTP 400 unless the request carries ``truncate_prompt_tokens``; the
canary sends the contract's max length there, records it in the report, and vLLM then truncates as the
reference does. A contract whose activation differs from the deployment's fails score agreement.
"""

from __future__ import annotations

import json

import httpx
import pytest

from evalsuite.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def rerank_canary(url, model_dir, dataset, out, *extra):
    argv = ["canary", "--reranker-endpoint", url, "--reranker", str(model_dir), "--dataset", str(dataset)]
    rc = main([*argv, "--device", "cpu", "--no-cache", "--reranker-canary-depth", "6", "--out", str(out), *extra])
    report = json.loads((out / "canary.json").read_text())
    return rc, report, {v["check"]: v for v in report["verdicts"]}


@pytest.mark.parametrize("api", ["rerank", "score"])
def test_rerank_canary_passes_on_the_faithful_vllm_reranker(
    api, vllm_servers, vllm_cross_encoder_dir, small_beir, tmp_path, capsys
):
    rc, report, verdicts = rerank_canary(
        vllm_servers.reranker, vllm_cross_encoder_dir, small_beir, tmp_path, "--reranker-api", api
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert all(v["passed"] is not False for v in verdicts.values()), out
    assert verdicts["score_agreement"]["details"]["max_abs_diff"] < 1e-4
    max_length = report["contract"]["max_length"]
    assert report["request_fields"] == {"truncate_prompt_tokens": max_length}
    assert f"`truncate_prompt_tokens: {max_length}`" in (tmp_path / "report.md").read_text()
    assert f"over-long pair -> truncated like the reference ({max_length} tokens)" in verdicts["bad_input"]["message"]


def test_vllm_refuses_an_over_long_pair_without_truncate_prompt_tokens(vllm_servers):
    long_doc = "a transaction commit makes every write durable " * 100
    body = {"query": "how does a database commit", "documents": [long_doc]}
    refused = httpx.post(f"{vllm_servers.reranker}/rerank", json=body, timeout=60)
    assert refused.status_code == 400
    assert "maximum context length is 512 tokens" in refused.text, refused.text
    truncated = httpx.post(f"{vllm_servers.reranker}/rerank", json={**body, "truncate_prompt_tokens": 512}, timeout=60)
    assert truncated.status_code == 200 and len(truncated.json()["results"]) == 1


def test_raw_scores_ask_vllm_for_logits(vllm_servers, vllm_cross_encoder_dir, small_beir, tmp_path, capsys):
    # vLLM ignores Infinity's raw_scores; the canary also sends use_activation=false, and the logits agree
    rc, report, verdicts = rerank_canary(
        vllm_servers.reranker,
        vllm_cross_encoder_dir,
        small_beir,
        tmp_path,
        "--reranker-activation",
        "none",
        "--reranker-raw-scores",
    )
    assert rc == 0, capsys.readouterr().out
    assert report["request_fields"]["use_activation"] is False
    assert verdicts["score_agreement"]["details"]["activation"] == "none"
    assert verdicts["score_agreement"]["details"]["max_abs_diff"] < 1e-4


def test_rerank_canary_fails_when_the_contract_activation_differs(
    vllm_servers, vllm_cross_encoder_dir, small_beir, tmp_path, capsys
):
    rc, _, verdicts = rerank_canary(
        vllm_servers.reranker, vllm_cross_encoder_dir, small_beir, tmp_path, "--reranker-activation", "none"
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert verdicts["score_agreement"]["passed"] is False
    assert "FAIL  score agreement: max |served - reference|" in out and "after activation 'none'" in out
