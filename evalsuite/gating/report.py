"""The end of a gated session as one report object: the lines for the terminal and the files to
write (per dataset: results.json and report.md, and the sweep's reports when a sweep ran).

The session owns state (`session.py`); this module owns presentation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..io import atomic_write_json, atomic_write_text
from ..reports.markdown import table
from ..reports.run_reports import run_markdown
from .ledger import (
    BaselineWritten,
    CanaryRecord,
    CandidateSeen,
    Computation,
    GateRecord,
    ReferenceSeen,
    SweepCellRecord,
)

if TYPE_CHECKING:
    from ..result import Result
    from ..sweep.execute import SweepResult

SUMMARY_HEADERS = ("metric", "{side}", "candidate", "delta", "verdict")


@dataclass(frozen=True)
class SummaryRow:
    """One metric: reference value, candidate value, delta and the gate items' verdict."""

    metric: str
    reference: float | None
    candidate: float | None
    verdict: bool | None  # None: no gate item on this metric

    @property
    def delta(self) -> float | None:
        return None if self.candidate is None or self.reference is None else self.candidate - self.reference

    def cells(self) -> tuple[str, str, str, str, str]:
        delta = "-" if self.delta is None else f"{round(self.delta, 4) + 0.0:+.4f}"
        verdict = "-" if self.verdict is None else ("PASS" if self.verdict else "FAIL")
        return (self.metric, "-" if self.reference is None else f"{self.reference:.4f}",
                "-" if self.candidate is None else f"{self.candidate:.4f}", delta, verdict)


def summary_rows(candidate: CandidateSeen | None, reference: ReferenceSeen | None,
                 gates: Sequence[GateRecord]) -> list[SummaryRow]:
    cand = candidate.metrics if candidate else {}
    ref = reference.metrics if reference else {}
    verdicts: dict[str, list[bool]] = {}
    for g in gates:
        verdicts.setdefault(g.outcome.gate.metric, []).append(g.outcome.passed)
    return [SummaryRow(m, ref.get(m), cand.get(m), all(verdicts[m]) if m in verdicts else None)
            for m in dict.fromkeys(list(cand) + list(ref))]


def format_rows(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A plain aligned text table (the terminal summary)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in [headers, *rows]]


@dataclass(frozen=True)
class DatasetReport:
    name: str
    directory: Path
    side: str  # "baseline" or "reference": the column the summary compares with
    rows: tuple[SummaryRow, ...]
    results: dict[str, Any] | None  # results.json; None when the candidate was never computed
    markdown: str | None
    sweep: SweepResult | None

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(h.format(side=self.side) for h in SUMMARY_HEADERS)

    def write(self) -> list[Path]:
        paths = []
        if self.sweep is not None:
            from ..reports.sweep_reports import write_sweep_reports

            paths += list(write_sweep_reports(self.sweep, self.directory / "sweep").values())
        if self.results is not None and self.markdown is not None:
            paths += [atomic_write_json(self.directory / "results.json", self.results),
                      atomic_write_text(self.directory / "report.md", self.markdown)]
        return paths


def dataset_report(name: str, directory: Path, result: Result | None, sweep: SweepResult | None,
                   candidate: CandidateSeen | None, reference: ReferenceSeen | None,
                   outcomes: Sequence[GateRecord | SweepCellRecord], notes: Sequence[str]) -> DatasetReport:
    """``outcomes``: the gate items' and sweep cells' records, in the order they were made."""
    gates = [r for r in outcomes if isinstance(r, GateRecord)]
    if candidate is None and result is not None:
        candidate = CandidateSeen(name, dict(result.metrics))
    side = reference.kind if reference else "baseline"
    rows = tuple(summary_rows(candidate, reference, gates))
    results = markdown = None
    if result is not None:
        rows_out = [{"dataset": r.dataset, "item": r.item, **r.outcome.to_dict()} for r in outcomes]
        results = result.to_dict()
        results["gates"] = rows_out
        if reference is not None:
            results["reference"] = {"label": reference.label, "metrics": reference.metrics}
        headers = tuple(h.format(side=side) for h in SUMMARY_HEADERS)
        markdown = run_markdown(result) + "\n## Gates\n\n" + table(headers, [r.cells() for r in rows])
        if outcomes:
            markdown += "\n" + table(("item", "gate", "passed", "candidate", side, "p-value"), [
                (r.item, r.outcome.gate.expr, "yes" if r.outcome.passed else "NO", r.outcome.candidate,
                 "-" if r.outcome.reference is None else r.outcome.reference,
                 "-" if r.outcome.p_value is None else r.outcome.p_value) for r in outcomes])
        if notes:
            markdown += "\n" + "".join(f"- {n}\n" for n in notes)
    return DatasetReport(name, directory, side, rows, results, markdown, sweep)


@dataclass(frozen=True)
class SessionReport:
    notes: tuple[str, ...]
    canary: tuple[CanaryRecord, ...]
    computations: tuple[Computation, ...]
    baselines_written: tuple[BaselineWritten, ...]
    datasets: tuple[DatasetReport, ...]
    reports_dir: Path

    def dataset(self, name: str) -> DatasetReport:
        return next(d for d in self.datasets if d.name == name)

    @property
    def lines(self) -> list[str]:
        """The terminal summary, below its ``evalsuite`` separator."""
        out = list(self.notes)
        out += [f"canary {c.dataset}: {c.verdict.status} {c.verdict.message.splitlines()[0]}" for c in self.canary]
        out += [f"computed {c}" for c in self.computations]
        out += [f"baseline written: {b.dataset}: {b.path} (gates skipped)" for b in self.baselines_written]
        for d in self.datasets:
            if not d.rows or all(r.candidate is None for r in d.rows):
                continue
            out.append(f"{d.name}:")
            out += ["  " + line for line in format_rows(d.headers, [r.cells() for r in d.rows])]
        out.append(f"reports: {self.reports_dir}")
        return out

    def write(self) -> list[Path]:
        return [p for d in self.datasets for p in d.write()]
