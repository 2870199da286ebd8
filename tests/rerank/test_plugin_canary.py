"""`pytest --reranker-endpoint URL --reranker DIR`: the reranker canary's checks as pytest items (in-process
pytester), the same way `--endpoint` runs the embedding checks; against the loopback fault server of
conftest.py (real HTTP, the tiny cross-encoder's real scores) over a real first stage."""

from __future__ import annotations

import pytest

from evalsuite.canary.reranker.registry import RERANK_CHECKS

BASE = ["-p", "no:randomly", "-p", "no:cacheprovider", "--device", "cpu", "--no-cache", "-v"]


@pytest.fixture
def args(tiny_model_dir, small_beir, cross_encoder_dir):
    def make(*extra: str, reranker: bool = True) -> list[str]:
        return [
            *BASE,
            *("--model", str(tiny_model_dir), "--dataset", str(small_beir)),
            *(["--reranker", str(cross_encoder_dir)] if reranker else []),
            *("--reranker-canary-depth", "6", "--junitxml", "junit.xml"),
            *extra,
        ]

    return make


def test_reranker_checks_are_items_that_pass_against_a_faithful_server(pytester, model_stack_loaded, server, args):
    result = pytester.runpytest(*args("--reranker-endpoint", server.url))
    out = result.stdout.str()
    assert result.ret == 0, out
    for check in RERANK_CHECKS:
        assert f"::rerank-canary[{check.name}] PASSED" in out
    assert "::canary[" not in out  # no embedding checks without --endpoint
    assert ": PASS score agreement: " in out  # the terminal summary lists each verdict
    assert 'name="rerank-canary:score_agreement" value="PASS"' in (pytester.path / "junit.xml").read_text()


def test_a_partial_fault_fails_its_item_only(pytester, model_stack_loaded, server, args):
    """One score per query 0.05 off: score agreement fails (its worst pair), the index mapping still passes."""
    server.fault = "one_off"
    result = pytester.runpytest(*args("--reranker-endpoint", server.url, "-k", "score_agreement or index_mapping"))
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "::rerank-canary[score_agreement] FAILED" in out and "::rerank-canary[index_mapping] PASSED" in out
    assert "max |served - reference| 0.05 > 0.01" in out


def test_without_a_reranker_it_is_a_usage_error(pytester, server, args):
    result = pytester.runpytest(*args("--reranker-endpoint", server.url, reranker=False))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the reranker canary needs --reranker DIR" in result.stderr.str()
