"""Metric by metric: the whole dataset through the served sparse endpoint, pruned to the contract's
``sparse_top_k``, searched exactly and scored like the reference's sparse run (the embedding canary's parity rule:
|delta ndcg@10| within the tolerance and a mean per-query top-10 overlap of at least the threshold; each delta with
its paired bootstrap CI)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....checks import Check, CheckOutcome
from ....checks.measure import TOP_K_OVERLAP
from ...embedding.checks.retrieval import paired_intervals, rank_overlap

if TYPE_CHECKING:
    from ..context import SparseCanaryContext


def check_sparse_retrieval(ctx: SparseCanaryContext) -> CheckOutcome:
    s = ctx.settings
    ref, ep = ctx.reference_run(), ctx.served_run()
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
        "min_overlap": s.min_rank_overlap,
        "sparse_top_k": ctx.top_k,
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
            "threshold": s.min_rank_overlap,
        },
        "queries": len(shared),
        "documents": ctx.prepared.dataset.identity.n_documents,
    }
    ci = cis.get(primary)
    ci_text = f" (95% CI {ci['ci_low']:+.4f} .. {ci['ci_high']:+.4f})" if ci else ""
    head = f"{primary} served {ep.metrics[primary]:.4f} vs reference {ref.metrics[primary]:.4f}"
    tail = f"; mean top-{TOP_K_OVERLAP} overlap {mean_overlap:.3f}"
    worst = ", ".join(f"{q} ({shared[q]:.1f})" for q in lowest[:3])
    if abs(deltas[primary]) > s.max_ndcg_delta:
        return CheckOutcome(
            "sparse_retrieval",
            False,
            f"sparse retrieval: |delta {primary}| {abs(deltas[primary]):.4f} > {s.max_ndcg_delta} ({head}{ci_text})"
            f"{tail}; lowest overlap: {worst}",
            details,
        )
    if mean_overlap < s.min_rank_overlap:
        return CheckOutcome(
            "sparse_retrieval",
            False,
            f"sparse retrieval: mean top-{TOP_K_OVERLAP} overlap {mean_overlap:.3f} < {s.min_rank_overlap} although "
            f"|delta {primary}| {abs(deltas[primary]):.4f} is within {s.max_ndcg_delta} ({head}{ci_text}); the "
            f"rankings differ; lowest overlap: {worst}",
            details,
        )
    return CheckOutcome(
        "sparse_retrieval",
        True,
        f"sparse retrieval: {head}, delta {deltas[primary]:+.4f}{ci_text} within {s.max_ndcg_delta}{tail} >= "
        f"{s.min_rank_overlap}",
        details,
    )


def sparse_retrieval_section(verdict: CheckOutcome) -> list[str]:
    """report.md: the metric table of the sparse retrieval verdict (nothing when the check errored)."""
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
        "## Sparse retrieval agreement",
        "",
        table(["metric", "reference", "served", "delta", "95% CI"], rows),
        f"Mean top-{TOP_K_OVERLAP} overlap: {ov['mean']:.3f} (threshold {ov['threshold']}); both runs pruned to "
        f"sparse_top_k {verdict.details['sparse_top_k']} (0: every weight) and searched exactly",
        "",
    ]


SPARSE_RETRIEVAL: Check[SparseCanaryContext] = Check(
    name="sparse_retrieval",
    label="sparse retrieval",
    run=check_sparse_retrieval,
    thresholds=("max_ndcg_delta", "min_rank_overlap"),
    report=sparse_retrieval_section,
    explanation="the whole dataset through the served endpoint, pruned to sparse_top_k, searched exactly and scored "
    "like the reference's sparse run: |delta ndcg@10| at most the threshold and a mean per-query top-10 overlap of "
    "at least min_rank_overlap; every metric's delta with its paired 95% CI",
    example="sparse retrieval: |delta ndcg@10| 0.0312 > 0.005 (ndcg@10 served 0.6120 vs reference 0.6432); mean "
    "top-10 overlap 0.871; lowest overlap: q17 (0.3), q4 (0.5), q9 (0.6)",
    stage="search",
    diagnosed=True,
)
