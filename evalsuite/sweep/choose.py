"""Which configuration to ship: the cheapest sweep cell whose quality is non-inferior to the base.

``--choose "ndcg@10:non_inferior=0.01" --cost bytes|latency|dim`` judges every cell that differs from the base with
the release gates' non-inferiority rule (:func:`evalsuite.scoring.stats.non_inferiority`: pass when the one-sided
lower bound of ``cell - base`` is at least ``-margin``, fail when the upper bound is below it, otherwise
inconclusive, with the queries that would decide it), at a confidence corrected for the number of cells considered
(Bonferroni: each one-sided bound at ``1 - 0.05 / m``), and names the cheapest cell that passes (ties: the higher
value). None may pass: then the base stays, and the inconclusive cells are listed. The Pareto front of quality
against cost (no other point as cheap and at least as good, one of them strictly) is marked.

Pure over per-query scores and costs (:func:`choose`); :func:`evalsuite.sweep.ship.choose_cells` reads them from a
sweep.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..base.errors import SpecError
from ..base.verdict import Verdict

COSTS = ("bytes", "latency", "dim")
COST_UNITS = {"bytes": "B/vector", "latency": "ms/query (p50)", "dim": "dimensions"}
ALPHA = 0.05
_EXPR = re.compile(r"^\s*(?P<metric>[^:\s]+)\s*:\s*non_inferior\s*=\s*(?P<margin>[0-9.eE+-]+)\s*$")
EXAMPLE = "ndcg@10:non_inferior=0.01"


@dataclass(frozen=True)
class ChooseRule:
    metric: str
    margin: float
    cost: str = "bytes"

    @property
    def text(self) -> str:
        return f"{self.metric}:non_inferior={self.margin:g}"


def parse_choose(text: str, cost: str = "bytes") -> ChooseRule:
    """``METRIC:non_inferior=MARGIN`` (the release gates' non-inferiority kind) and the cost to minimise."""
    from ..scoring.metrics import parse_metric

    m = _EXPR.match(text)
    if not m:
        raise SpecError(f"--choose {text!r}: write METRIC:non_inferior=MARGIN, e.g. {EXAMPLE}")
    try:
        margin = float(m.group("margin"))
    except ValueError:
        raise SpecError(f"--choose {text!r}: the margin {m.group('margin')!r} is not a number") from None
    if not margin >= 0:
        raise SpecError(f"--choose {text!r}: the margin must be >= 0 (the drop allowed against the base)")
    if cost not in COSTS:
        raise SpecError(f"--cost {cost!r}: choose one of {', '.join(COSTS)}")
    return ChooseRule(parse_metric(m.group("metric")), margin, cost)


@dataclass(frozen=True)
class Candidate:
    """One cell offered: its name, its per-query scores on the rule's metric (aligned with the base's) and cost."""

    name: str
    scores: np.ndarray
    cost: float | None  # None: not measured for this cell (e.g. latency without an index)


@dataclass(frozen=True)
class Judged:
    name: str
    value: float
    cost: float | None
    decision: Verdict | None  # None: not judged (its cost was not measured)
    delta: float
    lower_bound: float
    upper_bound: float
    queries_needed: int | None
    pareto: bool

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "value": self.value,
            "cost": self.cost,
            "decision": self.decision,
            "delta": self.delta,
            "lower_bound": self.lower_bound,
            "upper_bound": self.upper_bound,
            "queries_needed": self.queries_needed,
            "pareto": self.pareto,
        }


@dataclass(frozen=True)
class Choice:
    rule: ChooseRule
    base_value: float
    base_cost: float | None
    confidence: float  # of each one-sided bound, corrected for the cells considered
    cells: tuple[Judged, ...]
    chosen: str | None  # None: no cell is non-inferior; keep the base
    base_pareto: bool = True
    base_name: str = "base"  # what the cells are judged against (the budget's: the reference)

    @property
    def chosen_cell(self) -> Judged | None:
        return next((c for c in self.cells if c.name == self.chosen), None)

    def sentence(self) -> str:
        r, unit = self.rule, COST_UNITS[self.rule.cost]
        considered = sum(1 for c in self.cells if c.decision is not None)
        how = (
            f"non-inferior within {r.margin:g} {r.metric} at one-sided {self.confidence:.2%} confidence (95% "
            f"Bonferroni-corrected over the {considered} cells considered)"
        )
        c = self.chosen_cell
        if c is not None:
            return (
                f"ship {c.name}: the cheapest cell {how}; cost {_num(c.cost)} {unit} ({self.base_name} {_num(self.base_cost)}), "
                f"{r.metric} {c.value:.4f} ({self.base_name} {self.base_value:.4f}, delta {c.delta:+.4f}, lower bound "
                f"{c.lower_bound:+.4f} >= -{r.margin:g})"
            )
        undecided = [x for x in self.cells if x.decision == "inconclusive"]
        text = f"no cell is {how}: keep the {self.base_name}"
        if undecided:
            text += "; inconclusive: " + ", ".join(
                f"{x.name} (lower bound {x.lower_bound:+.4f}; "
                + (f"about {x.queries_needed} queries would decide it)" if x.queries_needed else "undecidable)")
                for x in undecided
            )
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule.text,
            "cost": self.rule.cost,
            "cost_unit": COST_UNITS[self.rule.cost],
            "confidence": self.confidence,
            "correction": "Bonferroni over the cells considered",
            "base": {
                "name": self.base_name,
                "value": self.base_value,
                "cost": self.base_cost,
                "pareto": self.base_pareto,
            },
            "chosen": self.chosen,
            "sentence": self.sentence(),
            "cells": [c.to_dict() for c in self.cells],
        }


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:g}"


def pareto_front(points: Sequence[tuple[float | None, float]]) -> list[bool]:
    """Per (cost, quality) point: no other point costs at most as much and is at least as good, one strictly."""
    out = []
    for i, (ci, qi) in enumerate(points):
        if ci is None:
            out.append(False)
            continue
        dominated = any(
            cj is not None and cj <= ci and qj >= qi and (cj < ci or qj > qi)
            for j, (cj, qj) in enumerate(points)
            if j != i
        )
        out.append(not dominated)
    return out


def choose(
    rule: ChooseRule,
    base: np.ndarray,
    base_cost: float | None,
    cells: Sequence[Candidate],
    *,
    seed: int = 0,
    base_name: str = "base",
) -> Choice:
    """Judge every candidate against ``base`` (per-query scores on the rule's metric) and pick the cheapest pass."""
    from ..scoring.stats import non_inferiority

    judged_ones = [c for c in cells if c.cost is not None]
    m = max(1, len(judged_ones))
    confidence = 1 - ALPHA / m
    front = pareto_front([(base_cost, float(np.mean(base))), *((c.cost, float(np.mean(c.scores))) for c in cells)])
    out = []
    for c, on_front in zip(cells, front[1:], strict=True):
        ni = non_inferiority(c.scores, base, margin=rule.margin, confidence=confidence, seed=seed)[0]
        out.append(
            Judged(
                c.name,
                float(np.mean(c.scores)),
                c.cost,
                ni.decision if c.cost is not None else None,
                ni.ci.delta,
                ni.ci.lower_bound,
                ni.ci.upper_bound,
                ni.queries_needed,
                on_front,
            )
        )
    passing = [j for j in out if j.decision == "pass"]
    best = min(passing, key=lambda j: (j.cost, -j.value)) if passing else None
    chosen = best.name if best else None
    return Choice(rule, float(np.mean(base)), base_cost, confidence, tuple(out), chosen, front[0], base_name)
