"""Two-stage evaluation: reranked order, one scoring for every depth, both stages' metrics and the gain."""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pytest

from evalsuite.base.errors import SpecError
from evalsuite.rerank.contract import RerankerContract
from evalsuite.rerank.twostage import evaluate_depths, rerank, top_ids
from evalsuite.run.result import read_results
from evalsuite.scoring.metrics import evaluate
from evalsuite.testing.builders import run_argv

CONTRACT = RerankerContract(
    model="oracle", model_revision="r", tokenizer_revision="t", activation="none", template="pair", max_length=64
)


def test_rerank_orders_the_head_by_score_ties_by_id_and_keeps_the_tail():
    first = {"q": {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5}}
    scores = {"q": {"a": 0.1, "b": 0.5, "c": 0.5, "d": 9.0}}
    out = rerank(first, scores, 3, ["q"])
    # head by score (b, c tie -> id descending, the documented tie order), then d, e as before
    assert list(out["q"]) == ["c", "b", "a", "d", "e"]
    values = list(out["q"].values())
    assert all(x > y for x, y in itertools.pairwise(values))  # ranx sees exactly this order
    with pytest.raises(SpecError, match="no reranker score for document d at depth 4"):
        rerank(first, scores | {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}, 4, ["q"])


def test_top_ids_reads_a_ranking_object_with_top():
    class R:
        def top(self, qid, k):
            return [("x", 2.0), ("y", 1.0)][:k]

    assert top_ids(R(), "q", 1) == ["x"]
    assert top_ids({"q": {"b": 2.0, "a": 1.0}}, "q", 5) == ["b", "a"]


@pytest.fixture(scope="module")
def first_stage(tiny_model_dir, tmp_path_factory, make_beir, small_beir_records):
    from evalsuite.run.pipeline import run
    from evalsuite.run.spec import RunSpec

    corpus, queries, qrels = small_beir_records
    data = make_beir(tmp_path_factory.mktemp("two-stage"), corpus, queries, qrels)
    return run(
        RunSpec(
            model=str(tiny_model_dir),
            dataset=str(data),
            device="cpu",
            use_cache=False,
            metrics=("ndcg@10", "mrr@10", "recall@3"),
        )
    )


def oracle_scorer(dataset, calls):
    """Scores a pair by its judged relevance (what a perfect reranker would do); counts its calls."""
    by_text = {
        (dataset.queries[q], dataset.corpus[d]): float(r) for q, docs in dataset.qrels.items() for d, r in docs.items()
    }

    def score(pairs, labels):
        calls.append(len(pairs))
        return np.array([by_text.get(p, 0.0) for p in pairs])

    return score


def test_one_scoring_serves_every_depth_and_the_metrics_match_ranx(first_stage):
    calls: list[int] = []
    ds = first_stage.dataset
    metrics = ["ndcg@10", "mrr@10", "recall@3"]
    results = evaluate_depths(first_stage, CONTRACT, oracle_scorer(ds, calls), [6, 2], metrics)
    assert calls == [6 * len(ds.query_ids)]  # the deepest depth's pairs, once
    assert [r.depth for r in results] == [2, 6]
    full = results[1]
    # reranking every document by its judgement is a perfect ranking
    assert full.metrics["ndcg@10"] == pytest.approx(1.0)
    # independent computation of depth 2: sort the first stage's top 2 by the oracle score, keep the rest
    expected = {}
    for q in ds.query_ids:
        order = list(first_stage.ranking[q])
        head = sorted(sorted(order[:2], reverse=True), key=lambda d: -ds.qrels[q].get(d, 0))  # ties: id descending
        expected[q] = {d: float(len(order) - i) for i, d in enumerate(head + order[2:])}
    agg, _ = evaluate(ds.qrels, expected, metrics)
    assert results[0].metrics == pytest.approx(agg)
    for r in results:
        for d in r.deltas:
            assert d.first == pytest.approx(first_stage.metrics[d.metric])
            assert d.delta == pytest.approx(r.metrics[d.metric] - first_stage.metrics[d.metric])
            assert d.n_queries == len(ds.query_ids)


def test_depth_beyond_the_first_stage_is_refused(first_stage):
    from dataclasses import replace

    shallow = replace(first_stage, ranking={q: dict(list(r.items())[:2]) for q, r in first_stage.ranking.items()})
    with pytest.raises(SpecError, match=r"rerank depth 5 exceeds the first stage's depth \(2 .*recall@5"):
        evaluate_depths(shallow, CONTRACT, lambda pairs, labels: np.zeros(len(pairs)), [5], ["ndcg@10"])


def test_rerank_cli_writes_both_stages(tiny_model_dir, cross_encoder_dir, small_beir, tmp_path, capsys):
    from evalsuite.jobs import RERANK, add_job

    parser = argparse.ArgumentParser(prog="evalsuite")
    add_job(parser.add_subparsers(dest="command"), RERANK)
    args = parser.parse_args(
        run_argv(
            str(tiny_model_dir),
            str(small_beir),
            "--reranker",
            str(cross_encoder_dir),
            "--rerank-depth",
            "3,6",
            "--reranker-activation",
            "none",
            "--out",
            str(tmp_path),
            command="rerank",
        )
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "depth 3" in out and "depth 6" in out and "ndcg@10:" in out
    report = read_results(tmp_path / "results.json")
    assert [d["depth"] for d in report["reranked"]] == [3, 6]
    d6 = report["reranked"][1]
    assert d6["reranker"]["activation"] == "none"
    assert set(report["metrics"]) == set(d6["metrics"])
    gain = {g["metric"]: g for g in d6["gain"]}
    for m, v in d6["metrics"].items():
        assert gain[m]["delta"] == pytest.approx(v - report["metrics"][m], abs=2e-6)
    assert (tmp_path / "report.md").read_text().startswith("# evalsuite two-stage run")
    assert not (tmp_path / "first_stage").exists() and not (tmp_path / "rerank.json").exists()
    pairs = [tuple(line.split()[:3:2]) for line in (tmp_path / "run.trec").read_text().splitlines()]
    first = [tuple(line.split()[:3:2]) for line in (tmp_path / "first_stage.trec").read_text().splitlines()]
    assert len(pairs) == len(first) > 0 and set(pairs) == set(first)  # reranking reorders, never drops


def test_run_with_a_reranker_is_the_two_stage_run(tiny_model_dir, cross_encoder_dir, small_beir, tmp_path, capsys):
    from evalsuite.cli import main

    code = main(
        run_argv(
            str(tiny_model_dir),
            str(small_beir),
            "--reranker",
            str(cross_encoder_dir),
            "--rerank-depth",
            "5",
            "--out",
            str(tmp_path),
        )
    )
    assert code == 0
    report = read_results(tmp_path / "results.json")  # where every run writes it, both stages
    assert [d["depth"] for d in report["reranked"]] == [5]
    assert set(report["reranked"][0]["metrics"]) == set(report["metrics"])
