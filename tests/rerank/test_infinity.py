"""The reranker canary against a real infinity-emb server serving the tiny cross-encoder directory on CPU.

Infinity answers POST /v1/rerank with {"results": [{"relevance_score", "index"}], ...}, sorted best first,
with a sigmoid applied (raw logits with "raw_scores": true). The canary passes against it when the contract
says what the server does, and names the failing check when the deployment's activation or pair template
differs from the contract.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# The session's Infinity servers live on one worker (xdist group "infinity"): the reranker beside the embedding
# servers, so the combined canary below meets both real engines without starting either twice.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity")]


@pytest.fixture(scope="module")
def infinity_reranker(cross_encoder_dir, infinity_launcher):
    import httpx

    server = infinity_launcher("rerank", {"reranker": (Path(cross_encoder_dir), [])})["reranker"]
    models = httpx.get(f"{server.url}/models", timeout=5).json()
    assert models["data"][0]["capabilities"] == ["rerank"]
    return server.url


def canary(argv, url, out, *extra, command="rerank-canary"):
    """``evalsuite canary --reranker-endpoint`` (command="canary") or its alias ``evalsuite rerank-canary``."""
    from evalsuite.cli import build_parser

    args = build_parser().parse_args(argv(command, url, out, *extra))
    rc = args.func(args)
    return rc, {v["check"]: v for v in json.loads((out / "canary.json").read_text())["verdicts"]}


def test_rerank_canary_against_infinity(infinity_reranker, canary_argv, tmp_path, capsys):
    rc, verdicts = canary(canary_argv, infinity_reranker, tmp_path / "good", command="canary")
    out = capsys.readouterr().out
    assert rc == 0, out
    assert all(v["passed"] for v in verdicts.values()), out
    assert verdicts["score_agreement"]["details"]["max_abs_diff"] < 1e-4
    assert "empty documents list -> HTTP 422" in verdicts["bad_input"]["message"]
    assert "over-long pair -> truncated like the reference (128 tokens)" in verdicts["bad_input"]["message"]

    # raw scores from the server against a contract without activation: the logits agree too
    rc, verdicts = canary(
        canary_argv,
        infinity_reranker,
        tmp_path / "raw",
        "--reranker-activation",
        "none",
        "--reranker-raw-scores",
    )
    assert rc == 0 and verdicts["score_agreement"]["details"]["activation"] == "none"

    # the deployment applies a sigmoid; a contract that declares none is a failed score agreement
    rc, verdicts = canary(
        canary_argv,
        infinity_reranker,
        tmp_path / "act",
        "--reranker-activation",
        "none",
        command="canary",
    )
    out = capsys.readouterr().out
    assert rc == 1
    assert verdicts["score_agreement"]["passed"] is False
    assert "FAIL  score agreement: max |served - reference|" in out and "after activation 'none'" in out

    # the deployment uses the tokenizer's pair encoding; a contract with a one-text template differs
    rc, verdicts = canary(
        canary_argv,
        infinity_reranker,
        tmp_path / "tpl",
        "--reranker-template",
        "query: {query} document: {document}",
    )
    assert rc == 1
    assert verdicts["score_agreement"]["passed"] is False


@pytest.mark.parametrize("embedding", ["good", "cls"])
def test_one_canary_command_runs_both_canaries_against_real_infinity_servers(
    infinity_reranker, infinity_servers, cross_encoder_dir, small_beir, tmp_path, capsys, monkeypatch, embedding
):
    """`evalsuite canary --endpoint E --reranker-endpoint R` against the session's real embedding servers and the real
    reranker server: both canaries run, each report lands in its place, and the worse exit status wins (bug: only
    one of them run, or the reranker's pass hiding the embedding deployment's CLS pooling)."""
    from evalsuite.cli import main

    monkeypatch.setenv("EVALSUITE_INFINITY_COMBINED_KEY", infinity_servers["key"])
    server = infinity_servers[embedding]
    key = ["--api-key-env", "EVALSUITE_INFINITY_COMBINED_KEY"] if embedding == "good" else []
    argv = ["canary", "--endpoint", server.url, *key, "--reranker-endpoint", infinity_reranker]
    argv += ["--reranker", str(cross_encoder_dir), "--reranker-canary-depth", "6", "--dataset", str(small_beir)]
    argv += ["--device", "cpu", "--out", str(tmp_path)]
    rc = main(argv)
    out = capsys.readouterr().out
    embedded = json.loads((tmp_path / "canary.json").read_text())
    reranked = json.loads((tmp_path / "reranker" / "canary.json").read_text())
    assert reranked["passed"] is True, out  # the reranker deployment is faithful in both cases
    assert embedded["passed"] is (embedding == "good"), out
    assert rc == (0 if embedding == "good" else 1)
    if embedding == "cls":
        failed = {v["check"] for v in embedded["verdicts"] if not v["passed"]}
        assert "vector_agreement" in failed and "pools with CLS" in out
    assert infinity_servers["key"] not in out
