"""Two-stage evaluation: the first stage's ranking, then a scorer reranks the top N of each query.

One first stage serves every rerank depth: the pairs of the deepest depth are scored once, and a
shallower depth reuses the scores of its pairs (a pair's score does not depend on the depth).

Order of the reranked list: the first N documents of the first stage sorted by score in the documented
tie order of :mod:`evalsuite.retrieval.search` (score descending, equal scores by document id descending); then the
first stage's remaining documents in their first-stage order. The result is a ``search.Ranking`` whose
scores encode that order (``n - rank``), so the metrics and ``run.trec`` see exactly that order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..base.errors import SpecError
from ..datasets import Dataset
from ..retrieval.search import Ranking
from ..run.result import Result
from ..scoring.metrics import evaluate as score_metrics
from .gain import StageDelta, stage_deltas

PairScorer = Callable[[Sequence[tuple[str, str]], Sequence[str]], np.ndarray]  # (pairs, labels) -> scores
PairScores = dict[str, dict[str, float]]  # {qid: {docid: reranker score}}


class ScoringContract(Protocol):
    """What a second stage's contract must tell a report: a reranker's, or a late-interaction one."""

    @property
    def model(self) -> str: ...

    @property
    def model_revision(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...

    def fingerprint(self) -> str: ...


@runtime_checkable
class TopRanked(Protocol):
    """A first-stage ranking that lists a query's best documents, best first (``search.Ranking``: ids;
    others may give ``(id, score)`` pairs)."""

    def top(self, qid: str, k: int) -> Sequence[str | tuple[str, float]]: ...


FirstStage = TopRanked | Mapping[str, Mapping[str, float]]


def top_ids(ranking: FirstStage, qid: str, k: int) -> list[str]:
    """The first ``k`` document ids of ``qid`` in a first-stage ranking, best first.

    Works with a ``search.Ranking`` that has ``.top(qid, k)`` and with the plain ``{qid: {docid: score}}``
    mapping (ordered best first, as ``search.search`` builds it).
    """
    if isinstance(ranking, TopRanked):
        return [d if isinstance(d, str) else d[0] for d in ranking.top(qid, k)]
    return list((ranking.get(qid) or {}).keys())[:k]


def score_pairs(first: FirstStage, dataset: Dataset, depth: int, scorer: PairScorer) -> PairScores:
    """Scores of every (query, document) pair among the top ``depth`` of each query (one scorer call)."""
    keys: list[tuple[str, str]] = []
    for qid in dataset.query_ids:
        keys.extend((qid, did) for did in top_ids(first, qid, depth))
    pairs = [(dataset.queries[q], dataset.corpus[d]) for q, d in keys]
    scores = scorer(pairs, [f"{q}/{d}" for q, d in keys]) if keys else np.zeros(0)
    if len(scores) != len(keys):
        raise SpecError(f"the scorer returned {len(scores)} scores for {len(keys)} pairs")
    out: PairScores = {q: {} for q in dataset.query_ids}
    for (q, d), s in zip(keys, scores.tolist(), strict=True):
        out[q][d] = float(s)
    return out


def rerank(
    first: FirstStage, pair_scores: Mapping[str, Mapping[str, float]], depth: int, query_ids: Sequence[str]
) -> Ranking:
    """The reranked ranking of every query (see the module docstring for the order)."""
    from ..retrieval.search import tie_order_key

    doc_ids: dict[str, tuple[str, ...]] = {}
    values: dict[str, tuple[float, ...]] = {}
    for qid in query_ids:
        ranked = top_ids(first, qid, 1 << 30)
        head, tail = ranked[:depth], ranked[depth:]
        scores = pair_scores.get(qid, {})
        missing = [d for d in head if d not in scores]
        if missing:
            raise SpecError(
                f"query {qid}: no reranker score for document {missing[0]} at depth {depth}; "
                "score the pairs at this depth or deeper first"
            )
        order = sorted(head, key=lambda d: tie_order_key(d, scores[d])) + tail
        doc_ids[qid] = tuple(order)
        values[qid] = tuple(float(len(order) - i) for i in range(len(order)))
    if isinstance(first, Ranking):
        return Ranking(doc_ids, values, depth=first.depth, corpus_size=first.corpus_size)
    return Ranking(doc_ids, values)  # a plain mapping knows neither its depth nor the corpus size


@dataclass
class TwoStageResult:
    """Both stages of one evaluation at one rerank depth, side by side."""

    first: Result
    contract: ScoringContract
    depth: int
    ranking: Ranking
    pair_scores: PairScores = field(repr=False)
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    deltas: list[StageDelta]
    timing: dict[str, Any]

    def gain(self, metric: str) -> StageDelta:
        for d in self.deltas:
            if d.metric == metric:
                return d
        raise SpecError(f"metric {metric!r} was not computed; computed: {', '.join(d.metric for d in self.deltas)}")

    def reranked_dict(self) -> dict[str, object]:
        """This depth's entry under ``reranked`` in results.json (the first stage is the file's top level): the
        fields a gated session writes there too, and the timing."""
        return {
            "depth": self.depth,
            "reranker": self.contract.to_dict(),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "per_query": _rounded(self.per_query),
            "gain": [d.to_dict() for d in self.deltas],
            "timing": self.timing,
        }

    def to_dict(self) -> dict[str, object]:
        return {
            "depth": self.depth,
            "reranker": {"contract": self.contract.to_dict(), "fingerprint": self.contract.fingerprint()},
            "first_stage": {
                "contract": self.first.contract.to_dict(),
                "metrics": {k: round(v, 6) for k, v in self.first.metrics.items()},
            },
            "reranked": {"metrics": {k: round(v, 6) for k, v in self.metrics.items()}},
            "gain": [d.to_dict() for d in self.deltas],
            "per_query": {"first_stage": _rounded(self.first.per_query), "reranked": _rounded(self.per_query)},
            "timing": self.timing,
        }


def _rounded(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    return {m: {q: round(s, 6) for q, s in scores.items()} for m, scores in per_query.items()}


def first_stage_depth(first: FirstStage, query_ids: Sequence[str]) -> int:
    return max((len(top_ids(first, q, 1 << 30)) for q in query_ids), default=0)


def evaluate_depths(
    first: Result,
    contract: ScoringContract,
    scorer: PairScorer,
    depths: Sequence[int],
    metrics: Sequence[str],
    *,
    seed: int = 0,
) -> list[TwoStageResult]:
    """Rerank ``first`` at every depth in ``depths`` (scoring the deepest one's pairs once) and score both stages."""
    if not depths or min(depths) < 1:
        raise SpecError(f"rerank depths must be >= 1, got {list(depths)}")
    ds = first.dataset
    available = first_stage_depth(first.ranking, ds.query_ids)
    deepest = max(depths)
    if deepest > available and available < len(ds.corpus):
        raise SpecError(
            f"rerank depth {deepest} exceeds the first stage's depth ({available} documents per query); "
            f"add a metric with that cutoff (e.g. recall@{deepest}) so the first stage retrieves enough"
        )
    t0 = time.perf_counter()
    scores = score_pairs(first.ranking, ds, deepest, scorer)
    score_seconds = time.perf_counter() - t0
    out = []
    for depth in sorted(dict.fromkeys(depths)):
        t1 = time.perf_counter()
        ranking = rerank(first.ranking, scores, depth, ds.query_ids)
        aggregate, per_query = score_metrics(ds.qrels, ranking, metrics)
        deltas = stage_deltas(first.per_query, per_query, list(metrics), seed=seed)
        timing = {
            "rerank_seconds_all_depths": round(score_seconds, 4),
            "pairs_scored": sum(map(len, scores.values())),
            "metric_seconds": round(time.perf_counter() - t1, 4),
        }
        out.append(TwoStageResult(first, contract, depth, ranking, scores, aggregate, per_query, deltas, timing))
    return out


class MemoScorer:
    """A pair scorer that scores each distinct (query, document) text pair once; counts what it scored."""

    def __init__(self, score: PairScorer) -> None:
        self._score = score
        self.memo: dict[tuple[str, str], float] = {}
        self.scored = 0

    def __call__(self, pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> np.ndarray:
        todo = [i for i, p in enumerate(pairs) if p not in self.memo]
        if todo:
            fresh = self._score([pairs[i] for i in todo], [labels[i] for i in todo])
            self.scored += len(todo)
            for i, s in zip(todo, fresh.tolist(), strict=True):
                self.memo[pairs[i]] = float(s)
        return np.array([self.memo[p] for p in pairs], dtype=np.float64)
