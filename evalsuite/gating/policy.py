"""Session policy, decided before anything is encoded: which gates each dataset runs, which side
they compare with, which gates apply to sweep cells, and the notes that say so.

Pure: it reads the plan and the metric names of the loaded baselines, nothing else, so it is
tested without a model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..base.errors import SpecError
from .gates import Gate
from .kinds import default_gates
from .plan import DatasetPlan, SessionPlan

CompareWith = Literal["baseline", "reference"]


@dataclass(frozen=True)
class DatasetPolicy:
    name: str
    compare_with: CompareWith | None  # None: no baseline or reference run (floors only, or writing a baseline)
    gates: tuple[Gate, ...]  # one item each
    sweep_gates: tuple[Gate, ...]  # every sweep cell against the base; empty when no sweep is asked
    notes: tuple[str, ...]


@dataclass(frozen=True)
class SessionPolicy:
    datasets: tuple[DatasetPolicy, ...]

    def dataset(self, name: str) -> DatasetPolicy:
        return next(d for d in self.datasets if d.name == name)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(n for d in self.datasets for n in d.notes)


def compare_with(plan: SessionPlan, dp: DatasetPlan) -> CompareWith | None:
    if plan.has_reference_run:
        return "reference"
    if dp.baseline is not None and not plan.update_baseline:
        return "baseline"
    return None


def dataset_policy(plan: SessionPlan, dp: DatasetPlan, baseline_metrics: Sequence[str] | None) -> DatasetPolicy:
    """``baseline_metrics``: the metrics the dataset's baseline file holds (None when it has none)."""
    side = compare_with(plan, dp)
    update = plan.update_baseline
    notes: list[str] = []
    gates = dp.gates
    if gates and dp.spec.model_rev is None and not update:
        notes.append(
            f"{dp.name}: the model revision is not pinned (--model-rev): the gates judge whatever "
            f"{dp.spec.model or 'the bundled model'} holds now; 'evalsuite model-rev' prints the revision to pin"
        )
    if plan.history is not None and side == "baseline" and not update:
        notes.append(
            f"{dp.name}: with a release history the baseline is the previous release: the contract item compares "
            "every field but the model and tokenizer revisions with it"
        )
    if dp.replaced_gates:
        notes.append(
            f"{dp.name}: --gate replaces the spec file's gates; not judged: "
            + ", ".join(g.expr for g in dp.replaced_gates)
            + " (repeat them with --gate to keep them)"
        )
    if not gates and side is not None and not update:
        known = list(baseline_metrics) if side == "baseline" and baseline_metrics is not None else list(dp.spec.metrics)
        gates = default_gates([m for m in known if m in dp.spec.metrics] or list(dp.spec.metrics))
        notes.append(f"{dp.name}: no gates given; default gates applied: " + ", ".join(g.expr for g in gates))
    relative = [g.expr for g in gates if g.needs_reference]
    if relative and side is None and not update:
        # a sweep cell has no reranked stage: such a gate needs a reference even in a sweep
        unjudged = [g.expr for g in gates if g.needs_reference and g.needs_reranker] if dp.sweep else relative
        if unjudged:
            raise SpecError(
                f"{dp.name}: gate(s) {', '.join(unjudged)} compare against a reference; "
                "pass --baseline FILE or --reference-rev REV, or use a floor (METRIC>=VALUE)"
            )
        notes.append(f"{dp.name}: no baseline; gate(s) {', '.join(relative)} apply to sweep cells only")
    item_gates = tuple(g for g in gates if side is not None or update or not g.needs_reference)
    sweep_gates: tuple[Gate, ...] = ()
    if dp.sweep:
        first = tuple(g for g in gates if not g.needs_reranker)
        sweep_gates = first or default_gates(dp.spec.metrics)
        staged = [g.expr for g in gates if g.needs_reranker]
        if staged:
            notes.append(
                f"{dp.name}: gate(s) {', '.join(staged)} judge the reranked stage, not sweep cells (a first stage only)"
            )
        if not first:
            notes.append(
                f"{dp.name}: sweep cells gated against the base with default gates: "
                + ", ".join(g.expr for g in sweep_gates)
            )
    return DatasetPolicy(dp.name, side, item_gates, sweep_gates, tuple(notes))


def session_policy(plan: SessionPlan, baseline_metrics: Mapping[str, Sequence[str]]) -> SessionPolicy:
    """The policy of every dataset; ``baseline_metrics`` maps a dataset name to its baseline's metrics.
    Raises SpecError for a gate that needs a reference the session does not have."""
    return SessionPolicy(tuple(dataset_policy(plan, dp, baseline_metrics.get(dp.name)) for dp in plan.datasets))
