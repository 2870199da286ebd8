"""Old vs new deployment in one run: retrieval quality of each on the dataset (through the pipeline,
the endpoint client as the encoder), capacity from one interleaved load profile, capacity gates, and
the verdict: the change stands only when quality holds AND every capacity gate passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from .gates import CapacityGate, GateOutcome, evaluate_gates
from .runner import Level, LoadPlan, LoadProfile, run_load
from .targets import Target
from .workload import Workload

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..run.pipeline import Prepared
    from ..run.result import Result

OLD, NEW = "old", "new"
DEFAULT_QUALITY_MARGIN = 0.005


@dataclass(frozen=True)
class QualityDelta:
    """One metric, new minus old, paired by query, with its bootstrap interval and a non-inferiority
    decision (:func:`evalsuite.scoring.stats.non_inferiority`): the drop is at most ``margin`` with 95% confidence."""

    metric: str
    old: float
    new: float
    delta: float
    margin: float
    queries: int
    ci_low: float
    ci_high: float
    lower_bound: float  # one-sided 95% bound: holds when >= -margin
    decision: str  # "pass", "fail" or "inconclusive"
    summary: str  # the interval, the decision and, when undecided, how many queries would decide it
    queries_needed: int | None = None

    @property
    def holds(self) -> bool | None:
        return {"pass": True, "fail": False}.get(self.decision)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "old": self.old,
            "new": self.new,
            "delta": self.delta,
            "margin": self.margin,
            "queries": self.queries,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "lower_bound": self.lower_bound,
            "decision": self.decision,
            "holds": self.holds,
            "queries_needed": self.queries_needed,
            "summary": self.summary,
        }


def quality_deltas(old: Result, new: Result, margin: float, *, seed: int = 0) -> list[QualityDelta]:
    """Per-metric non-inferiority of ``new`` against ``old`` over the queries both scored (paired by id)."""
    from ..scoring.stats import non_inferiority, paired_scores

    metrics = list(old.metrics)
    qids, cand, ref = paired_scores(new.per_query, old.per_query, metrics)
    verdicts = non_inferiority(cand, ref, margin=margin, seed=seed)
    return [
        QualityDelta(
            m,
            float(ref[:, j].mean()),
            float(cand[:, j].mean()),
            v.ci.delta,
            margin,
            len(qids),
            v.ci.low,
            v.ci.high,
            v.ci.lower_bound,
            v.decision,
            f"{m}: {v.summary()}",
            v.queries_needed,
        )
        for j, (m, v) in enumerate(zip(metrics, verdicts, strict=True))
    ]


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
            need = [q.queries_needed for q in self.quality if q.holds is None and q.queries_needed is not None]
            hint = f"; about {max(need)} queries would decide it" if need and self.quality_holds is None else ""
            why.append(f"quality {'drops' if self.quality_holds is False else 'undecided'} ({', '.join(bad)}{hint})")
        if self.capacity_holds is not True:
            bad = [g.gate.expr for g in self.gates if g.passed is not True]
            why.append(f"capacity {'fails' if self.capacity_holds is False else 'undecided'} ({', '.join(bad)})")
        return "the change does not stand: " + "; ".join(why)

    def to_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "stands": self.stands,
            "verdict": self.verdict(),
            "urls": self.urls,
            "dataset": self.dataset,
            "quality_holds": self.quality_holds,
            "capacity_holds": self.capacity_holds,
            "quality": [q.to_dict() for q in self.quality],
            "gates": [g.to_dict() for g in self.gates],
        }


def _all(values: Any) -> bool | None:
    vals = list(values)
    return False if False in vals else (None if None in vals or not vals else True)


def endpoint_result(prepared: Prepared, encoder: Encoder) -> Result:
    """The dataset through ``encoder`` (e.g. an EndpointEncoder), searched and scored like the reference."""
    import time

    from ..run.pipeline import encode_dataset, score
    from ..run.record import encode_timing, role_stats_since, stats_snapshot

    c = prepared.contract
    before = stats_snapshot(encoder)
    t0 = time.perf_counter()
    q, d = encode_dataset(encoder, c, prepared.dataset, [c.pooling])
    timing = encode_timing(role_stats_since(encoder, before), time.perf_counter() - t0)
    return score(
        prepared,
        c,
        q[c.pooling],
        d[c.pooling],
        metrics=prepared.spec.metrics,
        timing=timing,
        device=encoder.device,
        keep_vectors=False,
    )


def run_cutover(
    prepared: Prepared,
    old: Target,
    new: Target,
    old_encoder: Encoder,
    new_encoder: Encoder,
    urls: dict[str, str],
    workload: Workload,
    plan: LoadPlan,
    gates: Sequence[CapacityGate],
    *,
    quality_margin: float = DEFAULT_QUALITY_MARGIN,
    progress: bool = False,
    extra_targets: Sequence[Target] = (),
    on_step: Callable[[str], None] | None = None,
    on_level: Callable[[Level], None] | None = None,
) -> Cutover:
    """Quality of both (old first, then new), then one interleaved load profile of old, new and any
    extra target (e.g. the local reference), then the gates of new against old."""
    if (old.name, new.name) != (OLD, NEW):
        raise SpecError(f"cutover targets must be named {OLD!r} and {NEW!r}, got {old.name!r} and {new.name!r}")
    say = on_step or (lambda _m: None)
    results = {}
    for name, enc in ((OLD, old_encoder), (NEW, new_encoder)):
        say(
            f"quality  {name}: encoding {prepared.dataset.identity.n_documents} documents and "
            f"{prepared.dataset.identity.n_queries} queries"
        )
        results[name] = endpoint_result(prepared, enc)
    quality = quality_deltas(results[OLD], results[NEW], quality_margin)
    say("capacity old vs new, interleaved")
    profile = run_load([old, new, *extra_targets], workload, plan, progress=progress, on_level=on_level)
    outcomes = evaluate_gates(tuple(gates), profile, OLD, NEW)
    return Cutover(urls, tuple(quality), tuple(outcomes), profile, prepared.dataset.identity.to_dict())
