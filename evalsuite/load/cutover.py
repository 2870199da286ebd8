"""Old vs new deployment in one run: retrieval quality of each on the dataset (through the pipeline,
the endpoint client as the encoder), capacity from one interleaved load profile, capacity gates, and
the verdict: the change stands only when quality holds AND every capacity gate passes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import SpecError
from .gates import CapacityGate, GateOutcome, evaluate_gates
from .runner import Level, LoadPlan, LoadProfile, run_load
from .targets import Target
from .workload import Workload

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..pipeline import Prepared
    from ..result import Result

OLD, NEW = "old", "new"
DEFAULT_QUALITY_MARGIN = 0.005


@dataclass(frozen=True)
class QualityDelta:
    """One metric, new minus old, over the same queries; ``holds`` when the drop is within ``margin``."""

    metric: str
    old: float
    new: float
    delta: float
    margin: float
    queries: int
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def holds(self) -> bool | None:
        """Non-inferiority: the lower end of the delta's CI (the point delta without a CI) is >= -margin."""
        low = self.delta if self.ci_low is None else self.ci_low
        if not math.isfinite(low):
            return None
        return low >= -self.margin - 1e-12

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "old": self.old, "new": self.new, "delta": self.delta, "margin": self.margin,
                "queries": self.queries, "ci_low": self.ci_low, "ci_high": self.ci_high, "holds": self.holds}


def quality_deltas(old: Result, new: Result, margin: float) -> list[QualityDelta]:
    """Per-metric deltas over the queries both results scored (paired by query id)."""
    out = []
    for m in old.metrics:
        a, b = old.per_query.get(m, {}), new.per_query.get(m, {})
        qids = [q for q in a if q in b]
        if not qids:
            raise SpecError(f"the two deployments share no scored query for {m}; were they run on one dataset?")
        mean_a = sum(a[q] for q in qids) / len(qids)
        mean_b = sum(b[q] for q in qids) / len(qids)
        out.append(QualityDelta(m, mean_a, mean_b, mean_b - mean_a, margin, len(qids)))
    return out


@dataclass(frozen=True)
class Cutover:
    """Everything the cutover decided, and why."""

    urls: dict[str, str]
    quality: tuple[QualityDelta, ...]
    gates: tuple[GateOutcome, ...]
    profile: LoadProfile
    dataset: dict[str, Any]
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def quality_holds(self) -> bool | None:
        return _all(q.holds for q in self.quality)

    @property
    def capacity_holds(self) -> bool | None:
        return _all(g.passed for g in self.gates)

    @property
    def stands(self) -> bool:
        return self.quality_holds is True and self.capacity_holds is True

    def verdict(self) -> str:
        if self.stands:
            return "the change stands: quality holds and every capacity gate passes"
        why = []
        if self.quality_holds is not True:
            bad = [q.metric for q in self.quality if q.holds is not True]
            why.append(f"quality {'drops' if self.quality_holds is False else 'undecided'} ({', '.join(bad)})")
        if self.capacity_holds is not True:
            bad = [g.gate.expr for g in self.gates if g.passed is not True]
            why.append(f"capacity {'fails' if self.capacity_holds is False else 'undecided'} ({', '.join(bad)})")
        return "the change does not stand: " + "; ".join(why)

    def to_dict(self) -> dict[str, Any]:
        return {"created": self.created, "stands": self.stands, "verdict": self.verdict(), "urls": self.urls,
                "dataset": self.dataset, "quality_holds": self.quality_holds, "capacity_holds": self.capacity_holds,
                "quality": [q.to_dict() for q in self.quality], "gates": [g.to_dict() for g in self.gates]}


def _all(values: Any) -> bool | None:
    vals = list(values)
    return False if False in vals else (None if None in vals or not vals else True)


def endpoint_result(prepared: Prepared, encoder: Encoder) -> Result:
    """The dataset through ``encoder`` (e.g. an EndpointEncoder), searched and scored like the reference."""
    import time

    from ..pipeline import encode_dataset, encode_timing, role_stats_since, score, stats_snapshot

    c = prepared.contract
    before = stats_snapshot(encoder)
    t0 = time.perf_counter()
    q, d = encode_dataset(encoder, c, prepared.dataset, [c.pooling])
    timing = encode_timing(role_stats_since(encoder, before), time.perf_counter() - t0)
    return score(prepared, c, q[c.pooling], d[c.pooling], metrics=prepared.spec.metrics, timing=timing,
                 device=encoder.device, keep_vectors=False)


def run_cutover(prepared: Prepared, old: Target, new: Target, old_encoder: Encoder, new_encoder: Encoder,
                urls: dict[str, str], workload: Workload, plan: LoadPlan, gates: Sequence[CapacityGate], *,
                quality_margin: float = DEFAULT_QUALITY_MARGIN, progress: bool = False,
                extra_targets: Sequence[Target] = (), on_step: Callable[[str], None] | None = None,
                on_level: Callable[[Level], None] | None = None) -> Cutover:
    """Quality of both (old first, then new), then one interleaved load profile of old, new and any
    extra target (e.g. the local reference), then the gates of new against old."""
    if (old.name, new.name) != (OLD, NEW):
        raise SpecError(f"cutover targets must be named {OLD!r} and {NEW!r}, got {old.name!r} and {new.name!r}")
    say = on_step or (lambda _m: None)
    results = {}
    for name, enc in ((OLD, old_encoder), (NEW, new_encoder)):
        say(f"quality  {name}: encoding {prepared.dataset.identity.n_documents} documents and "
            f"{prepared.dataset.identity.n_queries} queries")
        results[name] = endpoint_result(prepared, enc)
    quality = quality_deltas(results[OLD], results[NEW], quality_margin)
    say("capacity old vs new, interleaved")
    profile = run_load([old, new, *extra_targets], workload, plan, progress=progress, on_level=on_level)
    outcomes = evaluate_gates(tuple(gates), profile, OLD, NEW)
    return Cutover(urls, tuple(quality), tuple(outcomes), profile, prepared.dataset.identity.to_dict())
