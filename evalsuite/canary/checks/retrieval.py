"""Metric by metric: the whole dataset through the endpoint, searched and scored like the reference."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ContractError
from .base import CanaryCheck, Verdict
from .measure import TOP_K_OVERLAP, overlap

if TYPE_CHECKING:
    from ..context import CanaryContext


def check_retrieval_agreement(ctx: CanaryContext) -> Verdict:
    s, c = ctx.settings, ctx.contract
    ref = ctx.reference_result()
    if ref.contract.diff(c):
        raise ContractError("the reference result was computed under another contract than the canary's: "
                            + ref.contract.describe_diff(c, labels=("reference", "canary")))
    if ref.dataset.identity.sha256 != ctx.prepared.dataset.identity.sha256:
        raise ContractError("the reference result was computed on another dataset (sha256 "
                            f"{ref.dataset.identity.sha256[:12]} vs {ctx.prepared.dataset.identity.sha256[:12]})")
    ep = ctx.endpoint_result()
    metrics = [m for m in ref.metrics if m in ep.metrics]
    primary = "ndcg@10" if "ndcg@10" in metrics else metrics[0]
    deltas = {m: ep.metrics[m] - ref.metrics[m] for m in metrics}
    shared = {qid: overlap(ref.ranking.get(qid, {}), ep.ranking.get(qid, {})) for qid in ref.ranking}
    mean_overlap = sum(shared.values()) / max(1, len(shared))
    lowest = sorted(shared, key=lambda q: (shared[q], q))[:5]
    details = {
        "primary": primary, "tolerance": s.max_ndcg_delta,
        "metrics": {m: {"reference": round(ref.metrics[m], 6), "endpoint": round(ep.metrics[m], 6),
                        "delta": round(deltas[m], 6)} for m in metrics},
        "top10_overlap": {"mean": round(mean_overlap, 4), "lowest": {q: shared[q] for q in lowest}},
        "queries": len(shared), "documents": ctx.prepared.dataset.identity.n_documents,
        "endpoint_timing": ep.timing,
    }
    others = ", ".join(f"{m} {deltas[m]:+.4f}" for m in metrics if m != primary)
    tail = f"; others: {others}; mean top-{TOP_K_OVERLAP} overlap {mean_overlap:.3f}"
    head = f"{primary} endpoint {ep.metrics[primary]:.4f} vs reference {ref.metrics[primary]:.4f}"
    if abs(deltas[primary]) > s.max_ndcg_delta:
        worst = ", ".join(f"{q} ({shared[q]:.1f})" for q in lowest[:3])
        return Verdict("retrieval_agreement", False,
                       f"retrieval agreement: |delta {primary}| {abs(deltas[primary]):.4f} > {s.max_ndcg_delta} "
                       f"({head}){tail}; lowest overlap: {worst}", details)
    return Verdict("retrieval_agreement", True,
                   f"retrieval agreement: {head}, delta {deltas[primary]:+.4f} within {s.max_ndcg_delta}{tail}",
                   details)


def retrieval_section(verdict: Verdict) -> list[str]:
    """report.md: the metric table of one retrieval agreement verdict (nothing when the check errored)."""
    from ...reports.markdown import table

    if "metrics" not in verdict.details:
        return []
    rows = [(m, d["reference"], d["endpoint"], f"{d['delta']:+.4f}") for m, d in verdict.details["metrics"].items()]
    return ["## Retrieval agreement", "", table(["metric", "reference", "endpoint", "delta"], rows),
            f"Mean top-{TOP_K_OVERLAP} overlap: {verdict.details['top10_overlap']['mean']:.3f}", ""]


RETRIEVAL_AGREEMENT = CanaryCheck(
    name="retrieval_agreement", label="retrieval agreement", run=check_retrieval_agreement,
    thresholds=("max_ndcg_delta",), per_dataset=True, report=retrieval_section,
    explanation="the whole dataset encoded by the endpoint, searched and scored like the local reference: "
                "|delta ndcg@10| at most the threshold; reports every metric's delta and the top-10 overlap",
    example="retrieval agreement: |delta ndcg@10| 0.0312 > 0.005 (ndcg@10 endpoint 0.6120 vs reference 0.6432); "
            "others: recall@10 -0.0250; mean top-10 overlap 0.871; lowest overlap: q17 (0.3), q4 (0.5), q9 (0.6)")
