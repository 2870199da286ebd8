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

# One xdist group, like tests/canary/test_infinity.py: a single worker starts the server.
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("infinity-rerank")]


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
