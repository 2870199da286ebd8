"""`evalsuite budget`: the quality accounted stage by stage from the reference to production. Prints the sentence
and the stage table, writes budget.json, report.md, report.html and runs/. Exit 0; 1 when a --gate fails; 2 on a
usage or input error (a stage that cannot be built: BudgetStageError, nothing written)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..run.options import OUT_OPTION, add_options, collect
from .options import BUDGET_OPTIONS, BUDGET_RUN_OPTIONS, CHOOSE_OPTIONS, GATE_OPTION

if TYPE_CHECKING:
    from ..rerank.run import RerankSpec
    from ..sweep.choose import ChooseRule
    from .choose import Alternative

OUT = OUT_OPTION.with_default("reports/<dataset>/<model>/budget")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "budget",
        help="where the quality goes: the loss from the reference to production, stage by stage with paired CIs; "
        "write budget.json, report.md and report.html",
    )
    add_options(p.add_argument, (*BUDGET_RUN_OPTIONS, *BUDGET_OPTIONS, *CHOOSE_OPTIONS, GATE_OPTION, OUT))
    p.set_defaults(func=cmd_budget)


def cmd_budget(args: argparse.Namespace) -> int:
    from ..audit.source import SourceOptions
    from ..reports.run_reports import default_run_dir
    from ..run import preflight
    from ..run.spec import RunSpec
    from .compute import Evaluator
    from .gates import judge_budget_gates, parse_budget_gate
    from .plan import make_plan
    from .report import write_budget_reports
    from .run import run_budget
    from .table import stage_rows

    spec = RunSpec.from_mapping(collect(args, BUDGET_RUN_OPTIONS), source="command line")
    gates = [parse_budget_gate(g) for g in args.budget_gates or ()]
    preflight.run_paths(spec, Path(args.out) if args.out else None)
    options = SourceOptions(Path(args.ids) if args.ids else None, args.password_env)
    rule, alternatives = choose_settings(args)
    reranker = reranker_spec(args)
    plan = make_plan(
        spec,
        index_uri=args.index_uri,
        source_options=options,
        attribution=args.attribution or "sequential",
        reranker=reranker,
    )
    try:
        out = (
            Path(args.out)
            if args.out
            else default_run_dir(plan.prepared.dataset.identity.name, plan.prepared.model.name) / "budget"
        )
        preflight.out_dir(out)
        evaluate = Evaluator(plan)
        result = run_budget(plan, evaluate)
        if rule is not None:
            from .choose import choose_alternatives

            choice = choose_alternatives(
                rule, spec, alternatives, evaluate, index_uri=args.index_uri, source_options=options, reranker=reranker
            )
            result = dataclasses.replace(result, choice=choice)
    finally:
        plan.close()
    outcomes = judge_budget_gates(gates, result)
    paths = write_budget_reports(result, out, outcomes)
    print(result.sentence())
    _print_table(*stage_rows(result))
    for d in result.disagreements:
        print(f"order matters: {d}")
    for o in outcomes:
        print(o.line())
    if result.choice is not None:
        from ..sweep.reports.choice import choice_rows

        print(f"choice: {result.choice.sentence()}")
        _print_table(*choice_rows(result.choice))
    print(f"wrote {', '.join(str(p) for k, p in paths.items() if not k.startswith('run:'))} and {out / 'runs'}/")
    return 1 if any(o.verdict == "fail" for o in outcomes) else 0


def choose_settings(args: argparse.Namespace) -> tuple[ChooseRule | None, list[Alternative]]:
    from ..base.errors import SpecError
    from ..sweep.choose import parse_choose
    from .choose import parse_alternative

    alternatives = [parse_alternative(a) for a in args.alternatives or ()]
    if not args.choose:
        if alternatives:
            raise SpecError("--alternative needs --choose METRIC:non_inferior=MARGIN")
        return None, []
    return parse_choose(args.choose, args.cost or "bytes"), alternatives


def reranker_spec(args: argparse.Namespace) -> RerankSpec | None:
    """The --reranker settings as a RerankSpec (the deepest --rerank-depth), None without --reranker."""
    from ..rerank.options import rerank_settings
    from ..rerank.run import RerankSpec

    settings = rerank_settings(args)
    if not settings.get("reranker"):
        if settings:
            from ..base.errors import SpecError

            raise SpecError("--reranker-* settings need --reranker DIR (the cross-encoder of the 'reranker' stage)")
        return None
    depths = tuple(args.depths or ())
    return RerankSpec.from_mapping({**settings, **({"depth": max(depths)} if depths else {})}, source="command line")


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(headers)]
    for row in [headers, *rows]:
        print("  " + "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)))
