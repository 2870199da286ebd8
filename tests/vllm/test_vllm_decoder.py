"""A decoder embedding model (a tiny random Qwen3: last-token pooling, the EOS its tokenizer appends, a query
instruction) on a real vLLM: served faithfully it passes the canary against the reference, its probes inside the
server's max length with the EOS counted, and `run --endpoint` equals the local run. Served broken (the
``vllm_full`` tier: two more server starts), each departure is named by the diagnosis with vLLM's remedy."""

from __future__ import annotations

import json

import pytest

from evalsuite.cli import main

from .conftest import DECODER_NAME
from .test_vllm_canary import canary

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def test_canary_passes_against_the_faithful_vllm_decoder(vllm_decoder, small_beir, tmp_path, reference_cache, capsys):
    rc, verdicts = canary(
        vllm_decoder.url, small_beir, tmp_path, reference_cache, "--model", str(vllm_decoder.model_dir)
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert all(v["passed"] is not False for v in verdicts.values()), out
    assert json.loads((tmp_path / "canary.json").read_text())["served_model"] == DECODER_NAME
    assert verdicts["vector_agreement"]["details"]["min"] >= 0.9999
    bad = verdicts["bad_input"]["message"]
    assert "empty string -> HTTP 200 with the reference's vector for ''" in bad, bad  # [EOS] alone, pooled
    assert verdicts["bad_input"]["details"]["over_long"]["status"] == 400  # refused: no truncate_prompt_tokens


def test_run_against_the_vllm_decoder_equals_the_local_run(vllm_decoder, small_beir, tmp_path, capsys):
    model = ["--model", str(vllm_decoder.model_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    assert main(["run", *model, "--out", str(tmp_path / "local")]) == 0
    assert main(["run", *model, "--endpoint", vllm_decoder.url, "--out", str(tmp_path / "served")]) == 0
    local, served = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("local", "served"))
    assert served["metrics"] == pytest.approx(local["metrics"], abs=1e-6)
    assert served["metrics"]["ndcg@10"] > 0


@pytest.mark.vllm_full
@pytest.mark.xdist_group("vllm-full")  # its own servers: on either worker, beside the "vllm" group (.ci/run)
@pytest.mark.parametrize(
    ("server", "factor", "says"),
    [
        ("mean", "pooling", ("cause: the server pools with MEAN (the contract's: last)", '"seq_pooling_type":"LAST"')),
        (
            "no_eos",
            "special",
            ("does not append the EOS token", "vLLM: serve the model directory with its own tokenizer"),
        ),
    ],
)
def test_each_decoder_departure_is_named(
    vllm_decoder_faults, small_beir, tmp_path, reference_cache, capsys, server, factor, says
):
    url = getattr(vllm_decoder_faults, server)
    rc, verdicts = canary(url, small_beir, tmp_path, reference_cache, "--model", str(vllm_decoder_faults.model_dir))
    out = capsys.readouterr().out
    assert rc == 1, out
    assert verdicts["vector_agreement"]["passed"] is False
    for text in says:
        assert text in out, out
    [diagnosis] = json.loads((tmp_path / "canary.json").read_text())["diagnosis"]
    assert [c["factor"] for c in diagnosis["causes"]] == [factor]


@pytest.mark.parametrize(
    ("mode", "value", "says"),
    [
        ("strip", "none", "cause: the server gets no prefixes (the contract's: query 'Instruct: "),
        ("add", "query_on_both", "cause: the query prefix 'Instruct: "),
    ],
    ids=["strip", "add"],
)
def test_a_gateway_that_drops_or_spreads_the_query_instruction_is_named(
    vllm_decoder, small_beir, tmp_path, reference_cache, capsys, mode, value, says
):
    """vLLM embeds each input as sent, so a wrong instruction comes from in front of it: a real loopback gateway
    before the faithful decoder server that drops the contract's query instruction from every input (``strip``),
    or prepends it to every input without it (``add``: documents too), is named by the diagnosis with vLLM's
    remedy."""
    from evalsuite.contract import build_contract
    from evalsuite.model import resolve_model
    from evalsuite.run.spec import RunSpec

    from ..canary.proxy import Proxy, Router, prefix_rewrite

    d = vllm_decoder.model_dir
    contract = build_contract(RunSpec(model=str(d)), resolve_model(str(d)))
    assert contract.query_prefix.startswith("Instruct: ") and contract.doc_prefix == ""  # declared by the model
    gateway = Proxy([vllm_decoder.url], Router(1), rewrite=prefix_rewrite(contract.query_prefix, mode))
    try:
        rc, verdicts = canary(gateway.url, small_beir, tmp_path, reference_cache, "--model", str(d))
    finally:
        gateway.stop()
    out = capsys.readouterr().out
    assert rc == 1, out
    assert verdicts["vector_agreement"]["passed"] is False
    [diagnosis] = json.loads((tmp_path / "canary.json").read_text())["diagnosis"]
    assert diagnosis["engine"] == "vllm"  # the gateway forwards /v1/models: the engine behind it is named
    assert {c["factor"]: c["value"] for c in diagnosis["causes"]} == {"prefix": value}, out
    assert says in out, out
    assert "vLLM's /v1/embeddings applies no prompt of its own" in out, out
