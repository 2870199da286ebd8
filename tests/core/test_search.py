"""search.py directly, against a brute-force numpy oracle that sorts by the documented tie order."""

import numpy as np
import pytest

from evalsuite.base.errors import ContractError, SpecError
from evalsuite.retrieval.search import Ranking, search
from evalsuite.scoring.metrics import evaluate, search_depth


def oracle(queries: np.ndarray, docs: np.ndarray, doc_ids: list[str], k: int, similarity: str) -> list[list[str]]:
    """Every score by numpy, then a plain sort: score descending, ties by document id descending."""
    q, d = queries.astype(np.float64), docs.astype(np.float64)
    if similarity == "l2":
        scores = -((q[:, None, :] - d[None, :, :]) ** 2).sum(-1)
    else:
        scores = q @ d.T
    out = []
    for row in scores:
        by_id_desc = sorted(range(len(doc_ids)), key=lambda j: doc_ids[j], reverse=True)
        ordered = sorted(by_id_desc, key=lambda j: -row[j])  # stable: ties keep the id-descending order
        out.append([doc_ids[j] for j in ordered[:k]])
    return out


def test_ties_follow_the_documented_order():
    docs = np.array([[1, 0], [1, 0], [0, 1], [1, 0], [1, 0]], dtype=np.float32)
    ids = ["b", "d", "z", "a", "c"]  # inserted out of order: FAISS's own order is not the tie order
    r = search(np.array([[1, 0]], dtype=np.float32), docs, query_ids=["q"], doc_ids=ids, k=5, similarity="dot")
    assert r.doc_ids["q"] == ("d", "c", "b", "a", "z")
    assert r.scores["q"] == (1.0, 1.0, 1.0, 1.0, 0.0)
    assert list(r["q"]) == ["d", "c", "b", "a", "z"] and r.top("q", 2) == ("d", "c")


@pytest.mark.parametrize("similarity", ["dot", "l2"])
def test_ties_straddling_the_cutoff_are_cut_in_tie_order(similarity):
    """40 documents tie with the best score (beyond FAISS's first fetch of k + 16): the top 5 are the 5
    largest ids of the whole tie group, whatever order FAISS found them in."""
    rng = np.random.default_rng(3)
    n, n_tied = 120, 40
    ids = [f"doc{j:03d}" for j in range(n)]
    docs = rng.integers(-2, 3, size=(n, 6)).astype(np.float32)
    docs[:n_tied] = [2, 2, 2, 2, 2, 2]  # same vector: exact ties under any similarity
    docs[n_tied:, 0] = -2  # every other document scores lower for the first query
    perm = rng.permutation(n)  # shuffle the insertion order
    docs, ids = docs[perm], [ids[j] for j in perm]
    queries = np.vstack([np.full((1, 6), 2, dtype=np.float32), rng.integers(-2, 3, size=(7, 6))]).astype(np.float32)
    qids = [f"q{i}" for i in range(len(queries))]
    for k in (5, 39, 40, 41):
        r = search(queries, docs, query_ids=qids, doc_ids=ids, k=k, similarity=similarity)
        expected = oracle(queries, docs, ids, k, similarity)
        assert [list(r.doc_ids[q]) for q in qids] == expected, k
    assert r.doc_ids["q0"][:5] == ("doc039", "doc038", "doc037", "doc036", "doc035")


def test_many_queries_with_exact_ties_match_the_oracle():
    rng = np.random.default_rng(0)
    docs = rng.integers(-1, 2, size=(300, 4)).astype(np.float32)  # 81 distinct vectors: ties everywhere
    queries = rng.integers(-1, 2, size=(50, 4)).astype(np.float32)
    ids = [f"d{int(x)}" for x in rng.permutation(300)]
    qids = [f"q{i}" for i in range(50)]
    for similarity in ("dot", "l2"):
        r = search(queries, docs, query_ids=qids, doc_ids=ids, k=10, similarity=similarity)
        assert [list(r.doc_ids[q]) for q in qids] == oracle(queries, docs, ids, 10, similarity)


def test_l2_ranks_nearest_first():
    docs = np.array([[3.0], [1.0], [2.0], [-0.5]], dtype=np.float32)
    r = search(
        np.zeros((1, 1), dtype=np.float32),
        docs,
        query_ids=["q"],
        doc_ids=["far", "one", "two", "near"],
        k=4,
        similarity="l2",
    )
    assert r.doc_ids["q"] == ("near", "one", "two", "far")
    assert r.scores["q"] == (-0.25, -1.0, -4.0, -9.0)  # negated squared distances
    ip = search(
        np.ones((1, 1), dtype=np.float32),
        docs,
        query_ids=["q"],
        doc_ids=["far", "one", "two", "near"],
        k=4,
        similarity="cosine",
    )
    assert ip.doc_ids["q"] == ("far", "two", "one", "near")


def test_search_depth_reaches_the_largest_cutoff():
    rng = np.random.default_rng(1)
    docs = rng.normal(size=(400, 8)).astype(np.float32)
    queries = rng.normal(size=(3, 8)).astype(np.float32)
    ids = [f"d{j}" for j in range(400)]
    metrics = ["ndcg@10", "recall@250"]
    k = search_depth(metrics)
    r = search(queries, docs, query_ids=["a", "b", "c"], doc_ids=ids, k=k, similarity="dot")
    assert k == 250 and all(len(r.doc_ids[q]) == 250 for q in r) and r.depth == 250 and r.corpus_size == 400
    # a relevant document at rank 200 counts for recall@250
    qrels = {q: {r.doc_ids[q][199]: 1} for q in r}
    agg, _ = evaluate(qrels, r, metrics)
    assert agg["recall@250"] == 1.0
    shallow = search(queries, docs, query_ids=["a", "b", "c"], doc_ids=ids, k=100, similarity="dot")
    with pytest.raises(ContractError, match="recall@250 look deeper than the search went"):
        evaluate(qrels, shallow, metrics)
    small = search(queries, docs[:30], query_ids=["a", "b", "c"], doc_ids=ids[:30], k=k, similarity="dot")
    assert all(len(small.doc_ids[q]) == 30 for q in small)  # a small corpus: every document, and no error
    evaluate({q: {"d0": 1} for q in small}, small, metrics)


def test_nan_query_retrieves_nothing():
    docs = np.eye(3, dtype=np.float32)
    q = np.array([[1, 0, 0], [np.nan, 0, 0]], dtype=np.float32)
    r = search(q, docs, query_ids=["ok", "bad"], doc_ids=["x", "y", "z"], k=2, similarity="dot")
    assert r.doc_ids["ok"][0] == "x" and r.doc_ids["bad"] == ()


def test_bad_input():
    v = np.eye(2, dtype=np.float32)
    with pytest.raises(SpecError, match="choose one of cosine, dot, l2"):
        search(v, v, query_ids=["a", "b"], doc_ids=["x", "y"], k=1, similarity="manhattan")
    with pytest.raises(ContractError, match="2 document vectors for 3 document ids"):
        search(v, v, query_ids=["a", "b"], doc_ids=["x", "y", "z"], k=1)
    with pytest.raises(ContractError, match="not unique"):
        search(v, v, query_ids=["a", "b"], doc_ids=["x", "x"], k=1)
    with pytest.raises(SpecError, match="k=0"):
        search(v, v, query_ids=["a", "b"], doc_ids=["x", "y"], k=0)


def test_ranking_value():
    r = Ranking.from_scores({"q": {"a": 0.5, "c": 0.9, "b": 0.5}, "empty": {}})
    assert r.doc_ids == {"q": ("c", "b", "a"), "empty": ()}
    assert r["q"] == {"c": 0.9, "b": 0.5, "a": 0.5} and list(r["q"]) == ["c", "b", "a"]
    assert r.rank_scores("q") == {"c": 3.0, "b": 2.0, "a": 1.0}
    with pytest.raises(ContractError, match="not in the tie order"):
        Ranking({"q": ("a", "b")}, {"q": (0.5, 0.5)})  # a tie in ascending id order
    with pytest.raises(ContractError, match="not in the tie order"):
        Ranking({"q": ("a", "b")}, {"q": (0.1, 0.5)})
    with pytest.raises(ContractError, match="twice"):
        Ranking({"q": ("a", "a")}, {"q": (0.5, 0.4)})
    with pytest.raises(ContractError, match="NaN"):
        Ranking.from_scores({"q": {"a": float("nan")}})
