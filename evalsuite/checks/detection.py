"""How likely a random sample catches a fault that hits a share of what it samples, shared by the families: the
canary's repeated requests (a faulty replica behind a load balancer) and the audit's fidelity sample (a share of
bad stored vectors). A fault reached by each draw independently with probability ``p`` is missed by all ``n`` of
them with probability ``(1 - p) ** n``."""

from __future__ import annotations

import math

DETECT_CONFIDENCE = 0.99  # the probability with which the stated share is caught


def requests_needed(share: float, confidence: float = DETECT_CONFIDENCE) -> int:
    """The fewest requests that reach a fault hit by ``share`` of them at least once with ``confidence``."""
    if share >= 1.0:
        return 1
    return max(1, math.ceil(math.log(1.0 - confidence) / math.log(1.0 - share)))


def detection_probability(share: float, requests: int) -> float:
    """P(at least one of ``requests`` independent requests reaches a fault that hits ``share`` of them)."""
    return 1.0 - float((1.0 - share) ** requests)


def detectable_share(requests: int, confidence: float = DETECT_CONFIDENCE) -> float:
    """The smallest share of requests a fault must hit to be caught by ``requests`` with ``confidence``."""
    return 1.0 - float((1.0 - confidence) ** (1.0 / requests))
