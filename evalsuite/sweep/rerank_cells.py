"""Reranker sweeps (``evalsuite rerank-sweep``): one variable at a time against the base (first stage +
reranker contract + depth), over the axes of the one registry (:mod:`.registry`, ``stage`` of each axis).

Work is shared:

* one first stage serves the base and every depth cell, and the base reranker scores the pairs of the
  deepest depth once (a shallower depth reuses them);
* a reranker cell (``rerank_max_length``, ``rerank_dtype``) rescores the base first stage's pairs at the
  base depth;
* the first-stage cells (pooling, dim, prefixes, index, ...) run as one embedding sweep (:func:`.run_sweep`:
  shared forward passes), and the base reranker scores only pairs it has not seen.

Every cell reports both stages and the gain, and its reranked metrics against the base cell's with the
uncertainty of the difference (:mod:`evalsuite.rerank.gain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..rerank.gain import StageDelta, stage_deltas
from .axes import Axis, parse_vary
from .axis_kinds import ALL_STAGES, Setting
from .plan import BASE_NAME, plan_cells

if TYPE_CHECKING:
    from ..rerank.run import RerankSpec
    from ..rerank.twostage import TwoStageResult
    from ..run.result import Result
    from ..run.spec import RunSpec


@dataclass(frozen=True)
class RerankCell:
    """One cell: the axis it varies (None for the base), its value's label and the value it applies."""

    axis: Axis | None = None
    label: str = ""
    value: Setting = None

    @property
    def name(self) -> str:
        return BASE_NAME if self.axis is None else f"{self.axis.name}={self.label}"


@dataclass
class RerankSweepRow:
    cell: RerankCell
    result: TwoStageResult
    vs_base: list[StageDelta]  # this cell's reranked metrics minus the base cell's

    def to_dict(self) -> dict[str, object]:
        return {
            "cell": self.cell.name,
            "axis": self.cell.axis.name if self.cell.axis else None,
            "value": self.cell.label if self.cell.axis else None,
            "depth": self.result.depth,
            "first_stage": {k: round(v, 6) for k, v in self.result.first.metrics.items()},
            "reranked": {k: round(v, 6) for k, v in self.result.metrics.items()},
            "gain": [d.to_dict() for d in self.result.deltas],
            "vs_base": [d.to_dict() for d in self.vs_base],
            "reranker_contract": self.result.contract.to_dict(),
            "first_stage_contract": self.result.first.contract.to_dict(),
        }


def parse_rerank_vary(items: Sequence[str]) -> list[Axis]:
    """``--vary`` items of a reranker sweep: any axis of the registry (first stage, reranker, depth)."""
    if not items:
        raise SpecError("rerank-sweep needs at least one --vary AXIS=V1,V2 (e.g. --vary depth=10,50,100)")
    return parse_vary(items, ALL_STAGES)


def plan(axes: Sequence[Axis], base_depth: int) -> list[RerankCell]:
    """The base cell, then one cell per (axis, value), in axis order; a depth equal to the base's is the base."""
    cells = [RerankCell()]
    for axis in axes:
        for v in axis.values:
            if axis.declaration.stage != "depth" or v.value != base_depth:
                cells.append(RerankCell(axis, v.label, v.value))
    return cells


def _depth(cell: RerankCell) -> int:
    if not isinstance(cell.value, int):
        raise TypeError(f"{cell.name}: a depth must be an integer")
    return cell.value


def run_rerank_sweep(spec: RunSpec, rspec: RerankSpec, axes: Sequence[Axis]) -> list[RerankSweepRow]:
    from ..rerank.run import first_stage_spec, make_scorer, resolve_reranker
    from ..rerank.twostage import MemoScorer, evaluate_depths
    from ..run.pipeline import prepare, run
    from .execute import run_sweep

    cells = plan(axes, rspec.depth)
    depths = sorted({rspec.depth, *(_depth(c) for c in cells if c.axis and c.axis.declaration.stage == "depth")})
    info, contract = resolve_reranker(rspec)  # pinning errors before any encoding
    prepared = prepare(first_stage_spec(spec, depths))
    first_axes = [a for a in axes if a.declaration.stage == "first_stage"]
    firsts: dict[str, Result] = {}
    if first_axes:  # every first-stage cell in one embedding sweep (shared forward passes)
        swept = run_sweep(prepared, plan_cells(prepared.contract, first_axes, info=prepared.model))
        first = swept.base
        firsts = {c.name: c.result for c in swept.cells}
    else:
        first = run(prepared.spec, prepared)
    metrics = list(first.metrics)
    base_scorer = MemoScorer(make_scorer(info, contract, spec, rspec).score)
    by_depth = {r.depth: r for r in evaluate_depths(first, contract, base_scorer, depths, metrics)}
    results: dict[str, TwoStageResult] = {}
    for cell in cells:
        stage = cell.axis.declaration.stage if cell.axis else None
        if cell.axis is None or stage == "depth":
            results[cell.name] = by_depth[_depth(cell) if cell.axis else rspec.depth]
        elif stage == "reranker":
            changed = cell.axis.declaration.apply_reranker(contract, cell.value)
            scorer = make_scorer(info, changed, spec, rspec).score
            results[cell.name] = evaluate_depths(first, changed, scorer, [rspec.depth], metrics)[0]
        else:
            results[cell.name] = evaluate_depths(firsts[cell.name], contract, base_scorer, [rspec.depth], metrics)[0]
    base = results[BASE_NAME]
    return [
        RerankSweepRow(c, results[c.name], stage_deltas(base.per_query, results[c.name].per_query, metrics))
        for c in cells
    ]
