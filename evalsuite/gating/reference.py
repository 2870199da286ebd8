"""What a candidate is compared with: a committed baseline file or a reference revision's result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .baseline import REVISION_FIELDS, Baseline, comparability
from .gates import Scores

if TYPE_CHECKING:
    from ..contract import Contract
    from ..run.result import Result

ReferenceKind = Literal["baseline", "reference"]
BASELINE_DECIMALS = 6  # a baseline file holds scores rounded so (``Result.to_dict``)


@dataclass(frozen=True)
class Reference:
    kind: ReferenceKind
    revision: str | None  # the reference run's model revision; None for a baseline file
    scores: Scores
    contract: Contract
    dataset_sha256: str
    ignore: tuple[str, ...]  # contract fields that may differ (a reference run is another revision)
    path: Path | None = None  # the baseline file

    @property
    def label(self) -> str:
        """``baseline``, or ``reference <revision[:12]>``: how reports and messages name this side."""
        return self.kind if self.revision is None else f"{self.kind} {self.revision[:12]}"

    @classmethod
    def from_baseline(cls, baseline: Baseline) -> Reference:
        return cls("baseline", None, baseline.scores(), baseline.contract, baseline.dataset_sha256, (), baseline.path)

    @classmethod
    def from_result(cls, result: Result) -> Reference:
        return cls(
            "reference",
            result.contract.model_revision,
            Scores("reference", result.metrics, result.per_query),
            result.contract,
            result.dataset.identity.sha256,
            REVISION_FIELDS,
        )

    def comparable(self, candidate: Scores) -> Scores:
        """The candidate at this side's precision: against a baseline file, its scores rounded as the file's
        are, so identical vectors give identical per-query scores (not rounding noise a test could flag)."""
        if self.kind != "baseline":
            return candidate
        return Scores(
            candidate.label,
            {m: round(v, BASELINE_DECIMALS) for m, v in candidate.metrics.items()},
            {m: {q: round(s, BASELINE_DECIMALS) for q, s in pq.items()} for m, pq in candidate.per_query.items()},
            candidate.slices,
        )

    def problems(self, contract: Contract, dataset_sha256: str) -> list[str]:
        """Why a candidate with this contract and dataset is not comparable with this side (empty: it is)."""
        return comparability(
            self.contract,
            self.dataset_sha256,
            contract,
            dataset_sha256,
            ignore=self.ignore,
            labels=(self.kind, "candidate"),
        )
