"""The one metric engine: ranx. Metric names are validated here without importing ranx."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..base.errors import ContractError, SpecError
from ..retrieval.search import Ranking

DEFAULT_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
RANX_METRICS = (
    "hits",
    "hit_rate",
    "precision",
    "recall",
    "r-precision",
    "mrr",
    "map",
    "dcg",
    "dcg_burges",
    "ndcg",
    "ndcg_burges",
    "bpref",
)
_METRIC_RE = re.compile(r"^(?P<name>[a-z_-]+?)(?:@(?P<k>\d+))?(?:-l(?P<lvl>\d+))?$")
_RBP_RE = re.compile(r"^rbp[.@]\d+$")
_NO_RESULT = "__evalsuite_no_result__"


def parse_metric(text: str) -> str:
    """Normalise and validate a ranx metric string (``ndcg@10``, ``recall@100``, ``map``, ``rbp.95``)."""
    m = text.strip().lower()
    if _RBP_RE.match(m):
        return m
    match = _METRIC_RE.match(m)
    if not match or match.group("name") not in RANX_METRICS:
        raise SpecError(
            f"metric {text!r} is not a ranx metric; use NAME or NAME@K with NAME one of "
            f"{', '.join(RANX_METRICS)} (e.g. ndcg@10, recall@100, mrr@10)"
        )
    if match.group("k") is not None and int(match.group("k")) < 1:
        raise SpecError(f"metric {text!r}: the cutoff must be >= 1")
    return m


def parse_metrics(items: Sequence[str] | str) -> tuple[str, ...]:
    if isinstance(items, str):
        items = [s for s in items.split(",") if s.strip()]
    out = tuple(dict.fromkeys(parse_metric(s) for s in items))
    if not out:
        raise SpecError("no metrics given; e.g. --metrics ndcg@10,recall@100")
    return out


def cutoff(metric: str) -> int:
    match = _METRIC_RE.match(metric)
    return int(match.group("k")) if match and match.group("k") else 0


def search_depth(metrics: Sequence[str], floor: int = 100) -> int:
    """How many documents to retrieve per query: at least the largest cutoff, and ``floor``."""
    return max([floor] + [cutoff(m) for m in metrics])


def evaluate(
    qrels: Mapping[str, Mapping[str, int]], ranking: Ranking | Mapping[str, Mapping[str, float]], metrics: Sequence[str]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Aggregate and per-query scores, computed by ranx on exactly the order of ``ranking``.

    A plain ``{qid: {docid: score}}`` is first put in the documented tie order
    (:meth:`Ranking.from_scores`). ranx is given rank-derived scores (``n - rank``), never the raw
    similarities, so its own (unstable) sort cannot reorder tied documents. Judgements below 1
    (0 or negative) are non-relevant: they count for neither recall nor gain. Plain dicts go to
    ranx in one query order for both sides, so per-query scores come back in that order.
    """
    from ranx import evaluate as ranx_evaluate

    ranked = ranking if isinstance(ranking, Ranking) else Ranking.from_scores(ranking)
    _check_depth(ranked, metrics)
    qids = list(qrels)
    q = {qid: dict(qrels[qid]) for qid in qids}
    # ranx needs a ranking for every query; an empty one scores 0 through a placeholder document
    run = {qid: (ranked.rank_scores(qid) if ranked.top(qid, 1) else {_NO_RESULT: 0.0}) for qid in qids}
    with warnings.catch_warnings():  # numba's uint64->int64 cast notice inside ranx kernels
        warnings.simplefilter("ignore")
        # with one metric and no Run object ranx 0.3 looks up a wrong key: always ask for two or more
        asked = list(metrics) if len(metrics) > 1 else [metrics[0], metrics[0]]
        scores = ranx_evaluate(q, run, asked, return_mean=False, save_results_in_run=False)
    per_query = {m: dict(zip(qids, (float(x) for x in scores[m]), strict=False)) for m in metrics}
    aggregate = {m: float(np.mean(scores[m])) for m in metrics}
    return aggregate, per_query


def warm(metrics: Sequence[str]) -> None:
    """Import ranx and load the numba kernels :func:`evaluate` takes for ``metrics`` (a small input and a larger
    one, 10+ queries ranked past the cut-offs, take different kernels, each loaded on first use), so a caller can
    have it done in a background thread while something else runs. Nothing is kept but the loaded kernels."""
    depth = search_depth(metrics) + 20
    evaluate({"q": {"d": 1}}, {"q": {"d": 1.0, "e": 0.5}}, metrics)
    evaluate(
        {f"q{i}": {"d1": 1} for i in range(20)},
        {f"q{i}": {f"d{j}": 1.0 / (j + 1) for j in range(depth)} for i in range(20)},
        metrics,
    )


def _check_depth(ranking: Ranking, metrics: Sequence[str]) -> None:
    """A cut-off deeper than the search went would silently score the missing ranks as misses."""
    if ranking.depth is None or ranking.corpus_size is None or ranking.depth >= ranking.corpus_size:
        return
    deep = [m for m in metrics if cutoff(m) > ranking.depth]
    if deep:
        raise ContractError(
            f"metrics {', '.join(deep)} look deeper than the search went ({ranking.depth} of "
            f"{ranking.corpus_size} documents per query); search with k=search_depth(metrics)"
        )


def paired_test(
    control: Mapping[str, float], treatment: Mapping[str, float], *, test: str = "student", alpha: float = 0.05
) -> float:
    """p-value of ranx's paired significance test over the queries both sides scored."""
    from ranx.statistical_tests import fisher_randomization_test, paired_student_t_test

    common = sorted(set(control) & set(treatment))
    if len(common) < 2:
        return 1.0
    a = np.array([control[q] for q in common], dtype=np.float64)
    b = np.array([treatment[q] for q in common], dtype=np.float64)
    if np.allclose(a, b):
        return 1.0
    if test not in ("student", "fisher"):
        raise SpecError(f"significance test {test!r} is not valid; choose student or fisher")
    with warnings.catch_warnings():  # scipy warns when every per-query difference is the same
        warnings.simplefilter("ignore")
        if test == "student":
            p, _ = paired_student_t_test(a, b, alpha)
        else:
            p, _ = fisher_randomization_test(a, b, 1000, alpha, 42)
    if np.isnan(p):  # zero variance of the differences: a constant shift is certain, no shift is not
        return 0.0 if not np.allclose(a - b, 0) else 1.0
    return float(p)
