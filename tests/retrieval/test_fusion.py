"""Hybrid fusion through ranx's fuse, against a brute-force computation of each fusion: RRF over the written ranks
(ties included), the weighted sum, CombSUM, CombMNZ and CombMAX of min-max, max or z-score normalised scores; the
fused run in the documented tie order, cut at k; a query one component left empty."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from evalsuite.retrieval.retrievers import parse_retrieval
from evalsuite.retrieval.retrievers.fusion import fuse_rankings
from evalsuite.retrieval.search import Ranking, tie_order_key

DENSE = Ranking.from_scores(
    {
        "q1": {"a": 0.9, "b": 0.8, "c": 0.8, "d": 0.1},  # b and c tie: written c, b (id descending)
        "q2": {"x": 0.5, "y": 0.4},
        "q3": {"a": 0.3},
    }
)
BM25 = Ranking.from_scores(
    {
        "q1": {"c": 12.0, "e": 7.0, "a": 3.0},
        "q2": {},  # no document shared a term
        "q3": {"b": 2.0, "a": 2.0},
    }
)


def _rrf(runs: list[Ranking], k: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q in runs[0]:
        scores: dict[str, float] = {}
        for r in runs:
            for rank, d in enumerate(r.doc_ids[q], start=1):
                scores[d] = scores.get(d, 0.0) + 1 / (k + rank)
        out[q] = scores
    return out


def _norm(scores: dict[str, float], norm: str) -> dict[str, float]:
    if not scores:
        return {}
    v = list(scores.values())
    if norm == "min-max":
        lo, span = min(v), max(max(v) - min(v), 1e-9)
        return {d: (s - lo) / span for d, s in scores.items()}
    if norm == "max":
        return {d: s / max(v) for d, s in scores.items()}
    mean, std = statistics.fmean(v), max(float(np.std(v)), 1e-9)  # zmuv: the population deviation
    return {d: (s - mean) / std for d, s in scores.items()}


def _combine(runs: list[Ranking], fusion: str, norm: str, weights: list[float]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q in runs[0]:
        normed = [_norm(dict(r[q]), norm) for r in runs]
        docs = {d for n in normed for d in n}
        scores = {}
        for d in docs:
            present = [n[d] for n in normed if d in n]
            if fusion == "wsum":
                scores[d] = sum(w * n.get(d, 0.0) for w, n in zip(weights, normed, strict=True))
            elif fusion == "sum":
                scores[d] = sum(present)
            elif fusion == "mnz":
                scores[d] = sum(present) * len(present)
            else:
                scores[d] = max(present)
        out[q] = scores
    return out


def _ordered(scores: dict[str, dict[str, float]], k: int) -> dict[str, list[tuple[str, float]]]:
    return {q: sorted(s.items(), key=lambda h: tie_order_key(*h))[:k] for q, s in scores.items()}


def _check(fused: Ranking, expected: dict[str, list[tuple[str, float]]]) -> None:
    for q, hits in expected.items():
        assert fused.doc_ids[q] == tuple(d for d, _ in hits), q
        np.testing.assert_allclose(fused.scores[q], [s for _, s in hits], rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("k", [1, 60])
def test_rrf_equals_brute_force_over_the_written_ranks(k: int) -> None:
    fused = fuse_rankings(parse_retrieval(f"hybrid:k={k}"), {"dense": DENSE, "bm25": BM25}, 10)
    _check(fused, _ordered(_rrf([DENSE, BM25], k), 10))
    # c is written before b in dense (a tie): RRF gives c the better rank, as the ranking says
    assert fused.doc_ids["q1"].index("c") < fused.doc_ids["q1"].index("b")
    assert fused.doc_ids["q2"] == ("x", "y")  # bm25 left q2 empty: dense alone decides


def test_the_fused_run_is_cut_at_k_and_components_order_their_weights() -> None:
    fused = fuse_rankings(parse_retrieval("hybrid"), {"dense": DENSE, "bm25": BM25}, 2)
    assert all(len(d) <= 2 for d in fused.doc_ids.values())
    _check(fused, _ordered(_rrf([DENSE, BM25], 60), 2))


@pytest.mark.parametrize(
    "fusion, norm", [("wsum", "min-max"), ("wsum", "zmuv"), ("sum", "max"), ("mnz", "min-max"), ("max", "zmuv")]
)
def test_score_fusions_equal_brute_force(fusion: str, norm: str) -> None:
    weights = [0.7, 0.3]
    extra = ",weights=0.7+0.3" if fusion == "wsum" else ""
    spec = parse_retrieval(f"hybrid:fusion={fusion},norm={norm}{extra}")
    fused = fuse_rankings(spec, {"dense": DENSE, "bm25": BM25}, 10)
    _check(fused, _ordered(_combine([DENSE, BM25], fusion, norm, weights), 10))


def test_weights_follow_the_fuse_order() -> None:
    spec = parse_retrieval("hybrid:fuse=bm25+dense,fusion=wsum,weights=1+0")
    fused = fuse_rankings(spec, {"bm25": BM25, "dense": DENSE}, 10)
    assert fused.doc_ids["q1"][:2] == ("c", "e")  # bm25 alone (weight 1) decides the order of what it retrieved
