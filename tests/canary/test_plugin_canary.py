"""`pytest --model-rev R --endpoint URL`: canary checks as pytest items (pytester)."""

from __future__ import annotations

import pytest

from evalsuite.model import directory_digest

pytestmark = pytest.mark.usefixtures("model_stack_loaded")  # in-process pytester runs load torch once

BASE = ["-p", "no:randomly", "-p", "no:cacheprovider", "--device", "cpu", "--no-cache", "-v"]


def test_canary_items_pass_against_a_faithful_server(pytester, fault_server, tiny_model_dir, canary_dataset):
    result = pytester.runpytest(*BASE, "--model", str(tiny_model_dir), "--model-rev",
                                directory_digest(tiny_model_dir), "--dataset", str(canary_dataset),
                                "--endpoint", fault_server.url)
    out = result.stdout.str()
    assert result.ret == 0, out
    for check in ("identity", "vector_agreement", "norm_agreement", "batch_invariance", "retrieval_agreement",
                  "bad_input"):
        assert f"::canary[{check}] PASSED" in out
    assert "canary[auth]" not in out  # no key configured
    assert ": PASS vector agreement: " in out  # the terminal summary lists each verdict


def test_broken_server_fails_the_vector_agreement_item(pytester, fault_server, tiny_model_dir, canary_dataset,
                                                       api_key):
    fault_server.api_key = api_key
    fault_server.pooling = "cls"  # a broken deployment: another pooling than the contract
    result = pytester.runpytest(*BASE, "--model", str(tiny_model_dir), "--dataset", str(canary_dataset),
                                "--endpoint", fault_server.url, "--api-key-env", "EVALSUITE_CANARY_TEST_KEY",
                                "-k", "vector_agreement or auth")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 1
    assert "::canary[vector_agreement] FAILED" in out and "::canary[auth] PASSED" in out
    assert api_key not in out


def test_unset_key_variable_is_a_usage_error(pytester, fault_server, tiny_model_dir, monkeypatch):
    monkeypatch.delenv("EVALSUITE_NO_SUCH_KEY", raising=False)
    result = pytester.runpytest(*BASE, "--model", str(tiny_model_dir), "--endpoint", fault_server.url,
                                "--api-key-env", "EVALSUITE_NO_SUCH_KEY")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "EVALSUITE_NO_SUCH_KEY" in result.stderr.str()


@pytest.mark.integration
@pytest.mark.xdist_group("infinity")
def test_pytest_canary_against_real_infinity(pytester, infinity_servers, canary_dataset, bundled_model_dir,
                                            monkeypatch):
    rev = directory_digest(bundled_model_dir)
    monkeypatch.setenv("EVALSUITE_INFINITY_KEY", infinity_servers["key"])
    good = pytester.runpytest(*BASE, "--model-rev", rev, "--dataset", str(canary_dataset),
                              "--endpoint", infinity_servers["good"].url, "--api-key-env", "EVALSUITE_INFINITY_KEY")
    assert good.ret == 0, good.stdout.str()
    assert "::canary[auth] PASSED" in good.stdout.str()
    bad = pytester.runpytest(*BASE, "--model-rev", rev, "--dataset", str(canary_dataset),
                             "--endpoint", infinity_servers["cls"].url)
    out = bad.stdout.str()
    assert bad.ret == 1
    assert "::canary[vector_agreement] FAILED" in out
    assert "vector agreement: min cosine" in out
    assert infinity_servers["key"] not in out + good.stdout.str()
