"""Members of a fleet checked against each other before any dataset text is sent.

Every member encodes the same probe texts (queries and documents, rendered by the contract; one
request each). Two members agree when every probe vector of one has cosine at least
:data:`MEMBER_MIN_COSINE` with the other's and the same norm (relative difference at most
:data:`MEMBER_NORM_TOL`). A member that agrees with fewer than half of the others serves another
contract (pooling, revision, normalization, prefix): the run stops naming it. With two members that
disagree neither can be blamed from the vectors alone, and both are named.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..base.errors import EndpointError, FleetMismatch

if TYPE_CHECKING:
    from .endpoint import EndpointEncoder

MEMBER_MIN_COSINE = 0.99
MEMBER_NORM_TOL = 1e-2
PROBES: tuple[tuple[str, str], ...] = (
    ("query", "what does the moon orbit"),
    ("query", "how do plants turn sunlight into sugar"),
    ("document", "Photosynthesis converts light energy into chemical energy stored in glucose."),
    (
        "document",
        "A network router forwards each packet along a route chosen by its routing protocol; when a link "
        "fails, the protocol recomputes the routes and the packets take another path through the network "
        "until the link comes back and the original route is restored.",
    ),
)


def member_failed(url: str, exc: Exception) -> EndpointError:
    """The error that stops a fleet's run when member ``url`` failed after its retries."""
    return EndpointError(
        f"fleet member {url} failed: {exc}; the run stops (a fleet is evaluated whole, "
        "with no failover): bring the server back or leave its --endpoint out"
    )


def disagreement(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(min cosine, max relative norm difference) between the rows of two members' probe vectors."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    na, nb = np.linalg.norm(a64, axis=1), np.linalg.norm(b64, axis=1)
    cos = np.sum(a64 * b64, axis=1) / np.where(na * nb > 0, na * nb, 1.0)
    rel = np.abs(na - nb) / np.where(nb > 0, nb, 1.0)
    return float(cos.min()), float(rel.max())


def check_members(members: Sequence[EndpointEncoder], render: Callable[[str, str], str]) -> None:
    """FleetMismatch naming the member(s) whose probe vectors disagree with the others' (see the module)."""
    if len(members) < 2:
        return
    texts = [render(role, text) for role, text in PROBES]
    vectors: dict[str, np.ndarray] = {}
    for m in members:
        try:
            vectors[m.config.url] = m.embed(texts, batch_size=len(texts))
        except EndpointError as exc:
            raise member_failed(m.config.url, exc) from None
    urls = list(vectors)
    agrees: dict[str, list[str]] = {u: [] for u in urls}
    worst: dict[tuple[str, str], tuple[float, float]] = {}
    for i, u in enumerate(urls):
        for v in urls[i + 1 :]:
            cos, rel = worst[(u, v)] = disagreement(vectors[u], vectors[v])
            if cos >= MEMBER_MIN_COSINE and rel <= MEMBER_NORM_TOL:
                agrees[u].append(v)
                agrees[v].append(u)
    odd = [u for u in urls if len(agrees[u]) < (len(urls) - 1) / 2 or not agrees[u]]
    if not odd:
        return
    pairs = "; ".join(
        f"{u} vs {v}: min cosine {cos:.4f}, norms off by {rel:.3g}"
        for (u, v), (cos, rel) in worst.items()
        if u in odd or v in odd
    )
    if len(odd) == len(urls) == 2:
        raise FleetMismatch(
            f"the fleet's members disagree on {len(texts)} probe texts ({pairs}): one of {urls[0]} and {urls[1]} "
            "serves another contract (pooling, revision, normalization or prefix); run the canary against each "
            "(evalsuite canary --endpoint URL) to tell which, and fix or leave out that member"
        )
    raise FleetMismatch(
        f"fleet member(s) {', '.join(odd)} disagree with the others on {len(texts)} probe texts ({pairs}): they "
        "serve another contract (pooling, revision, normalization or prefix); fix them or leave their --endpoint "
        "out; no dataset text was sent"
    )
