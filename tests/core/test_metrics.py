import math

import pytest

from evalsuite.base.errors import SpecError
from evalsuite.retrieval.search import Ranking
from evalsuite.scoring.metrics import cutoff, evaluate, paired_test, parse_metric, parse_metrics, search_depth


def test_metric_names():
    assert parse_metric(" NDCG@10 ") == "ndcg@10"
    assert parse_metrics("ndcg@10,recall@100,mrr@10,map,rbp.95") == ("ndcg@10", "recall@100", "mrr@10", "map", "rbp.95")
    assert cutoff("recall@100") == 100 and cutoff("map") == 0
    assert search_depth(["ndcg@10", "recall@1000"]) == 1000 and search_depth(["mrr@10"]) == 100
    for bad in ("bogus@10", "ndcg@0", "ndcg@ten"):
        with pytest.raises(SpecError):
            parse_metric(bad)


def test_evaluate_against_hand_computed_values():
    qrels = {"q1": {"a": 2, "b": 1}, "q2": {"c": 1}, "q3": {"z": 1}}
    ranking = {"q1": {"b": 0.9, "x": 0.8, "a": 0.7}, "q2": {"x": 0.9, "y": 0.5, "c": 0.1}, "q3": {}}
    agg, per_query = evaluate(qrels, ranking, ["mrr@10", "recall@2", "ndcg@3"])
    assert per_query["mrr@10"] == {"q1": 1.0, "q2": pytest.approx(1 / 3), "q3": 0.0}
    assert per_query["recall@2"] == {"q1": 0.5, "q2": 0.0, "q3": 0.0}
    dcg = 1 / math.log2(2) + 2 / math.log2(4)  # ranx's ndcg uses the relevance as gain (Jarvelin)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert per_query["ndcg@3"]["q1"] == pytest.approx(dcg / idcg)
    assert agg["mrr@10"] == pytest.approx((1 + 1 / 3) / 3)


def test_single_metric():
    agg, per_query = evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["ndcg@10"])
    assert agg == {"ndcg@10": 1.0} and per_query == {"ndcg@10": {"q": 1.0}}


def test_paired_test_edges():
    same = {f"q{i}": 0.5 for i in range(10)}
    assert paired_test(same, same) == 1.0
    assert paired_test({"q": 1.0}, {"q": 0.0}) == 1.0  # one query: no test
    with pytest.raises(SpecError, match="student or fisher"):
        paired_test(same, {k: 0.1 for k in same}, test="wilcoxon")


def test_relevance_zero_and_negative_are_non_relevant():
    qrels = {"q": {"a": 2, "b": 0, "c": -1, "d": 1}}
    ranking = {"q": {"c": 0.9, "b": 0.8, "a": 0.7, "e": 0.6, "d": 0.5}}
    _, pq = evaluate(qrels, ranking, ["recall@3", "recall@5", "ndcg@5", "mrr@5", "precision@3"])
    assert pq["recall@3"]["q"] == 0.5  # a of {a, d}: b (0) and c (-1) neither count nor enlarge the denominator
    assert pq["recall@5"]["q"] == 1.0
    assert pq["mrr@5"]["q"] == pytest.approx(1 / 3)
    assert pq["precision@3"]["q"] == pytest.approx(1 / 3)
    dcg = 2 / math.log2(4) + 1 / math.log2(6)  # c (-1) at rank 1 adds no negative gain
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert pq["ndcg@5"]["q"] == pytest.approx(dcg / idcg)


def test_ties_are_scored_in_the_documented_order():
    """Equal scores: document id descending, in a plain dict as in a Ranking; ranx never reorders them."""
    qrels = {"q": {"a": 1}, "p": {"z": 1}}
    scores = {"q": {"a": 0.5, "b": 0.5, "c": 0.5}, "p": {"z": 0.5, "y": 0.5}}
    _, pq = evaluate(qrels, scores, ["mrr@10", "ndcg@1", "recall@2"])
    assert pq["mrr@10"] == {"q": pytest.approx(1 / 3), "p": 1.0}
    assert pq["ndcg@1"] == {"q": 0.0, "p": 1.0} and pq["recall@2"] == {"q": 0.0, "p": 1.0}
    ranking = Ranking.from_scores(scores)
    assert ranking.doc_ids["q"] == ("c", "b", "a")
    assert evaluate(qrels, ranking, ["mrr@10"])[1] == {"mrr@10": pq["mrr@10"]}
    # many tied documents: the rank scores keep a 50-way tie in order whatever ranx's sort does
    wide = {"q": {f"d{i:02d}": 1.0 for i in range(50)}}
    _, pq = evaluate({"q": {"d00": 1}}, wide, ["mrr@100"])
    assert pq["mrr@100"]["q"] == pytest.approx(1 / 50)
