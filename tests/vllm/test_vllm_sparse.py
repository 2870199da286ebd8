"""The sparse canary against a real vLLM serving a tiny BGE-M3 for its lexical weights (CI's sparse server, see
conftest: ``BgeM3EmbeddingModel``, ``--pooler-config '{"task": "token_classify"}'``): `evalsuite canary --endpoint
URL --retrieval sparse` reads vLLM's ``/pooling`` answers (one weight per token, BOS and EOS cut), puts them on the
pinned tokenizer's ids and finds them equal to the local reference (:mod:`evalsuite.encode.sparse`, itself equal to
FlagEmbedding in tests/retrieval) text by text and run by run. The departures the diagnosis names are served by the
loopback stand-ins of tests/canary/test_sparse_canary.py (a real engine serves none of them on purpose)."""

from __future__ import annotations

import json

import pytest

from evalsuite.canary.sparse.registry import SPARSE_CHECKS
from evalsuite.cli import main

from .conftest import SPARSE_NAME

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm")]


def test_sparse_canary_against_vllm_token_classify(vllm_servers, vllm_bgem3_dir, small_beir, tmp_path, capsys):
    out = tmp_path / "sparse"
    argv = ["canary", "--endpoint", vllm_servers.sparse, "--served-model", SPARSE_NAME, "--retrieval", "sparse"]
    argv += ["--model", str(vllm_bgem3_dir), "--dataset", str(small_beir), "--device", "cpu", "--no-cache"]
    rc = main([*argv, "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    written = json.loads((out / "canary.json").read_text())
    assert written["family"] == "sparse" and written["passed"] is True
    verdicts = {v["check"]: v for v in written["verdicts"]}
    assert list(verdicts) == [c.name for c in SPARSE_CHECKS]
    tokens = verdicts["token_agreement"]["details"]
    assert tokens["min_overlap"] == 1.0 and tokens["reference_active_ids"] > 100, tokens
    assert verdicts["weight_agreement"]["details"]["max_abs_diff"] < 1e-4
    for m, row in verdicts["sparse_retrieval"]["details"]["metrics"].items():
        assert row["delta"] == pytest.approx(0.0, abs=1e-6), m
    bad = verdicts["sparse_bad_input"]["message"]
    assert "over-long text -> HTTP 400 (refused)" in bad, bad  # --max-model-len 128: vLLM refuses a longer input
