"""The reranker canary's agreement checks: a served reranker's answers against the local reference.

Each is one :class:`Check` on the shared :class:`~evalsuite.canary.reranker.context.RerankCanaryContext`, listed in
run order in :data:`evalsuite.canary.reranker.registry.RERANK_CHECKS`; a check never raises for what the server does (a typed
endpoint error becomes a failed verdict naming it). Every agreement is judged on the worst pair or query.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ....base.errors import EvalsuiteError
from ....checks import Check, CheckOutcome

if TYPE_CHECKING:
    from ..context import RerankCanaryContext


def served_or_fail(ctx: RerankCanaryContext, name: str, label: str) -> dict[str, np.ndarray] | CheckOutcome:
    served = ctx.served_scores()
    if ctx.served_errors:
        q, err = next(iter(ctx.served_errors.items()))
        return CheckOutcome(
            name,
            False,
            f"{label}: no sound answer for {len(ctx.served_errors)} query(ies); query {q}: {err}",
            {"errors": dict(ctx.served_errors)},
        )
    if not served:
        return CheckOutcome(name, None, f"{label}: no query has candidates to score")
    return served


def index_mapping(ctx: RerankCanaryContext) -> CheckOutcome:
    """Every answer maps back to the request: each index once, in range, the count, the promised order; and
    a ``top_n`` answer returns exactly the best ``top_n`` of the full answer, in that order."""
    label = "index mapping"
    served = served_or_fail(ctx, "index_mapping", label)
    if isinstance(served, CheckOutcome):
        return served
    details: dict[str, Any] = {"queries": len(served), "pairs": int(sum(len(v) for v in served.values()))}
    if ctx.client.api.name != "rerank":
        return CheckOutcome(
            "index_mapping",
            True,
            f"{label}: {details['pairs']} pairs over {len(served)} queries, every index once, in the promised order",
            details,
        )
    q = max(served, key=lambda k: len(served[k]))
    full = served[q]
    k = min(ctx.settings.top_n, len(full))
    query, docs = ctx.texts(q)
    try:
        _, order = ctx.client.score(query, docs, top_n=k, what=f"query {q}, top_n={k}")
    except EvalsuiteError as exc:
        return CheckOutcome("index_mapping", False, f"{label}: top_n={k} for query {q}: {exc}", details)
    expected = [int(i) for i in sorted(range(len(full)), key=lambda i: (-full[i], i))[:k]]
    details["top_n"] = {"query": q, "k": k, "returned": order, "expected": expected}
    if set(order) != set(expected) and not np.allclose(sorted(full[order]), sorted(full[expected]), atol=1e-6):
        return CheckOutcome(
            "index_mapping",
            False,
            f"{label}: top_n={k} for query {q} returned indices {order}, but the full answer's best {k} are {expected}",
            details,
        )
    return CheckOutcome(
        "index_mapping",
        True,
        f"{label}: {details['pairs']} pairs over {len(served)} queries, every "
        f"index once, sorted by score; top_n={k} returns the best {k}",
        details,
    )


def score_agreement(ctx: RerankCanaryContext) -> CheckOutcome:
    label = "score agreement"
    served = served_or_fail(ctx, "score_agreement", label)
    if isinstance(served, CheckOutcome):
        return served
    ref = ctx.reference_scores()
    worst, where = 0.0, ""
    for q, s in served.items():
        diff = np.abs(s - ref[q])
        if diff.size and float(diff.max()) > worst:
            i = int(diff.argmax())
            worst, where = (
                float(diff.max()),
                f"query {q} document {ctx.candidates[q][i]}: served {s[i]:.6g}, reference {ref[q][i]:.6g}",
            )
    tol = ctx.settings.score_tol
    details = {"max_abs_diff": worst, "tolerance": tol, "activation": ctx.compare_activation, "worst": where}
    if worst > tol:
        return CheckOutcome(
            "score_agreement",
            False,
            f"{label}: max |served - reference| {worst:.4g} > {tol:g} after "
            f"activation {ctx.compare_activation!r} ({where}); check the served activation, pair "
            "template, max length and revision",
            details,
        )
    return CheckOutcome(
        "score_agreement",
        True,
        f"{label}: max |served - reference| {worst:.3g} <= {tol:g} (activation {ctx.compare_activation!r})",
        details,
    )


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two score vectors over the same documents (ties counted as scipy's ``kendalltau`` does).

    Per query the depth is small (tens to hundreds), so the O(n^2) pair count is cheap and needs no scipy.
    """
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(x) < 2:
        return 1.0
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(len(x), k=1)
    sx, sy = dx[upper], dy[upper]
    n_x, n_y = float(np.count_nonzero(sx)), float(np.count_nonzero(sy))
    if n_x == 0 or n_y == 0:
        return 1.0 if n_x == n_y else 0.0
    return float((sx * sy).sum() / math.sqrt(n_x * n_y))


def ranking_agreement(ctx: RerankCanaryContext) -> CheckOutcome:
    label = "ranking agreement"
    served = served_or_fail(ctx, "ranking_agreement", label)
    if isinstance(served, CheckOutcome):
        return served
    ref = ctx.reference_scores()
    k = ctx.settings.overlap_k
    taus, overlaps = {}, {}
    for q, s in served.items():
        taus[q] = kendall_tau(s, ref[q])
        kk = min(k, len(s))
        top_s = set(sorted(range(len(s)), key=lambda i: (-s[i], i))[:kk])
        top_r = set(sorted(range(len(s)), key=lambda i: (-ref[q][i], i))[:kk])
        overlaps[q] = len(top_s & top_r) / kk if kk else 1.0
    wq = min(taus, key=lambda q: taus[q])
    oq = min(overlaps, key=lambda q: overlaps[q])
    details = {
        "tau_min": taus[wq],
        "tau_mean": float(np.mean(list(taus.values()))),
        "overlap_min": overlaps[oq],
        "worst_tau_query": wq,
        "worst_overlap_query": oq,
        "k": k,
    }
    ok = taus[wq] >= ctx.settings.tau_min and overlaps[oq] >= ctx.settings.overlap_min
    msg = (
        f"{label}: worst Kendall tau {taus[wq]:.3f} (query {wq}, need >= {ctx.settings.tau_min:g}), worst top-{k} "
        f"overlap {overlaps[oq]:.2f} (query {oq}, need >= {ctx.settings.overlap_min:g})"
    )
    return CheckOutcome("ranking_agreement", ok, msg, details)


def reranked_metrics(ctx: RerankCanaryContext) -> CheckOutcome:
    """The first stage reranked by the served scores vs by the reference scores, metric by metric."""
    from ....rerank.twostage import rerank
    from ....scoring.metrics import evaluate

    label = "reranked metrics"
    served = served_or_fail(ctx, "reranked_metrics", label)
    if isinstance(served, CheckOutcome):
        return served
    ref = ctx.reference_scores()
    qids = list(served)
    first = {q: ctx.first.ranking[q] for q in qids}
    by = {
        side: {q: dict(zip(ctx.candidates[q], scores[q].tolist(), strict=True)) for q in qids}
        for side, scores in (("served", served), ("reference", ref))
    }
    qrels = {q: ctx.first.dataset.qrels[q] for q in qids}
    metrics = list(ctx.first.metrics)
    agg = {side: evaluate(qrels, rerank(first, by[side], ctx.settings.depth, qids), metrics)[0] for side in by}
    deltas = {m: agg["served"][m] - agg["reference"][m] for m in metrics}
    worst = max(metrics, key=lambda m: abs(deltas[m]))
    details = {
        "metrics": {
            m: {"served": agg["served"][m], "reference": agg["reference"][m], "delta": deltas[m]} for m in metrics
        },
        "queries": len(qids),
        "tolerance": ctx.settings.metric_tol,
    }
    ok = abs(deltas[worst]) <= ctx.settings.metric_tol
    return CheckOutcome(
        "reranked_metrics",
        ok,
        f"{label}: largest |served - reference| is {worst} "
        f"{deltas[worst]:+.4f} ({'<=' if ok else '>'} {ctx.settings.metric_tol:g}) over "
        f"{len(qids)} queries",
        details,
    )


RERANK_INDEX_MAPPING: Check[RerankCanaryContext] = Check(
    name="index_mapping",
    label="index mapping",
    explanation="every result's index once, in range; the count; the order the API promises; top_n returns the best "
    "top_n",
    example="index mapping: ... results[3] has index 6, out of range for 6 document(s)",
    run=index_mapping,
    thresholds=("top_n",),
)
RERANK_SCORE_AGREEMENT: Check[RerankCanaryContext] = Check(
    name="score_agreement",
    label="score agreement",
    explanation="per-pair |served - reference| after the declared activation, the worst pair of all queries",
    example="score agreement: max |served - reference| 0.2 > 0.01 after activation 'sigmoid' (query q1 document d3 ...)",
    run=score_agreement,
    thresholds=("score_tol",),
)
RERANK_RANKING_AGREEMENT: Check[RerankCanaryContext] = Check(
    name="ranking_agreement",
    label="ranking agreement",
    explanation="per-query Kendall tau and top-k overlap, both on the worst query",
    example="ranking agreement: worst Kendall tau 0.867 (query q2, need >= 0.9), worst top-5 overlap 0.80 ...",
    run=ranking_agreement,
    thresholds=("tau_min", "overlap_k", "overlap_min"),
)
RERANK_RERANKED_METRICS: Check[RerankCanaryContext] = Check(
    name="reranked_metrics",
    label="reranked metrics",
    explanation="first stage reranked by served vs reference scores, the metric that moves most",
    example="reranked metrics: largest |served - reference| is ndcg@10 -0.0420 (> 0.01) over 50 queries",
    run=reranked_metrics,
    thresholds=("metric_tol",),
)
