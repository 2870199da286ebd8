"""What the front door returns: each job's own result object (the one its command writes) with the same small
surface: ``passed`` where the job judges, ``to_dict()`` / ``to_json()`` (exactly the JSON file the command writes),
``write(out)`` (the command's files) and, for a run, ``compare(other)``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.io import json_text

if TYPE_CHECKING:
    from ..audit.runner import AuditOutcome, AuditReport
    from ..canary.rounds import CanaryRun
    from ..checks import CheckOutcome
    from ..contract import Contract
    from ..datasets.model import DatasetIdentity
    from ..run.prepared import Prepared
    from ..run.result import Result
    from ..sweep.results import CellResult, SweepResult
    from .compare import RunComparison


@dataclass(frozen=True)
class Evaluation:
    """``evalsuite.evaluate(...)``: one scored run (``result``, what `evalsuite run` writes as results.json)."""

    result: Result
    prepared: Prepared = field(repr=False)
    paths: Mapping[str, Path] = field(default_factory=dict)  # the files written (none unless ``out`` was given)

    @property
    def metrics(self) -> dict[str, float]:
        """Each metric's mean over the scored queries, e.g. ``metrics["ndcg@10"]``."""
        return self.result.metrics

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """``{metric: {query id: score}}``."""
        return self.result.per_query

    @property
    def contract(self) -> Contract:
        return self.result.contract

    @property
    def dataset(self) -> DatasetIdentity:
        return self.result.dataset.identity

    @property
    def manifest(self) -> dict[str, Any]:
        return self.result.manifest

    @property
    def warnings(self) -> list[str]:
        return self.result.warnings

    @property
    def notes(self) -> tuple[str, ...]:
        """What was decided for the user, and why (what `evalsuite run` prints first)."""
        return self.prepared.notes

    def to_dict(self) -> dict[str, Any]:
        return self.result.to_dict()

    def to_json(self) -> str:
        """results.json, as `evalsuite run` writes it."""
        return json_text(self.to_dict())

    def write(self, out: str | Path) -> dict[str, Path]:
        """results.json, manifest.json, report.md and run.trec in ``out``."""
        from ..reports import write_run_reports

        return write_run_reports(self.result, Path(out))

    def compare(
        self,
        reference: Evaluation,
        metrics: Sequence[str] | None = None,
        *,
        n_resamples: int | None = None,
        seed: int = 0,
        confidence: float | None = None,
    ) -> RunComparison:
        """This run against ``reference`` on the same dataset, per metric (default: every metric both scored): the
        paired delta over the shared queries with its bootstrap CI, sign-flip p-value and detectable effect."""
        from .compare import compare_results

        return compare_results(
            self.result, reference.result, metrics, n_resamples=n_resamples, seed=seed, confidence=confidence
        )


@dataclass(frozen=True)
class SweepReport:
    """``evalsuite.sweep(...)``: every cell against the base (``result``, what `evalsuite sweep` writes)."""

    result: SweepResult
    prepared: Prepared = field(repr=False)
    paths: Mapping[str, Path] = field(default_factory=dict)

    @property
    def base(self) -> Evaluation:
        return Evaluation(self.result.base, self.prepared)

    @property
    def cells(self) -> dict[str, CellResult]:
        """Each cell by name (``"dim=128"``): its result, delta against the base, CIs and q-values."""
        return {c.name: c for c in self.result.cells}

    def to_dict(self) -> dict[str, Any]:
        """sweep.json, as `evalsuite sweep` writes it (made once: ``created`` is when it was first asked for)."""
        return dict(self._data)

    @cached_property
    def _data(self) -> dict[str, Any]:
        from ..sweep.reports.data import sweep_to_dict

        return sweep_to_dict(self.result)

    def to_json(self) -> str:
        return json_text(self.to_dict())

    def write(self, out: str | Path) -> dict[str, Path]:
        """sweep.json, report.md and report.html in ``out``."""
        from ..sweep.reports import write_sweep_reports

        return write_sweep_reports(self.result, Path(out))


@dataclass(frozen=True)
class CanaryReport:
    """``evalsuite.canary(...)``: every check against each endpoint in each round (``run``)."""

    run: CanaryRun
    paths: Mapping[str, Path] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Every check of every member passed in every round."""
        return self.run.passed

    @property
    def exit_status(self) -> int:
        """What `evalsuite canary` exits with: 0 passed, 1 a check failed."""
        return self.run.exit_status

    @property
    def verdicts(self) -> tuple[CheckOutcome, ...]:
        """The verdicts of the worst round (of the worst member, for a fleet)."""
        if self.run.fleet:
            return self.run.fleet_outcome().worst().worst.verdicts
        return self.run.worst().verdicts

    @property
    def failed(self) -> list[str]:
        """The names of the checks that failed (in the worst round, of the worst member)."""
        return [v.check for v in self.verdicts if v.passed is False]

    def to_dict(self) -> dict[str, Any]:
        """canary.json, as `evalsuite canary` writes it (every API key redacted)."""
        return self.run.to_dict()

    def to_json(self) -> str:
        return json_text(self.to_dict())

    def write(self, out: str | Path) -> dict[str, Path]:
        """canary.json and report.md in ``out``."""
        return self.run.write(Path(out))


@dataclass(frozen=True)
class AuditResult:
    """``evalsuite.audit(...)``: the audited index, the baseline of a cutover and their comparison (``report``)."""

    report: AuditReport
    paths: Mapping[str, Path] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def exit_status(self) -> int:
        """What `evalsuite audit` exits with: 0 passed, 1 a check failed."""
        return self.report.exit_status

    @property
    def index(self) -> AuditOutcome:
        return self.report.index

    @property
    def verdicts(self) -> tuple[CheckOutcome, ...]:
        """The audited index's verdicts, in the order the checks ran."""
        return self.report.index.verdicts

    def to_dict(self) -> dict[str, Any]:
        """audit.json, as `evalsuite audit` writes it."""
        return self.report.to_dict()

    def to_json(self) -> str:
        return json_text(self.to_dict())

    def write(self, out: str | Path) -> dict[str, Path]:
        """audit.json and report.md in ``out``."""
        from ..audit.report import write_reports

        return write_reports(self.report, Path(out))
