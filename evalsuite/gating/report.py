"""The end of a gated session as one report object: the lines for the terminal and the files to
write (per dataset: results.json and report.md, and the sweep's reports when a sweep ran).

The session owns state (`session.py`); this module owns presentation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.io import atomic_write_json, atomic_write_text
from ..base.verdict import VERDICTS, label, worst
from ..reports.markdown import table
from ..reports.run_reports import run_markdown
from ..reports.slices import moved_lines, moved_markdown
from .gates import Gate, GateVerdict, Outcome, bracket, signed
from .kinds import kind_of
from .ledger import (
    BaselineWritten,
    CanaryRecord,
    CandidateSeen,
    Computation,
    GateRecord,
    ReferenceSeen,
    RerankedSeen,
    SweepCellRecord,
)

if TYPE_CHECKING:
    from ..rerank.gates import Stage
    from ..run.result import Result
    from ..scoring.stats import Comparison
    from ..slicing.compare import SliceMove
    from ..sweep.results import SweepResult
    from .releases import HistoryWrite
    from .stages import RerankedStage

SUMMARY_HEADERS = ("metric", "{side}", "candidate", "delta", "95% CI", "MDE", "verdict")


@dataclass(frozen=True)
class SummaryRow:
    """One metric: reference value, candidate value, delta with its CI and MDE, and the gate items' verdict."""

    metric: str
    reference: float | None
    candidate: float | None
    verdict: GateVerdict | None  # None: no gate item on this metric; else the worst of its gates
    comparison: Comparison | None = None

    @property
    def delta(self) -> float | None:
        return None if self.candidate is None or self.reference is None else self.candidate - self.reference

    def cells(self) -> tuple[str, str, str, str, str, str, str]:
        c = self.comparison
        delta = "-" if self.delta is None else signed(self.delta)
        ci = "-" if c is None else f"{signed(c.ci.low)} .. {signed(c.ci.high)}"
        mde = "-" if c is None else f"{c.mde:.4f}"
        verdict = "-" if self.verdict is None else self.verdict.upper()
        return (
            self.metric,
            "-" if self.reference is None else f"{self.reference:.4f}",
            "-" if self.candidate is None else f"{self.candidate:.4f}",
            delta,
            ci,
            mde,
            verdict,
        )


def summary_rows(
    candidate: CandidateSeen | RerankedSeen | None,
    reference: ReferenceSeen | RerankedSeen | None,
    gates: Sequence[GateRecord],
    stage: Stage = "first",
) -> list[SummaryRow]:
    """One row per metric of ``stage`` (the reranked stage's rows are named ``ndcg@10[stage=reranked]``), its
    verdict the worst of the gates on that metric and stage."""
    cand = candidate.metrics if candidate else {}
    ref = reference.metrics if reference else {}
    verdicts: dict[str, list[GateVerdict]] = {}
    comparisons: dict[str, Comparison] = {}
    for g in gates:
        gate = g.outcome.gate
        if gate.selector is not None or gate.stage != stage:
            continue  # a slice gate judges part of the queries: its own line says so, the metric's row is the whole
        verdicts.setdefault(gate.metric, []).append(g.outcome.verdict)
        if g.outcome.comparison is not None and gate.needs_reference:  # not the gain's: it pairs another side
            comparisons.setdefault(gate.metric, g.outcome.comparison)
    return [
        SummaryRow(bracket(m, stage, None), ref.get(m), cand.get(m), worst(verdicts.get(m, [])), comparisons.get(m))
        for m in dict.fromkeys(list(cand) + list(ref))
    ]


def stage_text(gate: Gate) -> str:
    """The stage column of a gate: ``first``, ``reranked``, or ``reranked − first`` for the reranker's gain."""
    return f"{gate.stage} − first" if kind_of(gate).against == "first stage" else gate.stage


def gate_line(outcome: Outcome) -> str:
    """One gate item in the terminal summary: verdict, gate, delta with CI, p-values, MDE."""
    head = f"{outcome.verdict.upper():<12} {outcome.gate.expr}"
    note = f"; {outcome.note}" if outcome.note else ""
    if outcome.comparison is None:
        return f"{head}: {outcome.gate.subject} {outcome.candidate:.4f}{note}"
    text = f"{head}: {outcome.uncertainty()}{note}"
    if outcome.queries_needed is not None and outcome.verdict == "inconclusive":
        text += f"; about {outcome.queries_needed} queries would decide it"
    return text


def verdict_markdown(name: str, outcomes: Sequence[GateRecord | SweepCellRecord]) -> str:
    """The top of a gated report.md: the dataset's verdict, how many items gave which, every item that did not
    pass with its figures (the run, its metrics and all tables follow)."""
    verdicts = [r.outcome.verdict for r in outcomes]
    overall = worst(verdicts)
    if overall is None:
        return f"# evalsuite gates on {name}: nothing gated\n\n"
    counts = ", ".join(f"{verdicts.count(v)} {label(v)}" for v in VERDICTS if verdicts.count(v))
    lines = [f"- `{r.item}`: {gate_line(r.outcome)}" for r in outcomes if r.outcome.verdict != "pass"]
    return f"# evalsuite gates on {name}: {label(overall)}\n\n{len(verdicts)} gate outcome(s): {counts}.\n\n" + (
        "\n".join(lines) + "\n\n" if lines else ""
    )


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
    results: dict[str, object] | None  # results.json; None when the candidate was never computed
    markdown: str | None
    sweep: SweepResult | None
    gate_lines: tuple[str, ...] = ()
    slice_lines: tuple[str, ...] = ()  # the slices that moved most against the reference side

    @property
    def headers(self) -> tuple[str, ...]:
        return tuple(h.format(side=self.side) for h in SUMMARY_HEADERS)

    def write(self) -> list[Path]:
        paths = []
        if self.sweep is not None:
            from ..sweep.reports import write_sweep_reports

            paths += list(write_sweep_reports(self.sweep, self.directory / "sweep").values())
        if self.results is not None and self.markdown is not None:
            paths += [
                atomic_write_json(self.directory / "results.json", self.results),
                atomic_write_text(self.directory / "report.md", self.markdown),
            ]
        return paths


def _uncertainty_cells(o: Outcome) -> tuple[str, str, str, str, str]:
    c = o.comparison
    if c is None:
        return ("-", "-", "-", "-", "-")
    adj = "-" if o.evidence.correction != "holm" or o.evidence.p_adjusted is None else f"{o.evidence.p_adjusted:.4g}"
    return (
        signed(c.ci.delta),
        f"{signed(c.ci.low)} .. {signed(c.ci.high)}",
        f"{c.p_value:.4g}",
        "-" if o.p_value is None else f"{o.p_value:.4g}" + ("" if adj == "-" else f" (Holm {adj})"),
        f"{c.mde:.4f}",
    )


def dataset_report(
    name: str,
    directory: Path,
    result: Result | None,
    sweep: SweepResult | None,
    candidate: CandidateSeen | None,
    reference: ReferenceSeen | None,
    outcomes: Sequence[GateRecord | SweepCellRecord],
    notes: Sequence[str],
    statement: str | None = None,
    comparisons: Mapping[str, Comparison] | None = None,
    moves: Sequence[SliceMove] = (),
    reranked: RerankedStage | None = None,
    reranked_reference: RerankedSeen | None = None,
) -> DatasetReport:
    """``outcomes``: the gate items' and sweep cells' records, in the order they were made; ``comparisons``:
    every metric's paired comparison with the reference side (rows a gate does not test show these);
    ``reranked``: the candidate's reranked stage, ``reranked_reference`` the reference side's."""
    gates = [r for r in outcomes if isinstance(r, GateRecord)]
    if candidate is None and result is not None:
        candidate = CandidateSeen(name, dict(result.metrics))
    side = reference.kind if reference else "baseline"
    rows = tuple(
        r
        if r.comparison is not None or not comparisons or r.metric not in comparisons
        else replace(r, comparison=comparisons[r.metric])
        for r in summary_rows(candidate, reference, gates)
    )
    if reranked is not None:
        seen = RerankedSeen(name, "candidate", dict(reranked.metrics))
        rows += tuple(summary_rows(seen, reranked_reference, gates, "reranked"))
    results = markdown = None
    if result is not None:
        rows_out = [{"dataset": r.dataset, "item": r.item, **r.outcome.to_dict()} for r in outcomes]
        results = result.to_dict()
        results["gates"] = rows_out
        if reference is not None:
            results["reference"] = {"label": reference.label, "metrics": reference.metrics}
            if reranked_reference is not None:
                results["reference"]["reranked"] = {"metrics": reranked_reference.metrics}
        if reranked is not None:
            results["reranked"] = [reranked.report()]  # one depth; a two-stage run lists each depth
        if comparisons:
            results["comparison"] = {m: c.to_dict() for m, c in comparisons.items()}
        if moves:
            results["slice_comparison"] = [m.to_dict() for m in moves]
        headers = tuple(h.format(side=side) for h in SUMMARY_HEADERS)
        markdown = verdict_markdown(name, outcomes) + run_markdown(result).replace("# evalsuite run", "## Run", 1)
        markdown += "\n## Gates\n\n" + table(headers, [r.cells() for r in rows])
        if outcomes:
            markdown += "\n" + table(
                (
                    "item",
                    "gate",
                    "stage",
                    "verdict",
                    "candidate",
                    side,
                    "delta",
                    "95% CI",
                    "sign-flip p",
                    "t-test p",
                    "MDE",
                    "queries needed",
                ),
                [
                    (
                        r.item,
                        r.outcome.gate.expr,
                        stage_text(r.outcome.gate),
                        r.outcome.verdict.upper(),
                        f"{r.outcome.candidate:.4f}",
                        "-" if r.outcome.reference is None else f"{r.outcome.reference:.4f}",
                        *_uncertainty_cells(r.outcome),
                        "-" if r.outcome.queries_needed is None else r.outcome.queries_needed,
                    )
                    for r in outcomes
                ],
            )
            markdown += (
                "\nThe 95% CI is a paired bootstrap over queries (10,000 resamples, seeded); sign-flip p is "
                "a paired randomization test; MDE is the smallest true drop a one-sided 5% test would "
                "detect with 80% power on these queries.\n"
            )
        if reranked is not None:
            markdown += _reranked_markdown(reranked)
        markdown += moved_markdown(moves, side)
        if statement:
            markdown += f"\n{statement}\n"
        if notes:
            markdown += "\n" + "".join(f"- {n}\n" for n in notes)
    lines = tuple(gate_line(r.outcome) for r in gates)
    if results is not None and statement:
        results["verdict_policy"] = statement
    return DatasetReport(name, directory, side, rows, results, markdown, sweep, lines, tuple(moved_lines(moves, side)))


def _reranked_markdown(stage: RerankedStage) -> str:
    """The reranked stage: which reranker at which depth, and the gain it brings per metric with its CI."""
    r = stage.reranker
    head = (
        f"\n## Reranked stage\n\nreranker {r.get('model')} @ {str(r.get('model_revision'))[:16]}, top "
        f"{stage.depth} of the first stage reranked; the gain is reranked − first stage on the same queries "
        "(95% CI: paired bootstrap over queries)\n\n"
    )
    return head + "".join(f"- {d.describe()}\n" for d in stage.gain)


@dataclass(frozen=True)
class SessionReport:
    notes: tuple[str, ...]
    canary: tuple[CanaryRecord, ...]
    computations: tuple[Computation, ...]
    baselines_written: tuple[BaselineWritten, ...]
    datasets: tuple[DatasetReport, ...]
    reports_dir: Path
    statement: str | None = None  # the verdict policy (multiplicity, inconclusive), when gates ran
    history: HistoryWrite | None = None  # the release history's records and the Markdown summary (`releases.py`)

    def dataset(self, name: str) -> DatasetReport:
        return next(d for d in self.datasets if d.name == name)

    def terminal_lines(self, *, verbose: bool) -> list[str]:
        """The terminal summary; which worker computed what only with ``-v`` (it is bookkeeping, not a result)."""
        out = list(self.notes)
        if self.statement:
            out.append(self.statement)
        out += [f"canary {c.dataset}: {c.verdict.status} {c.verdict.message.splitlines()[0]}" for c in self.canary]
        out += [f"computed {c}" for c in self.computations] if verbose else []
        out += [f"baseline written: {b.dataset}: {b.path} (gates skipped)" for b in self.baselines_written]
        for d in self.datasets:
            if not d.rows or all(r.candidate is None for r in d.rows):
                continue
            out.append(f"{d.name}:")
            out += ["  " + line for line in format_rows(d.headers, [r.cells() for r in d.rows])]
            out += ["  " + line for line in d.gate_lines]
            out += ["  " + line for line in d.slice_lines]
        out.append(f"reports: {self.reports_dir}")
        if self.history is not None and self.history.store is not None and self.history.records:
            out.append(f"history: {len(self.history.records)} record(s) in {self.history.store.root}")
        return out

    def write(self) -> list[Path]:
        paths = [p for d in self.datasets for p in d.write()]
        return paths + (self.history.write() if self.history is not None else [])
