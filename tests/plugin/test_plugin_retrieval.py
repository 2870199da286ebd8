"""The retriever under pytest: a bm25 baseline, a hybrid candidate named as a contract difference, gates on a
hybrid run, and the retriever from the spec file."""

from __future__ import annotations

import json

from .conftest import plugin_args


def test_retrieval_is_part_of_the_gated_contract(run_evalsuite, pytester, tiny, small_beir) -> None:
    model, _ = tiny
    baseline = pytester.path / "b.json"
    first = run_evalsuite(
        *plugin_args(model, small_beir, "--retrieval", "bm25", "--update-baseline", "--baseline", str(baseline))
    )
    first.result.assert_outcomes(passed=2)
    data = json.loads(baseline.read_text())
    assert data["manifest"]["contract"]["retrieval"].startswith("bm25:k1=1.5,b=0.75")
    # the same retriever: every default gate passes against the baseline
    same = run_evalsuite(*plugin_args(model, small_beir, "--retrieval", "bm25", "--baseline", str(baseline)))
    same.result.assert_outcomes(passed=2 + 4)
    # a hybrid candidate against a bm25 baseline: the contract item names the difference
    hybrid = pytester.runpytest(
        *plugin_args(model, small_beir, "--retrieval", "hybrid", "--baseline", str(baseline), "--gate", "ndcg@10>=0")
    )
    out = hybrid.stdout.str()
    assert "retrieval: baseline 'bm25:k1=1.5" in out and "candidate 'hybrid:fuse=dense+bm25,fusion=rrf" in out
    hybrid.assert_outcomes(passed=2, failed=1)


def test_the_spec_file_names_the_retriever(run_evalsuite, pytester, tiny, small_beir) -> None:
    model, _ = tiny
    (pytester.path / "evalsuite.toml").write_text(
        'retrieval = "hybrid"\nfusion = "wsum"\nfusion_weights = [0.8, 0.2]\n'
    )
    run = run_evalsuite(*plugin_args(model, small_beir, "--gate", "ndcg@10>=0.0"))
    run.result.assert_outcomes(passed=3)
    contract = run.report.dataset("small").results["manifest"]["contract"]
    assert contract["retrieval"].startswith("hybrid:fuse=dense+bm25,fusion=wsum,weights=0.8+0.2,norm=min-max")
    (pytester.path / "evalsuite.toml").write_text('retrieval = "hybrid"\nfusion_k = 5\nfusion = "sum"\n')
    bad = run_evalsuite(*plugin_args(model, small_beir))
    assert bad.result.ret == 4
    assert (
        "evalsuite.toml: fusion_k applies to --fusion rrf, not sum" in bad.result.stdout.str() + bad.result.stderr.str()
    )


def test_a_sparse_endpoint_under_pytest_is_sent_to_the_sparse_canary(pytester, tiny, small_beir) -> None:
    model, _ = tiny
    args = plugin_args(model, small_beir, "--retrieval", "sparse", "--endpoint", "http://127.0.0.1:9/v1")
    run = pytester.runpytest(*args)
    assert run.ret == 4
    out = run.stdout.str() + run.stderr.str()
    assert "the pytest canary items check a dense /v1/embeddings endpoint" in out
    assert "evalsuite canary --endpoint URL --retrieval sparse" in out
