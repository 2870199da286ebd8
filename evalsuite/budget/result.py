"""What a loss budget found: the reference and production, each stage's charge (or why it was skipped), the
attribution rule, and the answer in words (:meth:`BudgetResult.sentence`). ``budget.json`` is :meth:`to_dict`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .attribution import Charge

if TYPE_CHECKING:
    import numpy as np

    from ..retrieval.search import Ranking
    from ..sweep.choose import Choice
    from .config import Config

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class StageEntry:
    """One stage of the budget: skipped (and why), or the metrics after it and its charges."""

    name: str
    description: str  # as the sentence names it
    changes: str
    gain: bool
    skipped: str | None = None
    config: Config | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)  # after the stage
    delta: Mapping[str, Charge] = field(default_factory=dict)  # sequential: against the stage before
    shapley: Mapping[str, Charge] = field(default_factory=dict)  # Shapley: averaged over every order
    cost: Mapping[str, object] = field(default_factory=dict)
    measured: Mapping[str, object] = field(default_factory=dict)
    knob: str = ""
    scores: np.ndarray | None = field(default=None, repr=False, compare=False)  # per query after the stage

    def charge(self, attribution: str) -> Mapping[str, Charge]:
        return self.shapley if attribution == "shapley" and self.shapley else self.delta

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"name": self.name, "description": self.description, "changes": self.changes}
        d["skipped"] = self.skipped
        if self.skipped is None:
            d.update(
                config=self.config.to_dict() if self.config is not None else None,
                metrics=dict(self.metrics),
                delta={m: c.to_dict() for m, c in self.delta.items()},
                cost=dict(self.cost),
                measured=dict(self.measured),
            )
            if self.shapley:
                d["shapley"] = {m: c.to_dict() for m, c in self.shapley.items()}
        return d


@dataclass(frozen=True)
class BudgetResult:
    metrics: tuple[str, ...]
    reference: Mapping[str, Any]  # contract, config, metrics, cost
    production: Mapping[str, Any]
    total: Mapping[str, Charge]
    stages: tuple[StageEntry, ...]
    attribution: str
    dataset: Mapping[str, object]
    query_ids: tuple[str, ...]
    disagreements: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    configurations_computed: int = 0
    reference_scores: np.ndarray | None = field(default=None, repr=False, compare=False)
    rankings: Mapping[str, Ranking] = field(default_factory=dict, repr=False, compare=False)  # reference, stages
    choice: Choice | None = None  # --choose over alternative settings of one stage (choose.py)

    @property
    def primary(self) -> str:
        return self.metrics[0]

    @property
    def measured(self) -> tuple[StageEntry, ...]:
        return tuple(s for s in self.stages if s.skipped is None)

    def stages_scores(self) -> list[np.ndarray]:
        """Per-query scores of the reference and after each measured stage (the last one is production)."""
        return [s for s in [self.reference_scores, *(e.scores for e in self.measured)] if s is not None]

    def stage(self, name: str) -> StageEntry:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def before(self, name: str) -> tuple[Mapping[str, float], np.ndarray | None]:
        """The metrics and per-query scores the stage ``name`` starts from (the last measured stage before it)."""
        metrics: Mapping[str, float] = self.reference["metrics"]
        scores = self.reference_scores
        for s in self.stages:
            if s.name == name:
                break
            if s.skipped is None:
                metrics, scores = s.metrics, s.scores
        return metrics, scores

    def sentence(self) -> str:
        """The answer in words, on the primary metric."""
        m = self.primary
        t = self.total[m]
        ref = float(self.reference["metrics"][m])
        prod = float(self.production["metrics"][m])
        ci = f"95% CI {t.low:+.4f} .. {t.high:+.4f}"
        if not t.measurable:
            head = f"production is within noise of the reference on {m} ({ref:.4f} -> {prod:.4f}, delta {t.value:+.4f}, {ci})"
        else:
            verb = "loses" if t.value < 0 else "gains"
            head = f"production {verb} {abs(t.value):.4f} {m} against the reference ({ref:.4f} -> {prod:.4f}, {ci})"
        charged = [(s, s.charge(self.attribution)[m]) for s in self.measured]
        losses = sorted(((s, c) for s, c in charged if c.measurable and c.value < 0), key=lambda sc: sc[1].value)
        gains = sorted(((s, c) for s, c in charged if c.measurable and c.value > 0), key=lambda sc: -sc[1].value)
        quiet = [(s, c) for s, c in charged if not c.measurable]
        parts = []
        if losses:
            of_it = " of it" if t.value < 0 and t.measurable else " lost"
            parts.append(
                ", ".join(
                    f"{abs(c.value):.4f}{of_it if i == 0 else ''} in {_named(s)}" for i, (s, c) in enumerate(losses)
                )
            )
        if gains:
            parts.append(", ".join(f"+{c.value:.4f} from {_named(s)}" for s, c in gains))
        if quiet:
            parts.append(
                "nothing measurable in "
                + ", ".join(f"{s.description} (CI {c.low:+.4f} .. {c.high:+.4f})" for s, c in quiet)
            )
        rule = "" if self.attribution == "sequential" else " (Shapley attribution)"
        fix = f"fix first: {losses[0][0].knob}" if losses else "no stage loses measurably at this number of queries"
        body = "; ".join([head, *parts, fix])
        return body[0].upper() + body[1:] + rule + "."

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": SCHEMA_VERSION,
            "family": "budget",
            "sentence": self.sentence(),
            "metrics": list(self.metrics),
            "dataset": dict(self.dataset),
            "n_queries": len(self.query_ids),
            "reference": dict(self.reference),
            "production": dict(self.production),
            "total": {m: c.to_dict() for m, c in self.total.items()},
            "attribution": self.attribution,
            "attribution_note": ATTRIBUTION_NOTES[self.attribution],
            "stages": [s.to_dict() for s in self.stages],
            "disagreements": list(self.disagreements),
            "notes": list(self.notes),
            "configurations_computed": self.configurations_computed,
            **({"choice": self.choice.to_dict()} if self.choice is not None else {}),
        }


ATTRIBUTION_NOTES = {
    "sequential": (
        "each stage is charged the paired difference to the stage before it, in the order the pipeline applies "
        "them; stages that interact would be charged differently in another order (--attribution shapley averages "
        "every order)"
    ),
    "shapley": (
        "each stage is charged its marginal effect averaged over every order of the declared stages (Shapley); the "
        "sequential charges stay under 'delta'"
    ),
}


def _named(s: StageEntry) -> str:
    recall = s.measured.get("recall@10_vs_exact") if s.name == "ann" else None
    return s.description + (f" (recall@10 vs exact {recall:.2f})" if isinstance(recall, float) else "")
