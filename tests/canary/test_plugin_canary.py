"""`pytest --model-rev R --endpoint URL`: canary checks as pytest items (pytester)."""

from __future__ import annotations

import pytest

from evalsuite.model import directory_digest

from .conftest import checks_but

pytestmark = pytest.mark.usefixtures("model_stack_loaded")  # in-process pytester runs load torch once

BASE = ["-p", "no:randomly", "-p", "no:cacheprovider", "--device", "cpu", "--no-cache", "-v"]


def test_canary_items_pass_against_a_faithful_server(pytester, fault_server, tiny_model_dir, canary_dataset):
    result = pytester.runpytest(
        *BASE,
        "--model",
        str(tiny_model_dir),
        "--model-rev",
        directory_digest(tiny_model_dir),
        "--dataset",
        str(canary_dataset),
        "--endpoint",
        fault_server.url,
    )
    out = result.stdout.str()
    assert result.ret == 0, out
    for check in checks_but("matryoshka", "auth"):
        assert f"::canary[{check}] PASSED" in out
    assert "canary[auth]" not in out  # no key configured
    assert ": PASS vector agreement: " in out  # the terminal summary lists each verdict


def test_broken_server_fails_the_vector_agreement_item(pytester, fault_server, tiny_model_dir, canary_dataset, api_key):
    fault_server.api_key = api_key
    fault_server.pooling = "cls"  # a broken deployment: another pooling than the contract
    result = pytester.runpytest(
        *BASE,
        "--model",
        str(tiny_model_dir),
        "--dataset",
        str(canary_dataset),
        "--endpoint",
        fault_server.url,
        "--api-key-env",
        "EVALSUITE_CANARY_TEST_KEY",
        "-k",
        "vector_agreement or auth",
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == 1
    assert "::canary[vector_agreement] FAILED" in out and "::canary[auth] PASSED" in out
    assert api_key not in out


def test_unset_key_variable_is_a_usage_error(pytester, fault_server, tiny_model_dir, monkeypatch):
    monkeypatch.delenv("EVALSUITE_NO_SUCH_KEY", raising=False)
    result = pytester.runpytest(
        *BASE, "--model", str(tiny_model_dir), "--endpoint", fault_server.url, "--api-key-env", "EVALSUITE_NO_SUCH_KEY"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "EVALSUITE_NO_SUCH_KEY" in result.stderr.str()


@pytest.mark.integration
@pytest.mark.xdist_group("infinity")
def test_pytest_canary_against_real_infinity(
    pytester, infinity_servers, canary_dataset, bundled_model_dir, monkeypatch
):
    rev = directory_digest(bundled_model_dir)
    monkeypatch.setenv("EVALSUITE_INFINITY_KEY", infinity_servers["key"])
    good = pytester.runpytest(
        *BASE,
        "--model-rev",
        rev,
        "--dataset",
        str(canary_dataset),
        "--endpoint",
        infinity_servers["good"].url,
        "--api-key-env",
        "EVALSUITE_INFINITY_KEY",
    )
    assert good.ret == 0, good.stdout.str()
    assert "::canary[auth] PASSED" in good.stdout.str()
    bad = pytester.runpytest(
        *BASE, "--model-rev", rev, "--dataset", str(canary_dataset), "--endpoint", infinity_servers["cls"].url
    )
    out = bad.stdout.str()
    assert bad.ret == 1
    assert "::canary[vector_agreement] FAILED" in out
    assert "vector agreement: min cosine" in out
    assert infinity_servers["key"] not in out + good.stdout.str()


def test_gate_endpoint_gates_the_model_as_served(pytester, fault_server, tiny_model_dir, canary_dataset, tmp_path):
    """--gate-endpoint: the gated candidate result comes from --endpoint; without it the candidate is local."""
    import json

    baseline, reports = tmp_path / "baseline.json", tmp_path / "reports"
    common = [*BASE, "--model", str(tiny_model_dir), "--dataset", str(canary_dataset), "--reports-dir", str(reports)]
    assert pytester.runpytest(*common, "--update-baseline", "--baseline", str(baseline)).ret == 0
    gated = [
        *common,
        "--baseline",
        str(baseline),
        "--gate",
        "ndcg@10:max_drop=0.005",
        "--gate",
        "mrr@10:max_drop=0.005",
        "--endpoint",
        fault_server.url,
        "-k",
        "gate",
    ]
    faithful = pytester.runpytest(*gated, "--gate-endpoint")
    assert faithful.ret == 0, faithful.stdout.str()
    n_texts = 8 + 5  # the canary dataset's documents and queries, all encoded by the server
    assert sum(len(b["input"]) for b in fault_server.bodies) == n_texts
    manifests = [json.loads(p.read_text()) for p in reports.rglob("results.json")]
    assert any(m.get("manifest", m).get("encoder", {}).get("kind") == "endpoint" for m in manifests)
    # a different deployment: it truncates every text to its first token; on the tiny random model that
    # scores ndcg@10 0.5683 against the local 0.6760, so a bar between the two tells which one was gated
    fault_server.max_length = 3
    fault_server.bodies.clear()
    bar = [*common, "--gate", "ndcg@10>=0.62", "--endpoint", fault_server.url, "-k", "gate"]
    local = pytester.runpytest(*bar)
    assert local.ret == 0, local.stdout.str()  # without --gate-endpoint the candidate is the local model
    assert "ndcg@10 0.6760" in local.stdout.str()
    assert not fault_server.bodies
    served = pytester.runpytest(*bar, "--gate-endpoint")
    assert served.ret == 1, served.stdout.str()
    assert "0.5683" in served.stdout.str()
    # the canary still compares the served model with the local reference, not with itself
    agreement = pytester.runpytest(
        *common, "--endpoint", fault_server.url, "--gate-endpoint", "-k", "retrieval_agreement"
    )
    assert agreement.ret == 1 and "::canary[retrieval_agreement] FAILED" in agreement.stdout.str()


def test_gate_endpoint_without_endpoint_is_a_usage_error(pytester, tiny_model_dir):
    result = pytester.runpytest(*BASE, "--model", str(tiny_model_dir), "--gate-endpoint")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--gate-endpoint" in result.stderr.str() and "--endpoint" in result.stderr.str()


def test_several_endpoints_run_each_check_against_every_member_and_name_the_failing_one(
    pytester, fault_server, second_server, tiny_model_dir, canary_dataset
):
    second_server.pooling = "cls"  # member 2 of 2 is the broken one
    result = pytester.runpytest(
        *BASE,
        "--model",
        str(tiny_model_dir),
        "--dataset",
        str(canary_dataset),
        "--endpoint",
        fault_server.url,
        "--endpoint",
        second_server.url,
        "-k",
        "vector_agreement or identity",
    )
    out = result.stdout.str()
    assert result.ret == 1, out
    # one item per check, whatever the fleet's size; its failure names the member and its cause
    assert "::canary[identity] PASSED" in out and "::canary[vector_agreement] FAILED" in out
    assert f"member 2 of 2, {second_server.url}: vector agreement: min cosine" in out
    assert f"member 2 of 2, {second_server.url}: cause: the server pools with CLS" in out
    # the terminal summary lists each member's verdict: member 1 passed
    assert f": PASS member 1 of 2, {fault_server.url}: vector agreement: " in out
    assert f": FAIL member 2 of 2, {second_server.url}: vector agreement: " in out
    # both members were asked: each answered the canary texts
    assert fault_server.bodies and second_server.bodies


@pytest.mark.integration
@pytest.mark.xdist_group("infinity")
def test_gate_endpoint_gates_the_model_as_served_by_real_infinity(
    pytester, infinity_servers, minibeir_dir, tmp_path, reference_cache
):
    """--gate-endpoint against the session's real CLS Infinity deployment (the stand-in above covers the faults): a
    bar between the local 0.7635 and the served 0.6712 passes the local candidate and fails the served one (bug: the
    flag ignored, or the served vectors gated in place of the local ones without it)."""
    cache = reference_cache
    bar = ["-p", "no:randomly", "-p", "no:cacheprovider", "--device", "cpu", "--cache-dir", str(cache), "-v"]
    bar += ["--dataset", str(minibeir_dir), "--gate", "ndcg@10>=0.72", "-k", "gate"]
    bar += ["--endpoint", infinity_servers["cls"].url, "--reports-dir", str(tmp_path / "reports")]
    local = pytester.runpytest(*bar)
    assert local.ret == 0, local.stdout.str()
    assert "ndcg@10 0.7635" in local.stdout.str()
    served = pytester.runpytest(*bar, "--gate-endpoint")
    assert served.ret == 1, served.stdout.str()
    assert "0.671" in served.stdout.str() and "ndcg@10 0.7635" not in served.stdout.str()
