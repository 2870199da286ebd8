"""Metric by metric: the whole dataset through the endpoint, searched and scored like the reference.

A parity check (the same model under another engine), not a sampling question: the endpoint passes
when ``|delta ndcg@10|`` is within ``max_ndcg_delta`` AND the mean per-query top-10 overlap with the
reference's ranking is at least ``min_overlap`` (an average delta can hide rankings that differ for a
quarter of the top results). Each delta is reported with its paired bootstrap CI for context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....base.errors import ContractError
from ....checks import Check, CheckOutcome
from ....checks.measure import TOP_K_OVERLAP

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..context import CanaryContext


def _top(ranking: Mapping[str, Mapping[str, float]], qid: str, k: int) -> tuple[str, ...]:
    """The first ``k`` documents of ``qid`` in the documented tie order (a :class:`~evalsuite.retrieval.search.Ranking`)."""
    from ....retrieval.search import Ranking

    if isinstance(ranking, Ranking):
        return ranking.top(qid, k)
    return Ranking.from_scores({qid: ranking.get(qid, {})}).top(qid, k)


def rank_overlap(
    reference: Mapping[str, Mapping[str, float]], endpoint: Mapping[str, Mapping[str, float]], k: int = TOP_K_OVERLAP
) -> dict[str, float]:
    """Per reference query: the share of its top-k documents that the endpoint's top-k also holds."""
    out = {}
    for qid in reference:
        ref_top = _top(reference, qid, k)
        out[qid] = len(set(ref_top) & set(_top(endpoint, qid, k))) / max(1, len(ref_top))
    return out


def check_retrieval_agreement(ctx: CanaryContext) -> CheckOutcome:
    s, c = ctx.settings, ctx.contract
    ref = ctx.reference_result()
    if ref.contract.diff(c):
        raise ContractError(
            "the reference result was computed under another contract than the canary's: "
            + ref.contract.describe_diff(c, labels=("reference", "canary"))
        )
    if ref.dataset.identity.sha256 != ctx.prepared.dataset.identity.sha256:
        raise ContractError(
            "the reference result was computed on another dataset (sha256 "
            f"{ref.dataset.identity.sha256[:12]} vs {ctx.prepared.dataset.identity.sha256[:12]})"
        )
    ep = ctx.endpoint_result()
    metrics = [m for m in ref.metrics if m in ep.metrics]
    primary = "ndcg@10" if "ndcg@10" in metrics else metrics[0]
    deltas = {m: ep.metrics[m] - ref.metrics[m] for m in metrics}
    shared = rank_overlap(ref.ranking, ep.ranking)
    mean_overlap = sum(shared.values()) / max(1, len(shared))
    lowest = sorted(shared, key=lambda q: (shared[q], q))[:5]
    cis = paired_intervals(ep.per_query, ref.per_query, metrics)
    details = {
        "primary": primary,
        "tolerance": s.max_ndcg_delta,
        "min_overlap": s.min_overlap,
        "metrics": {
            m: {
                "reference": round(ref.metrics[m], 6),
                "endpoint": round(ep.metrics[m], 6),
                "delta": round(deltas[m], 6),
                **cis.get(m, {}),
            }
            for m in metrics
        },
        "top10_overlap": {
            "mean": round(mean_overlap, 4),
            "lowest": {q: shared[q] for q in lowest},
            "threshold": s.min_overlap,
        },
        "slices": _slice_moves(ctx, ep.per_query, ref.per_query, primary),
        "queries": len(shared),
        "documents": ctx.prepared.dataset.identity.n_documents,
        "endpoint_timing": ep.timing,
    }
    others = ", ".join(f"{m} {deltas[m]:+.4f}" for m in metrics if m != primary)
    ci = cis.get(primary)
    ci_text = f" (95% CI {ci['ci_low']:+.4f} .. {ci['ci_high']:+.4f})" if ci else ""
    tail = f"; others: {others}; mean top-{TOP_K_OVERLAP} overlap {mean_overlap:.3f}"
    head = f"{primary} endpoint {ep.metrics[primary]:.4f} vs reference {ref.metrics[primary]:.4f}"
    worst = ", ".join(f"{q} ({shared[q]:.1f})" for q in lowest[:3])
    if abs(deltas[primary]) > s.max_ndcg_delta:
        return CheckOutcome(
            "retrieval_agreement",
            False,
            f"retrieval agreement: |delta {primary}| {abs(deltas[primary]):.4f} > {s.max_ndcg_delta} "
            f"({head}{ci_text}){tail}; lowest overlap: {worst}",
            details,
        )
    if mean_overlap < s.min_overlap:
        return CheckOutcome(
            "retrieval_agreement",
            False,
            f"retrieval agreement: mean top-{TOP_K_OVERLAP} overlap {mean_overlap:.3f} < {s.min_overlap} "
            f"although |delta {primary}| {abs(deltas[primary]):.4f} is within {s.max_ndcg_delta} ({head}"
            f"{ci_text}); the rankings differ; lowest overlap: {worst}",
            details,
        )
    return CheckOutcome(
        "retrieval_agreement",
        True,
        f"retrieval agreement: {head}, delta {deltas[primary]:+.4f}{ci_text} within {s.max_ndcg_delta}"
        f"{tail} >= {s.min_overlap}",
        details,
    )


def _slice_moves(
    ctx: CanaryContext,
    endpoint: Mapping[str, Mapping[str, float]],
    reference: Mapping[str, Mapping[str, float]],
    metric: str,
) -> list[dict[str, object]]:
    """The slices (lengths, metadata fields) where the endpoint moved most against the reference, with CIs."""
    from ....base.errors import EvalsuiteError
    from ....run.slices import slice_index
    from ....slicing.compare import slice_moves

    try:
        moves = slice_moves(slice_index(ctx.prepared, ctx.contract), endpoint, reference, [metric])
    except EvalsuiteError as exc:  # e.g. no tokenizer.json to count tokens with: the check stands without slices
        return [{"error": str(exc)}]
    return [m.to_dict() for m in moves[:10]]


def paired_intervals(
    endpoint: Mapping[str, Mapping[str, float]], reference: Mapping[str, Mapping[str, float]], metrics: list[str]
) -> dict[str, dict[str, float]]:
    """Per metric, the paired bootstrap CI of endpoint - reference over queries (context, not the verdict)."""
    from ....scoring.stats import compare, paired_scores

    if not metrics:
        return {}
    _, a, b = paired_scores(endpoint, reference, metrics)
    return {
        m: {"ci_low": round(c.ci.low, 6), "ci_high": round(c.ci.high, 6), "sign_flip_p": round(c.p_value, 6)}
        for m, c in zip(metrics, compare(a, b), strict=True)
    }


def retrieval_section(verdict: CheckOutcome) -> list[str]:
    """report.md: the metric table of one retrieval agreement verdict (nothing when the check errored)."""
    from ....reports.markdown import table

    if "metrics" not in verdict.details:
        return []
    rows = [
        (
            m,
            d["reference"],
            d["endpoint"],
            f"{d['delta']:+.4f}",
            f"{d['ci_low']:+.4f} .. {d['ci_high']:+.4f}" if "ci_low" in d else "-",
        )
        for m, d in verdict.details["metrics"].items()
    ]
    ov = verdict.details["top10_overlap"]
    return [
        "## Retrieval agreement",
        "",
        table(["metric", "reference", "endpoint", "delta", "95% CI"], rows),
        f"Mean top-{TOP_K_OVERLAP} overlap: {ov['mean']:.3f} (threshold {ov.get('threshold', '-')}); a parity "
        "check: |delta| within the tolerance and the rankings' overlap above the threshold",
        "",
        *_slice_lines(verdict.details.get("slices", [])),
    ]


def _slice_lines(moves: list[dict[str, object]]) -> list[str]:
    """report.md: the slices where the endpoint moved most (lengths, metadata fields)."""
    from ....reports.markdown import table

    rows = []
    for m in moves:
        ci = m.get("ci")
        if not isinstance(ci, dict):
            continue
        rows.append(
            (m["slice"], m["metric"], m["n_queries"], f"{ci['delta']:+.4f}", f"{ci['low']:+.4f} .. {ci['high']:+.4f}")
        )
    if not rows:
        return []
    return ["### Slices that moved most", "", table(["slice", "metric", "queries", "delta", "95% CI"], rows), ""]


RETRIEVAL_AGREEMENT = Check(
    name="retrieval_agreement",
    label="retrieval agreement",
    run=check_retrieval_agreement,
    thresholds=("max_ndcg_delta", "min_overlap"),
    per_dataset=True,
    report=retrieval_section,
    explanation="the whole dataset encoded by the endpoint, searched and scored like the local reference: "
    "|delta ndcg@10| at most the threshold and a mean per-query top-10 overlap of at least "
    "min_overlap; reports every metric's delta with its 95% CI",
    example="retrieval agreement: |delta ndcg@10| 0.0312 > 0.005 (ndcg@10 endpoint 0.6120 vs reference 0.6432); "
    "others: recall@10 -0.0250; mean top-10 overlap 0.871; lowest overlap: q17 (0.3), q4 (0.5), q9 (0.6)",
    stage="search",
    diagnosed=True,
)
