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
from ....checks.parity import Parity
from ....reports.parity import parity_section

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..context import CanaryContext


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
    parity = Parity.of(ref, ep)
    details = {
        "primary": parity.primary,
        "tolerance": s.max_ndcg_delta,
        "min_overlap": s.min_overlap,
        "metrics": parity.metric_details(),
        "top10_overlap": parity.overlap_details(s.min_overlap),
        "slices": _slice_moves(ctx, ep.per_query, ref.per_query, parity.primary),
        "queries": len(parity.shared),
        "documents": ctx.prepared.dataset.identity.n_documents,
        "endpoint_timing": ep.timing,
    }
    return parity.verdict(
        "retrieval_agreement",
        "retrieval agreement",
        tolerance=s.max_ndcg_delta,
        min_overlap=s.min_overlap,
        details=details,
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


def retrieval_section(verdict: CheckOutcome) -> list[str]:
    """report.md: the metric table of one retrieval agreement verdict (nothing when the check errored)."""
    note = "a parity check: |delta| within the tolerance and the rankings' overlap above the threshold"
    section = parity_section(verdict, "Retrieval agreement", "endpoint", note)
    return [*section, *_slice_lines(verdict.details.get("slices", []))] if section else []


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
