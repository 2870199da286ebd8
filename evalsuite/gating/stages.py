"""Gates on either stage of a two-stage session: a first stage, then a cross-encoder reranks its top N.

A gate names the stage it judges inside the brackets after the metric, beside an optional slice::

    ndcg@10[stage=reranked]>=0.4                          the reranked stage's floor
    ndcg@10[stage=reranked,topic=finance]:max_drop=0.02   its finance queries against the baseline's reranked stage
    ndcg@10[stage=first]>=0.3                             the first stage: the default, written ndcg@10>=0.3

``min_gain`` judges the reranked stage against the candidate's own first stage and names no stage.

This module holds the stage selector's syntax (:func:`split_stage`) and the reranked stage of one side as
a plain value (:class:`RerankedStage`): what a baseline file stores and what a session shares across
workers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ..base.errors import ContractError, SpecError
from ..rerank.gates import STAGES, Stage
from .gates import Against, Gate, Scores

if TYPE_CHECKING:
    from ..rerank.contract import RerankerContract
    from ..rerank.gain import StageDelta
    from ..rerank.twostage import TwoStageResult
    from ..slicing import SliceIndex

_STAGE = re.compile(r"^\s*stage\s*=\s*(?P<value>.*?)\s*$")
DECIMALS = 6  # a baseline file holds scores rounded so, as `Result.to_dict` rounds the first stage's


def split_stage(inside: str, expr: str) -> tuple[Stage | None, str]:
    """The brackets' ``stage=...`` part and the rest (the slice): ``stage=reranked,topic=x`` -> (reranked,
    ``topic=x``). The stage may stand before or after the slice; a slice value keeps its commas."""
    parts = inside.split(",")
    named = [m.group("value") for m in map(_STAGE.match, parts) if m]
    if not named:
        return None, inside
    if len(named) > 1:
        raise SpecError(f"gate {expr!r}: name one stage, e.g. ndcg@10[stage=reranked]>=0.4")
    if named[0] not in STAGES:
        raise SpecError(
            f"gate {expr!r}: stage {named[0]!r} is not one of {', '.join(STAGES)}; e.g. ndcg@10[stage=reranked]>=0.4"
        )
    return cast(Stage, named[0]), ",".join(p for p in parts if not _STAGE.match(p))


def _rounded(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    return {m: {q: round(s, DECIMALS) for q, s in pq.items()} for m, pq in per_query.items()}


@dataclass(frozen=True)
class RerankedStage:
    """One side's reranked stage: the reranker contract and depth that made it, its aggregate and per-query
    metrics, and (for the candidate) the gain over its first stage with the CI of each metric."""

    depth: int
    reranker: Mapping[str, object]  # the reranker contract, as `RerankerContract.to_dict` writes it
    metrics: Mapping[str, float]
    per_query: Mapping[str, Mapping[str, float]]
    gain: tuple[StageDelta, ...] = field(default=())

    @classmethod
    def from_two_stage(cls, result: TwoStageResult) -> RerankedStage:
        return cls(
            result.depth,
            result.contract.to_dict(),
            dict(result.metrics),
            {m: dict(pq) for m, pq in result.per_query.items()},
            tuple(result.deltas),
        )

    def scores(self, label: str, slices: SliceIndex | None = None) -> Scores:
        """This stage as one side of a gate (the candidate's side carries the slice index)."""
        return Scores(label, self.metrics, self.per_query, slices)

    def to_dict(self) -> dict[str, object]:
        """What a baseline file holds under ``reranked`` (scores rounded as the first stage's are)."""
        return {
            "depth": self.depth,
            "reranker": dict(self.reranker),
            "metrics": {m: round(v, DECIMALS) for m, v in self.metrics.items()},
            "per_query": _rounded(self.per_query),
        }

    def report(self) -> dict[str, object]:
        """This depth's entry under ``reranked`` in results.json: the file's fields and the gain over the first stage
        (the keys of ``TwoStageResult.reranked_dict`` but its timing)."""
        return {**self.to_dict(), "gain": [d.to_dict() for d in self.gain]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RerankedStage:
        """Raises KeyError / TypeError / AttributeError on a malformed entry (the baseline loader names the file)."""
        return cls(
            int(data["depth"]),
            dict(data["reranker"]),
            {m: float(v) for m, v in data["metrics"].items()},
            {m: {q: float(s) for q, s in pq.items()} for m, pq in data["per_query"].items()},
        )

    def problems(self, contract: RerankerContract, depth: int, label: str = "baseline") -> list[str]:
        """Why a reranked stage made with ``contract`` at ``depth`` is not comparable with this one (empty: it is)."""
        from ..rerank.contract import RerankerContract

        try:
            mine = RerankerContract.from_dict(self.reranker, source=f"the {label}'s reranker contract")
        except (ContractError, SpecError, TypeError) as exc:
            return [f"reranker contract: the {label}'s cannot be read ({exc})"]
        out = [f"reranker {k}: {label} {a!r}, candidate {b!r}" for k, (a, b) in mine.diff(contract).items()]
        if self.depth != depth:
            out.append(f"rerank depth: {label} {self.depth}, candidate {depth}")
        return out


@dataclass(frozen=True)
class Stages:
    """One side's scores at each stage it has (``reranked`` None: no reranker ran, or a baseline written
    without one)."""

    first: Scores
    reranked: Scores | None = None

    def at(self, stage: Stage) -> Scores | None:
        return self.first if stage == "first" else self.reranked


def gate_sides(
    gate: Gate, against: Against, candidate: Stages, reference: Stages | None
) -> tuple[Scores, Scores | None]:
    """The two sides a gate judges: the candidate at the gate's stage, paired with the reference at the same
    stage (``against`` "reference"), with the candidate's own first stage (the reranker's gain) or with
    nothing (a floor). Raises SpecError / ContractError when the stage is missing on either side."""
    cand = candidate.at(gate.stage)
    if cand is None:
        raise SpecError(f"gate {gate.expr!r} judges the reranked stage, but no reranker ran; pass --reranker DIR")
    if against is None:
        return cand, None
    if against == "first stage":
        return cand, candidate.first
    if reference is None:
        return cand, None  # the evidence says what to pass
    other = reference.at(gate.stage)
    if other is None:
        raise ContractError(
            f"gate {gate.expr!r}: the {reference.first.label} holds no reranked stage; regenerate the baseline "
            "with --update-baseline --reranker DIR"
        )
    return cand, other


def side_labels(against: Against, reference_label: str) -> tuple[str, str]:
    """How messages name the (reference, candidate) sides of a gate."""
    return ("first stage", "reranked") if against == "first stage" else (reference_label, "candidate")
