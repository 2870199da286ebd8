"""Server-side Matryoshka output (`dimensions`): truncate-and-renormalize like the reference, refuse too many."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ....base.errors import SpecError
from ....checks import Check, CheckOutcome
from ....checks.measure import cosine_summary, is_input_rejection, row_cosine

if TYPE_CHECKING:
    from ..context import CanaryContext


def validate_dimensions(dimensions: Sequence[int], hidden: int, declared: Sequence[int] | None) -> None:
    """SpecError for a ``--canary-dimensions`` value the model cannot give (checked before any request too)."""
    for d in dimensions:
        if d > hidden:
            raise SpecError(f"--canary-dimensions {d} exceeds the model's output dimension {hidden}")
        if declared and d != hidden and d not in declared:
            raise SpecError(
                f"--canary-dimensions {d} is not one of the Matryoshka dimensions the model declares {list(declared)}"
            )


def check_matryoshka(ctx: CanaryContext) -> CheckOutcome:
    import numpy as np

    from ....encode.response import NORM_TOL

    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    validate_dimensions(s.dimensions, ctx.hidden_size, ctx.prepared.model.matryoshka_dims)
    client = ctx.client()
    prefixed = cs.rendered(c)
    notes: list[str] = []
    failures: list[str] = []
    details: dict[str, Any] = {}
    for d in s.dimensions:
        served = client.embed(prefixed, ids=list(cs.ids), dimensions=d, check_norm=False)
        norms = np.linalg.norm(served, axis=1)
        cos = row_cosine(served, ctx.reference_vectors(dim=d))
        summary = cosine_summary(cos, cs.ids)
        details[str(d)] = {
            "norm_min": round(float(norms.min()), 6),
            "norm_max": round(float(norms.max()), 6),
            "cosine_min": summary["min"],
            "cosine_median": summary["median"],
            "worst": summary["worst"],
        }
        direction = f"min cosine {summary['min']:.5f} vs the reference's truncate-and-renormalize"
        if summary["min"] < s.min_cosine:
            failures.append(f"dimensions={d}: {direction} < {s.min_cosine} on {summary['worst']}")
        elif c.normalize and np.abs(norms - 1.0).max() > NORM_TOL:
            failures.append(
                f"dimensions={d}: norms {norms.min():.4f}-{norms.max():.4f}, but the contract says "
                "normalized: the server truncates without re-normalizing (Infinity does); "
                f"re-normalize on the client or do not use server-side dimensions ({direction})"
            )
        else:
            notes.append(f"dimensions={d}: {d} values, norms {norms.min():.4f}-{norms.max():.4f}, {direction}")
    bad = ctx.hidden_size + 1
    resp = client.request(
        "POST",
        client.config.embeddings_url,
        json=client.payload(["invalid dimension"], bad),
        what=f"the dimensions={bad} probe",
    )
    details["invalid_dimension"] = {"dimensions": bad, "status": resp.status_code}
    if is_input_rejection(resp.status_code):
        notes.append(f"dimensions={bad} -> HTTP {resp.status_code}")
    else:
        failures.append(
            f"dimensions={bad} (over the model's {ctx.hidden_size}) -> HTTP {resp.status_code}, expected a 4xx"
        )
    if failures:
        return CheckOutcome("matryoshka", False, "matryoshka: " + "; ".join(failures), details)
    return CheckOutcome("matryoshka", True, "matryoshka: " + "; ".join(notes), details)


MATRYOSHKA = Check(
    name="matryoshka",
    label="matryoshka",
    run=check_matryoshka,
    thresholds=("min_cosine",),
    requires="dimensions",
    explanation="for each --canary-dimensions value the server's 'dimensions' output matches the reference "
    "truncated and re-normalized (unit norm when the contract normalizes); a dimension over the "
    "model's gets a 4xx",
    example="matryoshka: dimensions=256: norms 0.7012-0.8123, but the contract says normalized: the server "
    "truncates without re-normalizing (Infinity does); re-normalize on the client or do not use "
    "server-side dimensions",
    stage="batch",
    diagnosed=True,
)
