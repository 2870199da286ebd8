"""`evalsuite budget`: the quality accounted stage by stage from the reference to production. Prints the sentence
and the stage table, writes budget.json, report.md, report.html and runs/. Exit 0; 1 when a --gate fails; 2 on a
usage or input error (a stage that cannot be built: BudgetStageError, nothing written). The job is
:func:`~.job.run_budget_job`, which ``evalsuite.budget()`` runs too."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..base.jobs import Job
from .job import BUDGET_JOB_OPTIONS, OUT


def cmd_budget(args: argparse.Namespace) -> int:
    from .job import run_budget_job
    from .table import stage_rows

    report, out = run_budget_job(args, Path(args.out) if args.out else None)
    report = report.write(out)
    result = report.result
    print(result.sentence())
    _print_table(*stage_rows(result))
    for d in result.disagreements:
        print(f"order matters: {d}")
    for o in report.gates:
        print(o.line())
    if result.choice is not None:
        from ..sweep.reports.choice import choice_rows

        print(f"choice: {result.choice.sentence()}")
        _print_table(*choice_rows(result.choice))
    files = ", ".join(str(p) for k, p in report.paths.items() if not k.startswith("run:"))
    print(f"wrote {files} and {out / 'runs'}/")
    return report.exit_status


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    for row in [headers, *rows]:
        print("  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))


def _pytest_part() -> object:
    from .items import PYTEST_PART

    return PYTEST_PART


JOB = Job(
    "budget",
    help="where the quality goes: the loss from the reference to production, stage by stage with paired CIs; "
    "write budget.json, report.md and report.html",
    options=lambda: (*BUDGET_JOB_OPTIONS, OUT),
    run=cmd_budget,
    exit_codes={0: "the budget was computed and written (and every --gate held)", 1: "a --gate failed"},
    pytest=_pytest_part,
)
