"""Request by request: the canary texts sent again in many small requests, each answer judged on its own.

A fault that hits some requests only (one replica of a fleet behind a load balancer started with another
pooling, revision or normalization; a server that goes wrong after warm-up) passes a check that looks at
one request. Here every probe request is compared with the reference, vector by vector, and the worst
request decides. The number of requests follows from the share of requests the canary must be able to
catch (``--canary-detect``): a fault reached by each request independently with probability ``p`` is
missed by all ``n`` of them with probability ``(1 - p) ** n``.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ....base.errors import EndpointError
from ....checks import Check, CheckOutcome
from ....checks.detection import DETECT_CONFIDENCE, detectable_share, detection_probability, requests_needed
from ....checks.measure import UNNORMALIZED_NORM_TOL, row_cosine

if TYPE_CHECKING:
    from ..context import CanaryContext

PROBE_TEXTS = 4  # canary texts per probe request
ASSUMPTION = (
    "each request reaches the faulty replica (or the fault) independently with the same probability, "
    "and every answer from it disagrees with the reference"
)


def detection_statement(requests: int, share: float) -> str:
    """What ``requests`` independent probe requests could have caught, in one sentence."""
    p = detection_probability(share, requests)
    return (
        f"a replica serving >= {share:.0%} of requests with another contract would have been caught with "
        f"probability {p:.4f} >= {DETECT_CONFIDENCE} ({requests} requests sent; any share >= "
        f"{detectable_share(requests):.1%} with probability >= {DETECT_CONFIDENCE})"
    )


def member_detection_statement(requests: int, share: float, members: int) -> str:
    """What ``requests`` probe requests sent to each of ``members`` URLs (each checked on its own) could have
    caught, in one sentence."""
    return (
        f"each member of {members}: a fault in >= {share:.0%} of its requests caught with probability >= "
        f"{DETECT_CONFIDENCE} ({requests} requests per member; for each member, probability "
        f"{detection_probability(share, requests):.4f})"
    )


def _judge(ctx: CanaryContext, k: int, idx: list[int]) -> dict[str, Any] | None:
    """Probe request ``k`` (the canary texts ``idx``): None when it agrees, else what disagreed."""
    import numpy as np

    from ....encode.response import NORM_TOL

    s, c, cs = ctx.settings, ctx.contract, ctx.canary_set()
    rendered = cs.rendered(c)
    try:
        served = ctx.client().embed([rendered[i] for i in idx], ids=[cs.ids[i] for i in idx], batch_size=len(idx))
    except EndpointError as exc:  # an answer that breaks the contract (e.g. a norm) or none at all
        if ctx.deadline_passed():
            raise
        return {"request": k, "error": str(exc)}
    ref = ctx.reference_vectors()[idx]
    cos = row_cosine(served[:, : c.dim], ref)
    norms = np.linalg.norm(served if c.normalize else served[:, : c.dim], axis=1)
    ref_norms = np.linalg.norm(ref, axis=1)
    rel = np.abs(norms - ref_norms) / np.where(ref_norms > 0, ref_norms, 1.0)
    tol = NORM_TOL if c.normalize else UNNORMALIZED_NORM_TOL
    worst = int(cos.argmin())
    worst_norm = int(rel.argmax())
    if cos[worst] >= s.min_cosine and rel[worst_norm] <= tol:
        return None
    return {
        "request": k,
        "worst": cs.ids[idx[worst]],
        "min_cosine": round(float(cos[worst]), 6),
        "max_norm_difference": round(float(rel[worst_norm]), 6),
    }


_SKIPPED: dict[str, Any] = {"skipped": True}  # a request not sent: an earlier one broke the contract


def _probe(ctx: CanaryContext, n: int, size: int, texts: int) -> list[dict[str, Any]]:
    """The ``n`` probe requests, up to the endpoint's concurrency at once (``--endpoint-concurrency``, as a run's
    batches go): every answered request that disagreed, in request order. A broken answer decides already: the
    requests not yet started are not sent (those in flight are answered and judged too). Requests start in order,
    so every request before the first broken one is answered, as when they are sent one by one."""
    stop = threading.Event()

    def one(k: int) -> dict[str, Any] | None:
        if stop.is_set():
            return _SKIPPED
        try:
            found = _judge(ctx, k, [(k * size + j) % texts for j in range(size)])
        except BaseException:  # past the deadline: raised in order, and nothing more is sent
            stop.set()
            raise
        if found is not None and "error" in found:
            stop.set()
        return found

    with ThreadPoolExecutor(max_workers=max(1, min(ctx.client().config.concurrency, n))) as pool:
        results = list(pool.map(one, range(n)))
    return [found for found in results if found is not None and found is not _SKIPPED]


def check_repeated_requests(ctx: CanaryContext) -> CheckOutcome:
    s, cs = ctx.settings, ctx.canary_set()
    n = requests_needed(s.detect)
    size = min(PROBE_TEXTS, len(cs.ids))
    bad = _probe(ctx, n, size, len(cs.ids))
    statement = detection_statement(n, s.detect)
    details: dict[str, Any] = {
        "requests": n,
        "texts_per_request": size,
        "disagreeing_requests": len(bad),
        "disagreeing": bad[:20],
        "detection": {
            "share": s.detect,
            "probability": round(detection_probability(s.detect, n), 6),
            "confidence": DETECT_CONFIDENCE,
            "detectable_share": round(detectable_share(n), 6),
            "requests": n,
            "assumption": ASSUMPTION,
            "statement": statement,
        },
    }
    what = f"{n} requests of {size} canary texts each, every answer against the reference"
    broken = next((b for b in bad if "error" in b), None)
    if broken is not None:
        return CheckOutcome(
            "repeated_requests",
            False,
            f"repeated requests: probe request {broken['request']} of {n} failed: {broken['error']}; probing "
            f"stopped there ({len(bad) - 1} other answered request(s) disagreed with the reference)",
            details,
        )
    if bad:
        first = bad[0]
        why = f"{first['worst']} cosine {first['min_cosine']:.4f}, norm off by {first['max_norm_difference']:.3g}"
        return CheckOutcome(
            "repeated_requests",
            False,
            f"repeated requests: {len(bad)} of {n} requests disagree with the reference ({len(bad) / n:.0%}; "
            f"first: request {first['request']}, {why}): some requests reach a server (a replica of the "
            "fleet, or after warm-up) that encodes another way; ask each member on its own (--endpoint URL per "
            "member) to name it",
            details,
        )
    return CheckOutcome("repeated_requests", True, f"repeated requests: {what} agree; {statement}", details)


def report_section(v: CheckOutcome) -> list[str]:
    """report.md: what the probe requests could have caught (the detection statement and its assumption)."""
    d = v.details.get("detection")
    if not d:
        return []
    return [
        "## Detection power",
        "",
        f"{d['statement']}.",
        "",
        f"Assumes {d['assumption']}.",
        "",
    ]


REPEATED_REQUESTS = Check(
    name="repeated_requests",
    label="repeated requests",
    run=check_repeated_requests,
    thresholds=("min_cosine", "detect"),
    explanation="the canary texts sent again in as many small requests as --canary-detect needs (a fault "
    "hitting that share of requests is caught with probability 0.99); every answer is judged on its own "
    "against the reference (cosine and norm), and the worst request decides",
    example="repeated requests: 5 of 44 requests disagree with the reference (11%; first: request 3, q2 cosine "
    "0.8123, norm off by 0): some requests reach a server (a replica of the fleet, or after warm-up) that "
    "encodes another way; ask each member on its own (--endpoint URL per member) to name it",
    report=report_section,
)
