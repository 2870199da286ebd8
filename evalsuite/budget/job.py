"""The budget as one job: its options checked, the plan made (every stage's input checked, the built index
opened), every configuration computed, the stage gates judged, `--choose` decided; `evalsuite budget` prints and
writes the :class:`BudgetReport` this returns, and ``evalsuite.budget()`` returns it."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..run.options import OUT_OPTION, Option, collect
from .options import BUDGET_OPTIONS, BUDGET_RUN_OPTIONS, CHOOSE_OPTIONS, GATE_OPTION

if TYPE_CHECKING:
    from ..rerank.run import RerankSpec
    from ..sweep.choose import ChooseRule
    from .choose import Alternative
    from .gates import BudgetGateOutcome
    from .result import BudgetResult

# every option of the job but the report directory, in the order `evalsuite budget --help` lists them
BUDGET_JOB_OPTIONS: tuple[Option, ...] = (*BUDGET_RUN_OPTIONS, *BUDGET_OPTIONS, *CHOOSE_OPTIONS, GATE_OPTION)
OUT = OUT_OPTION.with_default("reports/<dataset>/<model>/budget")


@dataclass(frozen=True)
class BudgetReport:
    """What `evalsuite budget` answers: the budget, its stage gates' outcomes, and the files written (if any)."""

    result: BudgetResult
    gates: tuple[BudgetGateOutcome, ...] = ()
    paths: dict[str, Path] = field(default_factory=dict)

    @property
    def sentence(self) -> str:
        return self.result.sentence()

    @property
    def exit_status(self) -> int:
        return 1 if any(o.verdict == "fail" for o in self.gates) else 0

    def to_json(self) -> dict[str, object]:
        """``budget.json``."""
        return {**self.result.to_dict(), "gates": [o.to_dict() for o in self.gates]}

    def write(self, out: str | Path) -> BudgetReport:
        from .report import write_budget_reports

        return dataclasses.replace(self, paths=write_budget_reports(self.result, Path(out), self.gates))


def run_budget_job(args: argparse.Namespace, out: Path | None) -> tuple[BudgetReport, Path]:
    """The budget of the deployment ``args`` declare; ``out`` (None: the default directory) is checked writable
    before anything is encoded. Returns the report (not yet written) and the directory it belongs in."""
    from ..audit.source import SourceOptions
    from ..reports.run_reports import default_run_dir
    from ..run import preflight
    from ..run.spec import RunSpec
    from .compute import Evaluator
    from .gates import judge_budget_gates, parse_budget_gate
    from .plan import make_plan
    from .run import run_budget

    spec = RunSpec.from_mapping(collect(args, BUDGET_RUN_OPTIONS), source="command line")
    gates = [parse_budget_gate(g) for g in args.budget_gates or ()]
    preflight.run_paths(spec, out)
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
        target = out or default_run_dir(plan.prepared.dataset.identity.name, plan.prepared.model.name) / "budget"
        preflight.out_dir(target)
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
    return BudgetReport(result, tuple(judge_budget_gates(gates, result))), target


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
