"""What happened in a session, as typed records: gate and sweep-cell outcomes, canary verdicts,
results and references seen, computations, baselines written.

Under pytest-xdist each worker keeps its own ledger and sends it to the controller pickled
(:meth:`Ledger.to_output`); the controller merges them (:meth:`Ledger.merge`).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .gates import Outcome

if TYPE_CHECKING:
    from ..checks import CheckOutcome
    from .reference import ReferenceKind


@dataclass(frozen=True)
class GateRecord:
    """One gate item's outcome against the baseline or reference."""

    dataset: str
    item: str
    outcome: Outcome


@dataclass(frozen=True)
class SweepCellRecord:
    """One gate of one sweep cell against the sweep's base contract."""

    dataset: str
    item: str
    cell: str
    outcome: Outcome


@dataclass(frozen=True)
class CanaryRecord:
    dataset: str
    verdict: CheckOutcome


@dataclass(frozen=True)
class CandidateSeen:
    """The candidate's aggregate metrics on a dataset."""

    dataset: str
    metrics: dict[str, float]


@dataclass(frozen=True)
class RerankedSeen:
    """The aggregate metrics of one side's reranked stage on a dataset."""

    dataset: str
    side: Literal["candidate", "reference"]
    metrics: dict[str, float]


@dataclass(frozen=True)
class ReferenceSeen:
    dataset: str
    kind: ReferenceKind
    label: str
    metrics: dict[str, float]


# local: the reference model's own run when the candidate is served; reranked: a side's reranked stage
Computed = Literal["candidate", "reference", "sweep", "local", "reranked", "reference-reranked"]


@dataclass(frozen=True)
class Computation:
    """A result this session computed (not read from another worker): what, for which dataset, where."""

    what: Computed
    dataset: str
    worker: str

    def __str__(self) -> str:
        return f"{self.what}-{self.dataset} in {self.worker}"


@dataclass(frozen=True)
class BaselineWritten:
    dataset: str
    path: Path


Record = (
    GateRecord
    | SweepCellRecord
    | CanaryRecord
    | CandidateSeen
    | ReferenceSeen
    | RerankedSeen
    | Computation
    | BaselineWritten
)


@dataclass
class Ledger:
    records: list[Record] = field(default_factory=list)

    def add(self, record: Record) -> None:
        self.records.append(record)

    def to_output(self) -> bytes:
        return pickle.dumps(self.records, protocol=pickle.HIGHEST_PROTOCOL)

    def merge(self, output: bytes) -> None:
        self.records.extend(pickle.loads(output))

    # -- typed views ------------------------------------------------------------------------------
    def gates(self, dataset: str) -> list[GateRecord]:
        return [r for r in self.records if isinstance(r, GateRecord) and r.dataset == dataset]

    def outcomes(self, dataset: str) -> list[GateRecord | SweepCellRecord]:
        """Gate items' and sweep cells' outcomes on a dataset, in the order they were recorded."""
        return [r for r in self.records if isinstance(r, (GateRecord, SweepCellRecord)) and r.dataset == dataset]

    def canary(self) -> list[CanaryRecord]:
        return [r for r in self.records if isinstance(r, CanaryRecord)]

    def computations(self) -> list[Computation]:
        return [r for r in self.records if isinstance(r, Computation)]

    def baselines_written(self) -> list[BaselineWritten]:
        return [r for r in self.records if isinstance(r, BaselineWritten)]

    def candidate(self, dataset: str) -> CandidateSeen | None:
        return next((r for r in self.records if isinstance(r, CandidateSeen) and r.dataset == dataset), None)

    def reranked(self, dataset: str, side: Literal["candidate", "reference"]) -> RerankedSeen | None:
        return next(
            (r for r in self.records if isinstance(r, RerankedSeen) and r.dataset == dataset and r.side == side), None
        )

    def reference(self, dataset: str) -> ReferenceSeen | None:
        return next((r for r in self.records if isinstance(r, ReferenceSeen) and r.dataset == dataset), None)
