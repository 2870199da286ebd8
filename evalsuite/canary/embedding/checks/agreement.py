"""Vector by vector: served vectors, their norms and their batch independence against the reference."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ....checks import Check, CheckOutcome
from ....checks.measure import UNNORMALIZED_NORM_TOL, cosine_summary, row_cosine, snippet

TRUNCATION_SHARE = 0.75  # of the texts at least as long as the shortest disagreeing one, this many must disagree
EXACT_TOL = 1e-4  # a served vector this close to the reference's (1 - cosine) is the same encoding

if TYPE_CHECKING:
    from ..context import CanaryContext


def check_vector_agreement(ctx: CanaryContext) -> CheckOutcome:
    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    served = ctx.served_vectors()[:, : c.dim]
    cos = row_cosine(served, ctx.reference_vectors())
    summary = cosine_summary(cos, cs.ids)
    by_role = {r: float(min(x for x, rr in zip(cos, cs.roles, strict=False) if rr == r)) for r in set(cs.roles)}
    details = dict(
        summary,
        threshold=s.min_cosine,
        min_by_role={r: round(v, 6) for r, v in by_role.items()},
        query_prefix=c.query_prefix,
        doc_prefix=c.doc_prefix,
        texts=len(cs.ids),
    )
    below = int((cos < s.min_cosine).sum())
    if below:
        worst = cs.ids.index(summary["worst"])
        hint = truncation_hint(ctx, [float(x) for x in cos], s.min_cosine, details)
        bad_roles = [r for r, v in by_role.items() if v < s.min_cosine]
        if not hint and len(bad_roles) == 1 and len(by_role) == 2:
            prefix = c.query_prefix if bad_roles[0] == "query" else c.doc_prefix
            hint = (
                f"; only {bad_roles[0]} texts disagree: check the {bad_roles[0]} prefix ({prefix!r} per the contract)"
            )
        return CheckOutcome(
            "vector_agreement",
            False,
            f"vector agreement: min cosine {summary['min']:.4f} < {s.min_cosine} on {summary['worst']} "
            f'"{snippet(cs.texts[worst])}" ({below} of {len(cos)} texts below; median '
            f"{summary['median']:.4f}){hint}",
            details,
        )
    return CheckOutcome(
        "vector_agreement",
        True,
        f"vector agreement: {len(cos)} texts, min cosine {summary['min']:.5f} ({summary['worst']}), "
        f"median {summary['median']:.5f} >= {s.min_cosine}",
        details,
    )


def truncation_hint(ctx: CanaryContext, cos: list[float], threshold: float, details: dict[str, object]) -> str:
    """When the longer texts disagree and the shorter ones do not (by the reference tokenizer's count of
    each model input), the server truncates shorter than the contract: say so, with where it seems to cut.

    The cut is placed after the longest text the server still encodes exactly like the reference
    (cosine within EXACT_TOL of 1) when exactly the texts up to some length are exact; otherwise after
    the longest text that still agrees (cosine at least ``threshold``)."""
    counts = ctx.token_counts(ctx.canary_set().rendered(ctx.contract))
    disagree = [c < threshold for c in cos]
    if counts is None or all(disagree) or not any(disagree):
        return ""
    shortest_bad = min(n for n, bad in zip(counts, disagree, strict=True) if bad)
    longer = [bad for n, bad in zip(counts, disagree, strict=True) if n >= shortest_bad]
    if sum(longer) < TRUNCATION_SHARE * len(longer):  # long and short texts disagree alike: not a length cut
        return ""
    shorter = [n for n, bad in zip(counts, disagree, strict=True) if not bad and n < shortest_bad]
    max_length = ctx.contract.max_length
    if not shorter:
        return ""
    low, high = max(shorter), shortest_bad - 1
    exact = [n for n, c in zip(counts, cos, strict=True) if c >= 1.0 - EXACT_TOL]
    changed = [n for n, c in zip(counts, cos, strict=True) if c < 1.0 - EXACT_TOL]
    if exact and max(exact) < min(changed):  # every text up to some length is encoded exactly, no longer one is
        low, high = max(exact), min(changed) - 1
    if low >= max_length:
        return ""
    cut_at = str(low) if high <= low else f"{low}-{high}"
    details["truncation"] = {
        "cut_at_tokens": [low, max(low, high)],
        "shortest_disagreeing_tokens": shortest_bad,
        "max_length": max_length,
        "tokens": dict(zip(ctx.canary_set().ids, counts, strict=True)),
    }
    return (
        f"; texts longer than ~{cut_at} tokens disagree (the shortest failing one has {shortest_bad} tokens): "
        f"the server seems to truncate at ~{cut_at} < max_length {max_length}; set the server's max length to "
        "the contract's"
    )


def check_norm_agreement(ctx: CanaryContext) -> CheckOutcome:
    import numpy as np

    from ....encode.response import NORM_TOL

    c, cs = ctx.contract, ctx.canary_set()
    raw = ctx.served_vectors()
    served = np.linalg.norm(raw if c.normalize else raw[:, : c.dim], axis=1)
    ref = np.linalg.norm(ctx.reference_vectors(), axis=1)
    rel = np.abs(served - ref) / np.where(ref > 0, ref, 1.0)
    tol = NORM_TOL if c.normalize else UNNORMALIZED_NORM_TOL
    worst = int(rel.argmax())
    details = {
        "normalize": c.normalize,
        "tolerance": tol,
        "served": {"min": round(float(served.min()), 6), "max": round(float(served.max()), 6)},
        "reference": {"min": round(float(ref.min()), 6), "max": round(float(ref.max()), 6)},
        "max_relative_difference": round(float(rel.max()), 6),
        "worst": cs.ids[worst],
    }
    span = f"served norms {served.min():.4f}-{served.max():.4f}, reference {ref.min():.4f}-{ref.max():.4f}"
    if rel[worst] > tol:
        hint = ""
        if not c.normalize and abs(served[worst] - 1.0) < NORM_TOL:
            hint = "; the server normalizes but the contract says normalize=false (similarity dot)"
        return CheckOutcome(
            "norm_agreement",
            False,
            f"norm agreement: served norm {served[worst]:.4f} vs reference {ref[worst]:.4f} on "
            f"{cs.ids[worst]} (relative difference {rel[worst]:.4g} > {tol:g}); {span}{hint}",
            details,
        )
    return CheckOutcome(
        "norm_agreement", True, f"norm agreement: {span} (max relative difference {rel.max():.2g} <= {tol:g})", details
    )


def padding_hint(pooling: str, padding_side: str | None) -> str:
    """Where batching changes vectors under last-token pooling, the padding is the likely cause (TEI's Qwen3
    and vLLM's gte-Qwen2 reports): say so, with the model's declared padding side and the remedy."""
    if pooling != "last":
        return ""
    declared = f" (the model's tokenizer_config.json pads on the {padding_side})" if padding_side else ""
    return (
        "; with last-token pooling that is the padding side: a right-padded batch whose last position (a pad) is "
        "pooled, or left padding that shifts the positions" + declared + "; remedy: pool each text's last real "
        "token (the attention mask's last 1) and give padded rows their own position ids, or serve with the "
        "padding side the model declares"
    )


def check_batch_invariance(ctx: CanaryContext) -> CheckOutcome:
    import numpy as np

    s, cs = ctx.settings, ctx.canary_set()
    prefixed = cs.rendered(ctx.contract)
    order = list(range(len(prefixed)))
    random.Random(0).shuffle(order)
    client = ctx.client()
    shuffled = client.embed(
        [prefixed[i] for i in order], ids=[cs.ids[i] for i in order], batch_size=len(order), sort_by_length=False
    )
    batched = np.empty_like(shuffled)
    batched[order] = shuffled
    single = client.embed(prefixed, ids=list(cs.ids), batch_size=1)
    cos = row_cosine(batched, single)
    summary = cosine_summary(cos, cs.ids)
    details = dict(summary, threshold=s.batch_min_cosine, order=[cs.ids[i] for i in order])
    what = f"{len(cos)} texts in one shuffled request vs one request each"
    if summary["min"] < s.batch_min_cosine:
        return CheckOutcome(
            "batch_invariance",
            False,
            f"batch invariance: {what}: min cosine {summary['min']:.5f} < {s.batch_min_cosine} on "
            f"{summary['worst']}; the server's batching (padding or order) changes vectors"
            + padding_hint(ctx.contract.pooling, getattr(ctx.tokenizer(), "padding_side", None)),
            details,
        )
    return CheckOutcome(
        "batch_invariance",
        True,
        f"batch invariance: {what}: min cosine {summary['min']:.6f} >= {s.batch_min_cosine}",
        details,
    )


VECTOR_AGREEMENT = Check(
    name="vector_agreement",
    label="vector agreement",
    run=check_vector_agreement,
    thresholds=("min_cosine",),
    explanation="every canary text (queries and documents, rendered by the contract) gets a served vector whose "
    "cosine with the local reference's is at least the threshold; names the worst text and, when only "
    "one role disagrees, its prefix",
    example='vector agreement: min cosine 0.8123 < 0.99 on q3 "What happens when a basketball player fouls…" '
    "(12 of 27 texts below; median 0.9011); only query texts disagree: check the query prefix "
    "('query: ' per the contract)",
    stage="agreement",
    diagnosed=True,
)

NORM_AGREEMENT = Check(
    name="norm_agreement",
    label="norm agreement",
    run=check_norm_agreement,
    explanation="served vector norms match the reference's (unit norm when the contract normalizes)",
    example="norm agreement: served norm 1.0000 vs reference 7.4210 on d3 (relative difference 0.8652 > 0.01); "
    "served norms 1.0000-1.0000, reference 6.9012-8.1120; the server normalizes but the contract says "
    "normalize=false (similarity dot)",
    stage="shape",
    diagnosed=True,
)

BATCH_INVARIANCE = Check(
    name="batch_invariance",
    label="batch invariance",
    run=check_batch_invariance,
    thresholds=("batch_min_cosine",),
    explanation="the canary texts sent in one shuffled request and one request each give the same vectors "
    "(padding and batch order must not change them)",
    example="batch invariance: 27 texts in one shuffled request vs one request each: min cosine 0.99512 < 0.999 "
    "on d_long; the server's batching (padding or order) changes vectors",
    stage="batch",
    diagnosed=True,
)
