"""Two runs on the same dataset, metric by metric: the paired difference over the queries both scored, with its
bootstrap interval, sign-flip p-value and minimum detectable effect (:func:`evalsuite.scoring.stats.compare`, the
statistics every gate and sweep cell reports), and what differs between their contracts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.errors import ContractError, SpecError

if TYPE_CHECKING:
    from ..run.result import Result
    from ..scoring.stats import Comparison


@dataclass(frozen=True)
class MetricDelta:
    """One metric of the candidate against the reference: both means over the shared queries, and the paired
    comparison (``comparison.ci.delta`` = candidate - reference)."""

    metric: str
    candidate: float
    reference: float
    comparison: Comparison

    @property
    def delta(self) -> float:
        return self.comparison.ci.delta

    @property
    def ci(self) -> tuple[float, float]:
        """The two-sided interval of the delta at ``comparison.ci.confidence``."""
        return self.comparison.ci.low, self.comparison.ci.high

    @property
    def p_value(self) -> float:
        return self.comparison.p_value

    def to_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "reference": self.reference, **self.comparison.to_dict()}


@dataclass(frozen=True)
class RunComparison(Mapping[str, MetricDelta]):
    """``candidate.compare(reference)``: a mapping metric -> :class:`MetricDelta`, over ``n_queries`` queries."""

    deltas: Mapping[str, MetricDelta]
    n_queries: int
    dataset: str  # the dataset's sha256, the same on both sides
    contract_diff: Mapping[str, tuple[object, object]]  # {field: (candidate, reference)}

    def __getitem__(self, metric: str) -> MetricDelta:
        try:
            return self.deltas[metric]
        except KeyError:
            raise KeyError(f"{metric!r} was not compared; compared: {', '.join(self.deltas)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self.deltas)

    def __len__(self) -> int:
        return len(self.deltas)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_queries": self.n_queries,
            "dataset_sha256": self.dataset,
            "contract_diff": {k: list(v) for k, v in self.contract_diff.items()},
            "metrics": {m: d.to_dict() for m, d in self.deltas.items()},
        }

    def to_json(self) -> str:
        from ..base.io import json_text

        return json_text(self.to_dict())

    def __str__(self) -> str:
        lines = [f"{len(self.deltas)} metric(s) over {self.n_queries} queries (candidate - reference)"]
        for m, d in self.deltas.items():
            c = d.comparison.ci
            lines.append(
                f"  {m}: {d.candidate:.4f} vs {d.reference:.4f}, delta {c.delta:+.4f} "
                f"({c.confidence:.0%} CI {c.low:+.4f} .. {c.high:+.4f}, p {d.p_value:.3g})"
            )
        return "\n".join(lines)


def compare_results(
    candidate: Result,
    reference: Result,
    metrics: Sequence[str] | None = None,
    *,
    n_resamples: int | None = None,
    seed: int = 0,
    confidence: float | None = None,
) -> RunComparison:
    """``candidate`` against ``reference``, paired over the queries both scored. Runs on different data (another
    dataset sha256) are a :class:`ContractError`; a metric one side lacks is a :class:`SpecError`."""
    from ..scoring.stats import CONFIDENCE, N_RESAMPLES, compare, paired_scores

    a_id, b_id = candidate.dataset.identity, reference.dataset.identity
    if a_id.sha256 != b_id.sha256:
        raise ContractError(
            f"the runs are on different data: {a_id.name} (sha256 {a_id.sha256[:16]}) against {b_id.name} (sha256 "
            f"{b_id.sha256[:16]}); compare runs of the same dataset, split and empty-text policies"
        )
    shared = [m for m in candidate.per_query if m in reference.per_query]
    chosen = list(metrics) if metrics is not None else shared
    missing = [m for m in chosen if m not in shared]
    if missing or not chosen:
        raise SpecError(
            f"metric(s) {', '.join(missing) or '(none)'} not scored by both runs; both scored: {', '.join(shared)}"
        )
    qids, a, b = paired_scores(candidate.per_query, reference.per_query, chosen)
    comparisons = compare(
        a,
        b,
        n_resamples=N_RESAMPLES if n_resamples is None else n_resamples,
        seed=seed,
        confidence=CONFIDENCE if confidence is None else confidence,
    )
    deltas = {
        m: MetricDelta(m, float(a[:, j].mean()), float(b[:, j].mean()), comparisons[j]) for j, m in enumerate(chosen)
    }
    return RunComparison(deltas, len(qids), a_id.sha256, candidate.contract.diff(reference.contract))
