"""The reranker canary's checks, one declaration each, in run order (:data:`CHECKS`).

Each takes the shared :class:`~.context.RerankCanaryContext` and returns a :class:`RerankVerdict` whose
message starts with the check's label; a check never raises for what the server does (a typed
endpoint error becomes a failed verdict naming it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import EvalsuiteError
from .context import RerankCanaryContext


@dataclass(frozen=True)
class RerankVerdict:
    check: str
    passed: bool | None  # None: did not apply
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return {True: "PASS", False: "FAIL", None: "SKIP"}[self.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "passed": self.passed,
            "message": self.message,
            "details": self.details,
        }


@dataclass(frozen=True)
class RerankCheck:
    name: str
    label: str
    explanation: str
    run: Callable[[RerankCanaryContext], RerankVerdict]


def _served_or_fail(ctx: RerankCanaryContext, name: str, label: str) -> dict[str, np.ndarray] | RerankVerdict:
    served = ctx.served_scores()
    if ctx.served_errors:
        q, err = next(iter(ctx.served_errors.items()))
        return RerankVerdict(
            name,
            False,
            f"{label}: no sound answer for {len(ctx.served_errors)} query(ies); query {q}: {err}",
            {"errors": dict(ctx.served_errors)},
        )
    if not served:
        return RerankVerdict(name, None, f"{label}: no query has candidates to score")
    return served


def index_mapping(ctx: RerankCanaryContext) -> RerankVerdict:
    """Every answer maps back to the request: each index once, in range, the count, the promised order; and
    a ``top_n`` answer returns exactly the best ``top_n`` of the full answer, in that order."""
    label = "index mapping"
    served = _served_or_fail(ctx, "index_mapping", label)
    if isinstance(served, RerankVerdict):
        return served
    details: dict[str, Any] = {"queries": len(served), "pairs": int(sum(len(v) for v in served.values()))}
    if ctx.client.api.name != "rerank":
        return RerankVerdict(
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
        return RerankVerdict("index_mapping", False, f"{label}: top_n={k} for query {q}: {exc}", details)
    expected = [int(i) for i in sorted(range(len(full)), key=lambda i: (-full[i], i))[:k]]
    details["top_n"] = {"query": q, "k": k, "returned": order, "expected": expected}
    if set(order) != set(expected) and not np.allclose(sorted(full[order]), sorted(full[expected]), atol=1e-6):
        return RerankVerdict(
            "index_mapping",
            False,
            f"{label}: top_n={k} for query {q} returned indices {order}, but the full answer's best {k} are {expected}",
            details,
        )
    return RerankVerdict(
        "index_mapping",
        True,
        f"{label}: {details['pairs']} pairs over {len(served)} queries, every "
        f"index once, sorted by score; top_n={k} returns the best {k}",
        details,
    )


def score_agreement(ctx: RerankCanaryContext) -> RerankVerdict:
    label = "score agreement"
    served = _served_or_fail(ctx, "score_agreement", label)
    if isinstance(served, RerankVerdict):
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
        return RerankVerdict(
            "score_agreement",
            False,
            f"{label}: max |served - reference| {worst:.4g} > {tol:g} after "
            f"activation {ctx.compare_activation!r} ({where}); check the served activation, pair "
            "template, max length and revision",
            details,
        )
    return RerankVerdict(
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


def ranking_agreement(ctx: RerankCanaryContext) -> RerankVerdict:
    label = "ranking agreement"
    served = _served_or_fail(ctx, "ranking_agreement", label)
    if isinstance(served, RerankVerdict):
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
    return RerankVerdict("ranking_agreement", ok, msg, details)


def reranked_metrics(ctx: RerankCanaryContext) -> RerankVerdict:
    """The first stage reranked by the served scores vs by the reference scores, metric by metric."""
    from ...metrics import evaluate
    from ..twostage import rerank

    label = "reranked metrics"
    served = _served_or_fail(ctx, "reranked_metrics", label)
    if isinstance(served, RerankVerdict):
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
    return RerankVerdict(
        "reranked_metrics",
        ok,
        f"{label}: largest |served - reference| is {worst} "
        f"{deltas[worst]:+.4f} ({'<=' if ok else '>'} {ctx.settings.metric_tol:g}) over "
        f"{len(qids)} queries",
        details,
    )


def bad_input(ctx: RerankCanaryContext) -> RerankVerdict:
    """An empty documents list must be refused (4xx) or answered with no results; an over-long pair must be
    refused (4xx) or scored like the reference truncates it. A 5xx, a dropped connection or a broken answer fails."""
    from ..twostage import top_ids

    label = "bad input"
    notes: list[str] = []
    failures: list[str] = []
    q = next(iter(ctx.candidates))
    query = ctx.first.dataset.queries[q]
    try:
        resp = ctx.client.post(query, [], what="empty documents list")
        if 400 <= resp.status_code < 500:
            notes.append(f"empty documents list -> HTTP {resp.status_code}")
        elif resp.status_code == 200:
            from .shapes import parse_scores

            parse_scores(resp.json(), 0, ctx.client.api, where=resp.what)
            notes.append("empty documents list -> HTTP 200 with no results")
        else:
            failures.append(f"empty documents list -> HTTP {resp.status_code} (a server error; expected a 4xx)")
    except EvalsuiteError as exc:
        failures.append(f"empty documents list -> {exc}")
    doc_id = top_ids(ctx.first.ranking, q, 1)[0]
    long_doc = (ctx.first.dataset.corpus[doc_id] + " ") * (ctx.contract.max_length // 2 + 8)
    try:
        resp = ctx.client.post(query, [long_doc], what="over-long pair")
        if 400 <= resp.status_code < 500:
            notes.append(f"over-long pair -> HTTP {resp.status_code} (refused)")
        elif resp.status_code == 200:
            from ..contract import activate
            from .shapes import parse_scores

            got, _ = parse_scores(resp.json(), 1, ctx.client.api, where=resp.what)
            ref = float(activate(ctx.reference.logits([(query, long_doc)]), ctx.compare_activation)[0])
            if abs(float(got[0]) - ref) <= ctx.settings.score_tol:
                notes.append(f"over-long pair -> truncated like the reference ({ctx.contract.max_length} tokens)")
            else:
                failures.append(
                    f"over-long pair -> score {got[0]:.6g}, the reference truncated to "
                    f"{ctx.contract.max_length} tokens gives {ref:.6g}"
                )
        else:
            failures.append(f"over-long pair -> HTTP {resp.status_code} (a server error; expected truncation or a 4xx)")
    except EvalsuiteError as exc:
        failures.append(f"over-long pair -> {exc}")
    details = {"accepted": notes, "failures": failures}
    if failures:
        return RerankVerdict("bad_input", False, f"{label}: " + "; ".join(failures), details)
    return RerankVerdict("bad_input", True, f"{label}: " + "; ".join(notes), details)


CHECKS: tuple[RerankCheck, ...] = (
    RerankCheck(
        "index_mapping",
        "index mapping",
        "every result's index once, in range; the count; the order the API promises; top_n returns the best top_n",
        index_mapping,
    ),
    RerankCheck(
        "score_agreement",
        "score agreement",
        "per-pair |served - reference| after the declared activation",
        score_agreement,
    ),
    RerankCheck("ranking_agreement", "ranking agreement", "per-query Kendall tau and top-k overlap", ranking_agreement),
    RerankCheck("bad_input", "bad input", "empty documents list, over-long pair", bad_input),
    RerankCheck(
        "reranked_metrics", "reranked metrics", "first stage reranked by served vs reference scores", reranked_metrics
    ),
)
