"""Broken vLLM deployments of the bundled model beyond CLS pooling (the ``vllm_full`` tier: two more server
starts than CI's time budget holds; run with ``pytest -m vllm_full tests/vllm``).

No normalization (``--pooler-config '{"use_activation": false}'``): the direction is right, the norms are not,
and the canary names it. A server max length shorter than the contract (``--max-model-len 128`` < 256):
short texts agree, the long ones are refused with vLLM's 400, and the canary names it.
"""

from __future__ import annotations

import pytest

from .test_vllm_canary import canary

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("vllm-full"), pytest.mark.vllm_full]


def test_canary_fails_against_vllm_without_normalization(vllm_full, minibeir_dir, tmp_path, reference_cache, capsys):
    rc, verdicts = canary(vllm_full.nonorm, minibeir_dir, tmp_path, reference_cache)
    out = capsys.readouterr().out
    assert rc == 1, out
    failed = {name for name, v in verdicts.items() if v["passed"] is False}
    assert "vector_agreement" in failed, out
    msg = verdicts["vector_agreement"]["message"]
    assert "norm" in msg, msg


def test_canary_fails_against_vllm_with_a_shorter_max_length(
    vllm_full, minibeir_dir, tmp_path, reference_cache, capsys
):
    rc, verdicts = canary(vllm_full.short, minibeir_dir, tmp_path, reference_cache)
    out = capsys.readouterr().out
    assert rc == 1, out
    assert verdicts["vector_agreement"]["passed"] is False
    msg = verdicts["vector_agreement"]["message"]
    assert "maximum context length is 128 tokens" in msg, msg
