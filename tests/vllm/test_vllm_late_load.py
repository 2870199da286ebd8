"""Late interaction and load against a real vLLM (the faithful server of the session, see conftest).

`late --late-endpoint` (CI's token_embed server): a server started with ``--pooler-config '{"task":
"token_embed"}'`` (the embedding server refuses that task with HTTP 400) gives one vector per token of the
bundled model on ``/pooling``, [CLS] and [SEP] kept; with ``--late-special-tokens keep`` they agree with the
local token vectors. `load`: a profile against vLLM, and a cutover with Infinity as old and vLLM as new.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from evalsuite.cli import main

from .conftest import SERVED_NAME

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def late(vllm_url, model_dir, dataset, out, *extra):
    argv = ["late", "--dataset", str(dataset), "--device", "cpu", "--no-cache", "--late-model", str(model_dir)]
    argv += ["--rerank-depth", "6", "--late-endpoint", vllm_url, "--late-served-model", SERVED_NAME]
    rc = main([*argv, "--out", str(out), *extra])
    return rc, json.loads((out / "late.json").read_text())["served_tokens"]


def test_late_against_vllm_token_embed(vllm_servers, bundled_model_dir, small_beir, tmp_path, capsys):
    rc, served = late(
        vllm_servers.tokens, bundled_model_dir, small_beir, tmp_path / "keep", "--late-special-tokens", "keep"
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    assert served["texts"] == 6 and not served["count_mismatches"]
    assert served["min_cosine"] > 0.9999
    assert "PASS  served token vectors:" in out
    # the contract's default drops [CLS]/[SEP]; vLLM keeps them: every text's token count differs by two
    rc, served = late(vllm_servers.tokens, bundled_model_dir, small_beir, tmp_path / "drop")
    assert rc == 1
    assert len(served["count_mismatches"]) == 6
    assert all(got == want + 2 for _, got, want in served["count_mismatches"]), served["count_mismatches"]


def test_the_embedding_server_refuses_token_embed(vllm_servers):
    import httpx

    body = {"model": SERVED_NAME, "input": ["how does a database commit"], "task": "token_embed"}
    resp = httpx.post(vllm_servers.faithful.removesuffix("/v1") + "/pooling", json=body, timeout=60)
    assert resp.status_code == 400
    assert "--pooler-config.task token_embed" in resp.json()["error"]["message"], resp.text


def load_main(argv):
    from evalsuite.jobs import LOAD, add_job

    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command", required=True), LOAD)
    args = parser.parse_args(["load", *argv])
    return args.func(args)


QUICK = ["--concurrency", "1,4", "--load-batch-sizes", "4", "--requests", "16", "--roles", "query"]


def test_load_profile_and_cutover_from_infinity_to_vllm(
    vllm_servers, bundled_model_dir, infinity_launcher, small_beir, tmp_path, capsys
):
    base = ["--dataset", str(small_beir), "--device", "cpu", "--no-cache", "--endpoint-timeout", "60", *QUICK]
    rc = load_main([*base, "--endpoint", vllm_servers.faithful, "--out", str(tmp_path / "profile")])
    out = capsys.readouterr().out
    assert rc == 0, out
    levels = json.loads((tmp_path / "profile" / "load.json").read_text())["profile"]["levels"]
    assert {lv["concurrency"] for lv in levels} == {1, 4}
    for lv in levels:
        assert lv["ok"] == 16 and lv["errors"] == 0 and lv["p95_ms"] >= lv["p50_ms"] > 0

    infinity = infinity_launcher(
        "vllm-cutover", {"old": (Path(bundled_model_dir), ["--served-model-name", SERVED_NAME])}
    )["old"]
    rc = load_main(
        [*base, "--old-endpoint", infinity.url, "--endpoint", vllm_servers.faithful, "--out", str(tmp_path / "cut")]
    )
    out = capsys.readouterr().out
    cut = json.loads((tmp_path / "cut" / "load.json").read_text())["cutover"]
    # the same model on both engines: quality holds; capacity is whatever the two engines measure here
    assert cut["quality_holds"] is True, cut["quality"]
    assert all(abs(q["delta"]) <= 0.002 for q in cut["quality"])
    gates = {g["gate"]: g for g in cut["gates"]}
    assert gates["error_rate:max_abs_rise=0"]["passed"] is True
    assert rc == (0 if cut["stands"] else 1), out
    assert (tmp_path / "cut" / "report.md").read_text().startswith("# Cutover: ")
