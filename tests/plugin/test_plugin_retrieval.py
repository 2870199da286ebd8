"""The retriever under pytest: a bm25 baseline, a hybrid candidate named as a contract difference, gates on a
hybrid run, and the retriever from the spec file."""

from __future__ import annotations

import json
import re

import pytest

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


BASELINE_KINDS = [  # one gate of each kind judged against a baseline, and what an identical rerun gives
    ("ndcg@10>=0.0", "PASS"),
    ("ndcg@10:max_drop=0.01", "PASS"),
    ("recall@10:max_rel_drop=2%", "PASS"),
    ("mrr@10:no_significant_drop", "PASS"),
    ("ndcg@10:non_inferior=0.01", "PASS"),
    ("ndcg@10>=1.01", "FAIL"),  # above any ndcg: the gates judge, they do not just pass
]  # min_gain judges a reranked stage against its first stage: tests/rerank


@pytest.mark.parametrize("retrieval", ["dense", "sparse", "bm25", "multivector", "hybrid"])
def test_every_gate_kind_judges_every_retriever(run_evalsuite, pytester, tmp_path_factory, small_beir, retrieval):
    """A BGE-M3-shaped model (dense, sparse and token-vector heads) under each retriever: its baseline written, then
    an identical rerun judged by one gate of every baseline kind; each verdict is what the kind says of a run equal
    to its baseline, and the recorded contract names the retriever."""
    from evalsuite.testing.tiny_sparse import write_tiny_bgem3

    model = write_tiny_bgem3(tmp_path_factory.mktemp("bgem3") / "m")
    baseline = pytester.path / "b.json"
    first = run_evalsuite(
        *plugin_args(model, small_beir, "--retrieval", retrieval, "--update-baseline", "--baseline", str(baseline))
    )
    first.result.assert_outcomes(passed=2)
    recorded = json.loads(baseline.read_text())["manifest"]["contract"].get(
        "retrieval", "dense"
    )  # dense: the default, unwritten
    assert recorded.split(":")[0] == retrieval, recorded
    gates = [a for expr, _ in BASELINE_KINDS for a in ("--gate", expr)]
    again = run_evalsuite(
        *plugin_args(model, small_beir, "--retrieval", retrieval, "--baseline", str(baseline), *gates)
    )
    again.result.assert_outcomes(passed=2 + len(BASELINE_KINDS) - 1, failed=1)
    out = again.result.stdout.str()
    for expr, status in BASELINE_KINDS:
        assert re.search(rf"^\s+{status}\s+{re.escape(expr)}: ", out, re.M), (expr, out[-3000:])
