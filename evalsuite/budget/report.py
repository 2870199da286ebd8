"""A loss budget's files: ``budget.json``, ``report.md`` (leading with the sentence), ``report.html`` (the
waterfall, :mod:`.html`) and the TREC run of the reference and of every measured stage (``runs/``), so each
stage's numbers can be recomputed by any tool. Everything is rendered first and written atomically after."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..reports.markdown import table
from .table import ci_text, stage_rows

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .gates import BudgetGateOutcome
    from .result import BudgetResult


def budget_markdown(result: BudgetResult, outcomes: Sequence[BudgetGateOutcome] = ()) -> str:
    from .result import ATTRIBUTION_NOTES

    lines = ["# Loss budget", "", f"**{result.sentence()}**", ""]
    if outcomes:
        lines.append(gates_markdown(outcomes))
    ds = result.dataset
    lines += [
        f"Dataset {ds.get('name')} ({len(result.query_ids)} queries). Each stage changes one thing against the stage "
        f"before it; Δ is the paired difference over queries with its 95% bootstrap CI and sign-flip p-value; "
        f"'lost' is the share of queries whose score fell. Attribution: {ATTRIBUTION_NOTES[result.attribution]}.",
        "",
    ]
    lines.append(table(*stage_rows(result)))
    if len(result.metrics) > 1:
        lines += ["## Every metric", ""]
        headers = ["stage"] + [f"Δ {m}" for m in result.metrics]
        rows = [
            [s.name] + [ci_text(s.delta[m].value, s.delta[m].low, s.delta[m].high) for m in result.metrics]
            for s in result.measured
        ]
        rows.append(
            ["total"]
            + [ci_text(result.total[m].value, result.total[m].low, result.total[m].high) for m in result.metrics]
        )
        lines.append(table(headers, rows))
    if result.choice is not None:
        from ..sweep.reports.choice import choice_legend, choice_rows

        c = result.choice
        lines += ["## Choice", "", f"**{c.sentence()}**", "", choice_legend(c), "", table(*choice_rows(c))]
    if result.disagreements:
        lines += ["## Where the order matters", "", *[f"- {d}" for d in result.disagreements], ""]
    if result.notes:
        lines += ["## Notes", "", *[f"- {n}" for n in result.notes], ""]
    lines += ["## Stages", ""]
    lines += [f"- `{s.name}`: {s.changes}" + (f" — {s.skipped}" if s.skipped else "") for s in result.stages]
    return "\n".join(lines) + "\n"


def gates_markdown(outcomes: Sequence[BudgetGateOutcome]) -> str:
    if not outcomes:
        return ""
    return (
        "## Stage gates\n\n"
        + "".join(f"- **{o.verdict.upper()}** `{o.gate.expr}`: {o.message}\n" for o in outcomes)
        + "\n"
    )


def write_budget_reports(
    result: BudgetResult, out: Path, outcomes: Sequence[BudgetGateOutcome] = ()
) -> dict[str, Path]:
    """Render every file, then write each atomically; returns {kind: path}."""
    from ..base.io import atomic_write_json, atomic_write_text
    from ..reports.trec import trec_run
    from .html import budget_html

    files: dict[str, tuple[Path, str | dict[str, object]]] = {
        "json": (out / "budget.json", {**result.to_dict(), "gates": [o.to_dict() for o in outcomes]}),
        "markdown": (out / "report.md", budget_markdown(result, outcomes)),
        "html": (out / "report.html", budget_html(result)),
    }
    for name, ranking in result.rankings.items():
        files[f"run:{name}"] = (out / "runs" / f"{name}.trec", trec_run(ranking, tag=f"budget-{name}"))
    paths = {}
    for kind, (path, body) in files.items():
        paths[kind] = atomic_write_json(path, body) if isinstance(body, dict) else atomic_write_text(path, body)
    return paths
