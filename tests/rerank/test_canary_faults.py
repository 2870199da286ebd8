"""The reranker canary against a fault-injecting /v1/rerank server on loopback (real HTTP, real scores of the tiny
cross-encoder): the faithful server passes every check; each fault is a failed verdict naming it, never a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.canary.reranker.context import make_rerank_context
from evalsuite.canary.reranker.registry import RERANK_CHECKS
from evalsuite.canary.reranker.settings import RerankCanarySettings
from evalsuite.canary.runner import SCHEMA_VERSION, run_rerank_canary
from evalsuite.rerank.run import RerankSpec


@pytest.fixture(scope="module")
def first_stage(tiny_model_dir, tmp_path_factory, make_beir, small_beir_records):
    from evalsuite.run.pipeline import run
    from evalsuite.run.spec import RunSpec

    corpus, queries, qrels = small_beir_records
    data = make_beir(tmp_path_factory.mktemp("rr-canary"), corpus, queries, qrels)
    spec = RunSpec(
        model=str(tiny_model_dir), dataset=str(data), device="cpu", use_cache=False, metrics=("ndcg@10", "mrr@10")
    )
    return spec, run(spec)


def canary(server, first_stage, cross_encoder_dir, **settings):
    spec, first = first_stage
    s = RerankCanarySettings(endpoint=server.url, depth=6, timeout=10, **settings)
    ctx = make_rerank_context(s, spec, RerankSpec(reranker=str(cross_encoder_dir)), first=first)
    outcome = run_rerank_canary(ctx)
    return {v.check: v for v in outcome.verdicts}, outcome


def test_faithful_server_passes_every_check(server, first_stage, cross_encoder_dir, tmp_path):
    from evalsuite.canary.report import write_canary_reports

    verdicts, outcome = canary(server, first_stage, cross_encoder_dir)
    assert list(verdicts) == [c.name for c in RERANK_CHECKS]
    assert all(v.passed for v in verdicts.values()), [v.message for v in verdicts.values()]
    assert verdicts["score_agreement"].details["max_abs_diff"] < 1e-6
    assert "empty documents list -> HTTP 422" in verdicts["bad_input"].message
    assert "over-long pair -> truncated like the reference" in verdicts["bad_input"].message
    assert (
        verdicts["index_mapping"].details["top_n"]["returned"] == verdicts["index_mapping"].details["top_n"]["expected"]
    )
    paths = write_canary_reports(outcome, tmp_path)
    written = json.loads(paths["json"].read_text())
    assert written["passed"] is True and written["schema_version"] == SCHEMA_VERSION
    assert written["family"] == "reranker" and written["contract"]["activation"] == "sigmoid"
    assert paths["markdown"].read_text().startswith("# Reranker canary: PASS")


@pytest.mark.parametrize(
    "fault, check, text",
    [
        ("shuffled", "index_mapping", "not sorted by score"),
        ("missing", "index_mapping", "5 result(s) for 6 document(s) (no top_n was sent"),
        ("duplicate", "index_mapping", "appears twice"),
        ("out_of_range", "index_mapping", "index 6 is out of range for 6 document(s)"),
        ("nan", "index_mapping", "a score must be a finite number"),
        ("wrong_documents", "score_agreement", "max |served - reference|"),
        ("no_activation", "score_agreement", "after activation 'sigmoid'"),
        ("ignores_top_n", "index_mapping", "6 result(s) for 6 document(s) (top_n=3); expected 3"),
        ("server_error_on_empty", "bad_input", "empty documents list -> HTTP 500 (a server error; expected a 4xx)"),
    ],
)
def test_each_fault_is_a_failed_verdict(server, first_stage, cross_encoder_dir, fault, check, text):
    server.fault = fault
    verdicts, outcome = canary(server, first_stage, cross_encoder_dir)
    assert outcome.passed is False
    assert verdicts[check].passed is False, verdicts[check].message
    assert text in verdicts[check].message
    if (
        check == "index_mapping" and fault != "ignores_top_n"
    ):  # the checks that need sound answers fail with the same cause, not a traceback
        assert verdicts["score_agreement"].passed is False and verdicts["reranked_metrics"].passed is False


def test_a_refused_over_long_pair_is_accepted_and_reported(server, first_stage, cross_encoder_dir):
    server.fault = "refuse_long"
    verdicts, outcome = canary(server, first_stage, cross_encoder_dir)
    assert outcome.passed, [v.message for v in verdicts.values()]
    assert "over-long pair -> HTTP 413 (refused)" in verdicts["bad_input"].message


def test_parser_scores_in_request_order_and_top_n():
    from evalsuite.rerank.shapes import APIS, parse_scores

    payload = {
        "results": [
            {"index": 2, "relevance_score": 0.9},
            {"index": 0, "relevance_score": 0.5},
            {"index": 1, "relevance_score": 0.1},
        ]
    }
    scores, order = parse_scores(payload, 3, APIS["rerank"])
    assert scores.tolist() == [0.5, 0.1, 0.9] and order == [2, 0, 1]
    top, order = parse_scores({"results": payload["results"][:2]}, 3, APIS["rerank"], top_n=2)
    assert order == [2, 0] and np.isnan(top[1])
    sg = [{"index": 1, "score": 3.0}, {"index": 0, "score": -1.0}]  # SGLang / TEI: a bare list with 'score'
    assert parse_scores(sg, 2, APIS["tei"])[0].tolist() == [-1.0, 3.0]
    vllm_score = {
        "data": [{"index": 0, "object": "score", "score": 0.2}, {"index": 1, "object": "score", "score": 0.7}]
    }
    assert parse_scores(vllm_score, 2, APIS["score"])[0].tolist() == [0.2, 0.7]  # /score: request order, unsorted


@pytest.mark.parametrize(
    "payload, error",
    [
        ({"results": [{"index": True, "relevance_score": 0.1}]}, "not an integer"),
        ({"results": [{"index": 0, "relevance_score": "0.1"}]}, "not a number"),
        ({"results": [{"index": 0}]}, "no 'relevance_score' or 'score'"),
        ({"scores": []}, "no 'results'"),
        ({"data": [{"index": 1, "score": 0.1}, {"index": 0, "score": 0.2}]}, "answers in request order"),
    ],
)
def test_parser_refuses_broken_answers(payload, error):
    from evalsuite.encode.response import ResponseError
    from evalsuite.rerank.shapes import APIS, parse_scores

    api = APIS["score"] if "data" in payload else APIS["rerank"]
    n = len(payload.get("results", payload.get("data", [])))
    with pytest.raises(ResponseError, match=error):
        parse_scores(payload, max(n, 1), api)


def test_kendall_tau_matches_scipy():
    from scipy.stats import kendalltau

    from evalsuite.canary.reranker.checks.agreement import kendall_tau

    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 5, size=12).astype(float)  # with ties
        b = a + rng.normal(scale=1.5, size=12)
        assert kendall_tau(a, b) == pytest.approx(kendalltau(a, b).statistic, abs=1e-12)
    assert kendall_tau(np.arange(5.0), -np.arange(5.0)) == pytest.approx(-1.0)


def test_one_score_per_query_off_fails_score_agreement(server, first_stage, cross_encoder_dir):
    """A partial fault: every other document is scored exactly, one per query is 0.05 off. The check judges
    the worst document (a check on the best, or on the mean of one query, would pass it)."""
    server.fault = "one_off"
    verdicts, outcome = canary(server, first_stage, cross_encoder_dir)
    score = verdicts["score_agreement"]
    assert score.passed is False and outcome.exit_status == 1, score.message
    assert score.details["max_abs_diff"] == pytest.approx(0.05, abs=1e-6)
    assert "max |served - reference| 0.05 > 0.01" in score.message


@pytest.mark.parametrize(
    "settings, failing",
    [
        ({}, "worst Kendall tau 0.867"),  # tau fails (one discordant pair of 15), top-5 overlap 0.80 holds
        ({"tau_min": 0.8, "overlap_min": 1.0}, "worst top-5 overlap 0.80"),  # tau holds, overlap fails
    ],
)
def test_ranking_agreement_needs_both_tau_and_overlap(server, first_stage, cross_encoder_dir, settings, failing):
    """The two lowest-scoring documents of every query trade scores: one condition breaks, the other holds,
    and the check fails either way."""
    server.fault = "swap_tail"
    verdicts, _ = canary(server, first_stage, cross_encoder_dir, **settings)
    ranking = verdicts["ranking_agreement"]
    assert ranking.passed is False, ranking.message
    assert failing in ranking.message
    assert ranking.details["tau_min"] == pytest.approx(13 / 15) and ranking.details["overlap_min"] == 0.8


def test_one_error_policy_a_spent_deadline_fails_every_check_naming_it(server, first_stage, cross_encoder_dir):
    """The reranker checks run under the embedding canary's policy (:func:`judge`): a check that starts after
    the deadline is a failed verdict naming it, never a traceback, and the outcome still reports."""
    verdicts, outcome = canary(server, first_stage, cross_encoder_dir, deadline=1e-9)
    assert list(verdicts) == [c.name for c in RERANK_CHECKS] and outcome.exit_status == 1
    for v in verdicts.values():
        assert v.passed is False and v.details["error"] == "EndpointDeadlineExceeded", v.message
        assert "not run: the reranker canary's deadline (1e-09s) ran out" in v.message


def test_a_bug_in_a_reranker_check_is_a_failed_verdict_not_a_traceback(server, first_stage, cross_encoder_dir):
    from evalsuite.checks import Check, judge

    def broken(ctx):
        return {}["missing"]

    spec, first = first_stage
    settings = RerankCanarySettings(endpoint=server.url, depth=6, timeout=10)
    ctx = make_rerank_context(settings, spec, RerankSpec(reranker=str(cross_encoder_dir)), first=first)
    try:
        v = judge(Check("broken", "broken", "a bug", "broken: ...", broken), ctx)
    finally:
        ctx.close()
    assert v.passed is False and v.details == {"error": "KeyError", "internal": True}
    assert v.message.startswith("broken: internal error in the check (KeyError")
