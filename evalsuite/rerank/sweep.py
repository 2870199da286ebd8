"""Reranker sweeps: one variable at a time against the base (first stage + reranker contract + depth).

Axes (:data:`AXES`, one declaration each): the rerank depth N, the reranker's pair max length and dtype, and
the first-stage contract underneath (pooling, dim, max length, dtype, prefixes). Work is shared:

* one first stage serves the base and every depth cell, and the base reranker scores the pairs of the
  deepest depth once (a shallower depth reuses them);
* a reranker cell (max length, dtype) rescored the base first stage's pairs at the base depth;
* a first-stage cell runs its own first stage; the base reranker scores only pairs it has not seen.

Every cell reports both stages and the gain, and its reranked metrics against the base cell's with the
uncertainty of the difference (:mod:`.gain`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contract import DTYPES, POOLINGS
from ..errors import SpecError
from .gain import StageDelta, stage_deltas

if TYPE_CHECKING:
    from ..spec import RunSpec
    from .run import RerankSpec
    from .twostage import TwoStageResult


def _int(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise SpecError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise SpecError(f"{value} is too small; it must be >= {minimum}")
        return value

    return parse


def _among(choices: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in choices:
            raise SpecError(f"{text!r} is not one of {', '.join(choices)}")
        return text

    return parse


@dataclass(frozen=True)
class RerankAxis:
    name: str
    stage: str  # "depth" | "reranker" | "first"
    field: str  # the RerankerContract or RunSpec field it sets
    parse: Callable[[str], Any]
    help: str


AXES: dict[str, RerankAxis] = {
    a.name: a
    for a in (
        RerankAxis("depth", "depth", "depth", _int(1), "documents per query the reranker reorders"),
        RerankAxis("rerank_max_length", "reranker", "max_length", _int(4), "max tokens per pair"),
        RerankAxis("rerank_dtype", "reranker", "dtype", _among(DTYPES), "reranker forward-pass dtype"),
        RerankAxis("pooling", "first", "pooling", _among(POOLINGS), "first-stage pooling"),
        RerankAxis("dim", "first", "dim", _int(1), "first-stage output dimension"),
        RerankAxis("max_length", "first", "max_length", _int(2), "first-stage max tokens per text"),
        RerankAxis("dtype", "first", "dtype", _among(DTYPES), "first-stage dtype"),
        RerankAxis("query_prefix", "first", "query_prefix", str, "first-stage query prefix"),
        RerankAxis("doc_prefix", "first", "doc_prefix", str, "first-stage document prefix"),
    )
}


def parse_vary(items: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """``["depth=10,50", "rerank_dtype=bfloat16"]`` -> {axis: values}; each axis once."""
    out: dict[str, tuple[Any, ...]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or name not in AXES:
            raise SpecError(f"--vary {item!r}: expected AXIS=V1,V2 with AXIS one of {', '.join(AXES)}")
        if name in out:
            raise SpecError(f"--vary {name} is given twice; list every value in one --vary")
        try:
            parsed = tuple(dict.fromkeys(AXES[name].parse(v.strip()) for v in values.split(",") if v.strip()))
        except SpecError as exc:
            raise SpecError(f"--vary {item!r}: {exc}") from None
        if not parsed:
            raise SpecError(f"--vary {item!r}: no values")
        out[name] = parsed
    return out


@dataclass(frozen=True)
class RerankCell:
    axis: str | None
    value: Any = None

    @property
    def name(self) -> str:
        return "base" if self.axis is None else f"{self.axis}={self.value}"


@dataclass
class RerankSweepRow:
    cell: RerankCell
    result: TwoStageResult
    vs_base: list[StageDelta]  # this cell's reranked metrics minus the base cell's

    def to_dict(self) -> dict[str, Any]:
        return {
            "cell": self.cell.name,
            "axis": self.cell.axis,
            "value": self.cell.value,
            "depth": self.result.depth,
            "first_stage": {k: round(v, 6) for k, v in self.result.first.metrics.items()},
            "reranked": {k: round(v, 6) for k, v in self.result.metrics.items()},
            "gain": [d.to_dict() for d in self.result.deltas],
            "vs_base": [d.to_dict() for d in self.vs_base],
            "reranker_contract": self.result.contract.to_dict(),
            "first_stage_contract": self.result.first.contract.to_dict(),
        }


class MemoScorer:
    """A pair scorer that scores each distinct (query, document) text pair once; counts what it scored."""

    def __init__(self, score: Callable[[Sequence[tuple[str, str]], Sequence[str]], np.ndarray]) -> None:
        self._score = score
        self.memo: dict[tuple[str, str], float] = {}
        self.scored = 0

    def __call__(self, pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> np.ndarray:
        todo = [i for i, p in enumerate(pairs) if p not in self.memo]
        if todo:
            fresh = self._score([pairs[i] for i in todo], [labels[i] for i in todo])
            self.scored += len(todo)
            for i, s in zip(todo, fresh.tolist(), strict=True):
                self.memo[pairs[i]] = float(s)
        return np.array([self.memo[p] for p in pairs], dtype=np.float64)


def plan(vary: dict[str, tuple[Any, ...]], base_spec: RunSpec, rspec: RerankSpec) -> list[RerankCell]:
    """The base cell, then one cell per (axis, value) that differs from the base."""
    cells = [RerankCell(None)]
    for axis, values in vary.items():
        a = AXES[axis]
        base = rspec.depth if a.stage == "depth" else getattr(rspec if a.stage == "reranker" else base_spec, a.field)
        cells += [RerankCell(axis, v) for v in values if v != base]
    return cells


def run_rerank_sweep(spec: RunSpec, rspec: RerankSpec, vary: dict[str, tuple[Any, ...]]) -> list[RerankSweepRow]:
    from .run import make_scorer, resolve_reranker, run_first_stage
    from .twostage import evaluate_depths

    cells = plan(vary, spec, rspec)
    depths = sorted({rspec.depth, *(c.value for c in cells if c.axis == "depth")})
    info, contract = resolve_reranker(rspec)
    _, first = run_first_stage(spec, depths)
    metrics = list(first.metrics)
    base_scorer = MemoScorer(make_scorer(info, contract, spec, rspec).score)
    by_depth = {r.depth: r for r in evaluate_depths(first, contract, base_scorer, depths, metrics)}
    results: dict[str, TwoStageResult] = {}
    for cell in cells:
        a = AXES.get(cell.axis or "")
        if a is None or a.stage == "depth":
            results[cell.name] = by_depth[cell.value if a else rspec.depth]
        elif a.stage == "reranker":
            changed = contract.replace(**{a.field: cell.value})
            scorer = make_scorer(info, changed, spec, rspec).score
            results[cell.name] = evaluate_depths(first, changed, scorer, [rspec.depth], metrics)[0]
        else:
            _, other = run_first_stage(spec.replace(**{a.field: cell.value}), [rspec.depth])
            results[cell.name] = evaluate_depths(other, contract, base_scorer, [rspec.depth], metrics)[0]
    base = results["base"]
    return [
        RerankSweepRow(c, results[c.name], stage_deltas(base.per_query, results[c.name].per_query, metrics))
        for c in cells
    ]
