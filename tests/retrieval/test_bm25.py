"""The bm25 retriever: bm25s's scores, the documented tie order, only documents sharing a term; checked against
an independent BM25 on the same tokens (a brute-force loop over the formulas for Lucene, Robertson, ATIRE and
BM25L; rank_bm25 for BM25+, whose BM25L multiplies by the term frequency once more than the published formula)
and against bm25s's own retrieve."""

from __future__ import annotations

import math
from collections import Counter

import bm25s
import numpy as np
import pytest

from evalsuite.base.errors import MissingExtra, SpecError
from evalsuite.retrieval.retrievers import parse_retrieval
from evalsuite.retrieval.retrievers.bm25 import BM25Settings, bm25_ranking
from evalsuite.retrieval.search import tie_order_key

from .conftest import Texts

K1, B, DELTA = 1.2, 0.7, 0.5


def _tokens(texts: list[str]) -> list[list[str]]:
    return [list(t) for t in bm25s.tokenize(texts, stopwords="en", return_ids=False, show_progress=False)]


def _idf(method: str, df: int, n: int) -> float:
    if method == "lucene":
        return math.log(1 + (n - df + 0.5) / (df + 0.5))
    if method == "robertson":
        return math.log(max((n - df + 0.5) / (df + 0.5), 1.0))
    return math.log(n / df)  # atire


def _brute_force(method: str, queries: list[list[str]], docs: list[list[str]]) -> list[dict[int, float]]:
    """Per query, {document index: score} of the documents sharing a term, by the formulas themselves."""
    if method == "bm25l":
        return _bm25l(queries, docs)
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    counts = [Counter(d) for d in docs]
    out = []
    for q in queries:
        scores: dict[int, float] = {}
        for j, c in enumerate(counts):
            shared = [t for t in q if c[t]]
            if not shared:
                continue
            norm = K1 * (1 - B + B * len(docs[j]) / avg)
            per_term = (c[t] * ((K1 + 1) if method == "atire" else 1) / (c[t] + norm) for t in shared)
            scores[j] = sum(_idf(method, df[t], n) * tf for t, tf in zip(shared, per_term, strict=True))
        out.append(scores)
    return out


def _bm25l(queries: list[list[str]], docs: list[list[str]]) -> list[dict[int, float]]:
    """BM25L (Lv and Zhai 2011): idf log((N+1)/(df+0.5)) times (k1+1)(c+delta)/(k1+c+delta), c = tf/(1-b+b dl/avgdl),
    for every query term (a term the document lacks scores its delta part too)."""
    n = len(docs)
    avg = sum(len(d) for d in docs) / n
    df = Counter(t for d in docs for t in set(d))
    out = []
    for q in queries:
        scores: dict[int, float] = {}
        for j, d in enumerate(docs):
            c = Counter(d)
            if not any(c[t] for t in q):
                continue
            total = 0.0
            for t in q:
                if df[t]:
                    ctd = c[t] / (1 - B + B * len(d) / avg)
                    total += math.log((n + 1) / (df[t] + 0.5)) * (K1 + 1) * (ctd + DELTA) / (K1 + ctd + DELTA)
            scores[j] = total
        out.append(scores)
    return out


def _rank_bm25(method: str, queries: list[list[str]], docs: list[list[str]]) -> list[dict[int, float]]:
    import rank_bm25

    model = rank_bm25.BM25Plus(docs, k1=K1, b=B, delta=DELTA)
    out = []
    for q in queries:
        s = model.get_scores(q)
        shared = {j for j, d in enumerate(docs) if set(q) & set(d)}
        out.append({j: float(s[j]) for j in shared})
    return out


def _expected(scores: dict[int, float], ids: list[str], k: int) -> list[tuple[str, float]]:
    return sorted(((ids[j], s) for j, s in scores.items()), key=lambda h: tie_order_key(*h))[:k]


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_and_order_equal_an_independent_bm25(method: str, minibeir_texts: Texts) -> None:
    t = minibeir_texts
    settings = BM25Settings(k1=K1, b=B, method=method)
    ranking, entry = bm25_ranking(settings, t, 20)
    q_tokens, d_tokens = _tokens(list(t.queries)), _tokens(list(t.docs))
    oracle = (_rank_bm25 if method == "bm25+" else _brute_force)(method, q_tokens, d_tokens)
    ids = [str(d) for d in t.doc_ids]
    compared = 0
    for qid, scores in zip(t.query_ids, oracle, strict=True):
        want = _expected(scores, ids, 20)
        got = list(zip(ranking.doc_ids[qid], ranking.scores[qid], strict=True))
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5, err_msg=qid)
        # the same documents in the same order, up to scores equal within float32 (their order is then the id's)
        assert [d for d, _ in got] == [d for d, _ in want] or _same_up_to_float32(got, want), qid
        compared += len(got)
    assert compared > 1000
    assert entry["documents"] == len(ids) and entry["queries_short"] > 0


def _same_up_to_float32(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> bool:
    if {d for d, _ in got} != {d for d, _ in want} and len(got) == len(want):
        return False
    return all(math.isclose(g[1], w[1], rel_tol=1e-5) for g, w in zip(got, want, strict=True))


def test_defaults_rank_as_bm25s_itself(minibeir_texts: Texts) -> None:
    """bm25s's own index + retrieve, with its defaults: the same top documents with the same scores."""
    t = minibeir_texts
    ranking, _ = bm25_ranking(BM25Settings.of(parse_retrieval("bm25")), t, 10)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(list(t.docs), stopwords="en", show_progress=False), show_progress=False)
    docs, scores = retriever.retrieve(
        bm25s.tokenize(list(t.queries), stopwords="en", show_progress=False), k=10, show_progress=False
    )
    for i, qid in enumerate(t.query_ids):
        theirs = [(str(t.doc_ids[j]), float(s)) for j, s in zip(docs[i], scores[i], strict=True) if s > 0]
        ours = list(zip(ranking.doc_ids[qid], ranking.scores[qid], strict=True))
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], rtol=1e-6)
        assert {d for d, s in ours if s > theirs[-1][1]} == {d for d, s in theirs if s > theirs[-1][1]}


def test_ties_go_by_document_id_descending_and_no_shared_term_is_not_retrieved() -> None:
    t = Texts(
        ["q1", "q2"],
        ["yeast bread", "quantum entanglement"],
        ["d1", "d10", "d2", "x"],
        ["yeast bread rises", "yeast bread rises", "yeast bread rises", "a basketball court"],
        "ties",
    )
    ranking, entry = bm25_ranking(BM25Settings(), t, 10)
    assert ranking.doc_ids["q1"] == ("d2", "d10", "d1")  # equal scores: id descending, "x" shares no term
    assert len(set(ranking.scores["q1"])) == 1
    assert ranking.doc_ids["q2"] == ()  # no document shares a term: an empty run, not the first k by id
    assert entry["queries_short"] == 2


def test_stop_words_and_k_are_honoured() -> None:
    t = Texts(["q"], ["the bread"], ["a", "b", "c"], ["the the the cat", "bread", "the bread"], "stop")
    kept, _ = bm25_ranking(BM25Settings(stopwords="none"), t, 10)
    dropped, _ = bm25_ranking(BM25Settings(stopwords="en"), t, 10)
    assert set(kept.doc_ids["q"]) == {"a", "b", "c"}
    assert set(dropped.doc_ids["q"]) == {"b", "c"}
    top1, _ = bm25_ranking(BM25Settings(stopwords="none"), t, 1)
    assert top1.doc_ids["q"] == kept.doc_ids["q"][:1]


def test_a_stemmer_that_is_not_installed_or_known_is_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    t = Texts(["q"], ["running"], ["a"], ["runs"], "stem")
    try:
        import Stemmer  # noqa: F401
    except ImportError:
        with pytest.raises(MissingExtra, match="pip install PyStemmer"):
            bm25_ranking(BM25Settings(stemmer="english"), t, 5)
    else:
        with pytest.raises(SpecError, match="not a PyStemmer algorithm"):
            bm25_ranking(BM25Settings(stemmer="klingon"), t, 5)
    monkeypatch.setitem(sys.modules, "Stemmer", None)  # as if PyStemmer were not installed
    with pytest.raises(MissingExtra, match="bm25_stemmer 'english' needs PyStemmer"):
        bm25_ranking(BM25Settings(stemmer="english", k1=1.1), t, 5)
