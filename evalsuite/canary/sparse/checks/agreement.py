"""Text by text: the served sparse vector of each probe text (and of a sample of the dataset's) against the local
reference's, on its active token ids and on its weights; the worst text decides each."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....checks import Check, CheckOutcome
from ....checks.measure import snippet
from ..compare import TextFit, compare_all, worst

if TYPE_CHECKING:
    from ..context import SparseCanaryContext


def _fits(ctx: SparseCanaryContext) -> list[TextFit]:
    return ctx.shared(
        "fits",
        lambda: compare_all(ctx.served_vectors(), ctx.reference_vectors(), edge=ctx.settings.weight_tol),
    )


def _tokens(ctx: SparseCanaryContext, ids: tuple[int, ...], limit: int = 6) -> str:
    names = ctx.encoder.tokenizer().convert_ids_to_tokens(list(ids[:limit]))
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(f"{i} {n!r}" for i, n in zip(ids, names, strict=False)) + more


def check_token_agreement(ctx: SparseCanaryContext) -> CheckOutcome:
    s, probes = ctx.settings, ctx.probes()
    fits = _fits(ctx)
    at = worst(fits, "overlap")
    f = fits[at]
    active = sum(len(i) for i, _ in ctx.reference_vectors())
    details: dict[str, Any] = {
        "texts": len(fits),
        "reference_active_ids": active,
        "min_overlap": round(f.overlap, 6),
        "threshold": s.min_overlap,
        "worst": probes.ids[at],
        "only_served": list(f.only_served),
        "only_reference": list(f.only_reference),
        "per_text": {i: round(x.overlap, 6) for i, x in zip(probes.ids, fits, strict=True)},
    }
    below = sum(x.overlap < s.min_overlap for x in fits)
    if below:
        parts = []
        if f.only_served:
            parts.append(f"served only: {_tokens(ctx, f.only_served)}")
        if f.only_reference:
            parts.append(f"reference only: {_tokens(ctx, f.only_reference)}")
        return CheckOutcome(
            "token_agreement",
            False,
            f"token agreement: {below} of {len(fits)} texts hold other active token ids than the reference; the "
            f'worst, {probes.ids[at]} "{snippet(probes.texts[at])}", shares {f.overlap:.3f} of them (need >= '
            f"{s.min_overlap:g}; {'; '.join(parts)})",
            details,
        )
    return CheckOutcome(
        "token_agreement",
        True,
        f"token agreement: {len(fits)} texts, {active} active token ids; the worst text shares {f.overlap:.3f} "
        f"of them (>= {s.min_overlap:g})",
        details,
    )


def check_weight_agreement(ctx: SparseCanaryContext) -> CheckOutcome:
    s, probes = ctx.settings, ctx.probes()
    fits = _fits(ctx)
    at = worst(fits, "shared_diff")
    f = fits[at]
    details = {
        "texts": len(fits),
        "max_abs_diff": f.shared_diff,
        "tolerance": s.weight_tol,
        "worst": probes.ids[at],
        "per_text": {i: x.shared_diff for i, x in zip(probes.ids, fits, strict=True)},
    }
    if f.shared_diff > s.weight_tol:
        below = sum(x.shared_diff > s.weight_tol for x in fits)
        return CheckOutcome(
            "weight_agreement",
            False,
            f"weight agreement: max |served - reference| weight on a shared token id {f.shared_diff:.4g} > "
            f'{s.weight_tol:g} on {probes.ids[at]} "{snippet(probes.texts[at])}" ({below} of {len(fits)} texts '
            "above)",
            details,
        )
    return CheckOutcome(
        "weight_agreement",
        True,
        f"weight agreement: {len(fits)} texts, max |served - reference| weight on a shared token id "
        f"{f.shared_diff:.3g} <= {s.weight_tol:g}",
        details,
    )


TOKEN_AGREEMENT: Check[SparseCanaryContext] = Check(
    name="token_agreement",
    label="token agreement",
    run=check_token_agreement,
    thresholds=("min_overlap", "weight_tol"),
    explanation="each probe text's (and a dataset sample's) served active token ids against the reference's: the "
    "share both hold (an id one side holds with a weight at most weight_tol is the ReLU's edge), the worst text",
    example="token agreement: 27 of 59 texts hold other active token ids than the reference; the worst, probe q1 "
    "\"how do I…\", shares 0.750 of them (need >= 1; served only: 0 '<s>', 2 '</s>')",
    stage="agreement",
    diagnosed=True,
)
WEIGHT_AGREEMENT: Check[SparseCanaryContext] = Check(
    name="weight_agreement",
    label="weight agreement",
    run=check_weight_agreement,
    thresholds=("weight_tol",),
    explanation="on the token ids both sides hold, the largest |served - reference| weight, the worst text",
    example="weight agreement: max |served - reference| weight on a shared token id 1.27 > 0.001 on probe d2 …",
    stage="agreement",
    diagnosed=True,
)
