"""Metric by metric: the whole dataset through the served sparse endpoint, pruned to the contract's
``sparse_top_k``, searched exactly and scored like the reference's sparse run (the embedding canary's parity rule:
|delta ndcg@10| within the tolerance and a mean per-query top-10 overlap of at least the threshold; each delta with
its paired bootstrap CI)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....checks import Check, CheckOutcome
from ....checks.parity import Parity
from ....reports.parity import parity_section

if TYPE_CHECKING:
    from ..context import SparseCanaryContext


def check_sparse_retrieval(ctx: SparseCanaryContext) -> CheckOutcome:
    s = ctx.settings
    parity = Parity.of(ctx.reference_run(), ctx.served_run())
    details = {
        "primary": parity.primary,
        "tolerance": s.max_ndcg_delta,
        "min_overlap": s.min_rank_overlap,
        "sparse_top_k": ctx.top_k,
        "metrics": parity.metric_details(),
        "top10_overlap": parity.overlap_details(s.min_rank_overlap),
        "queries": len(parity.shared),
        "documents": ctx.prepared.dataset.identity.n_documents,
    }
    return parity.verdict(
        "sparse_retrieval",
        "sparse retrieval",
        tolerance=s.max_ndcg_delta,
        min_overlap=s.min_rank_overlap,
        details=details,
        served_word="served",
        others=False,
    )


def sparse_retrieval_section(verdict: CheckOutcome) -> list[str]:
    """report.md: the metric table of the sparse retrieval verdict (nothing when the check errored)."""
    note = (
        f"both runs pruned to sparse_top_k {verdict.details.get('sparse_top_k')} (0: every weight) and searched exactly"
    )
    return parity_section(verdict, "Sparse retrieval agreement", "served", note)


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
