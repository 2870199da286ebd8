"""The budget's pytest items: ``pytest --model-rev REV --budget [--dim N --index SPEC --endpoint URL]
[--budget-gate EXPR ...]`` computes each dataset's loss budget once (production: the session's own settings),
writes its reports under ``<reports dir>/<dataset>/budget``, and runs one item per stage gate
(``evalsuite-budget/<dataset>/budget[ndcg@10[stage=ann]:max_drop=0.01]``) beside an item that holds the sentence."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..gating.items import EvalsuiteFailure, EvalsuiteItem
from ..gating.parts import PytestPart
from ..run.options import Option, collect, spec_type
from .options import _gate
from .plan import ATTRIBUTIONS

if TYPE_CHECKING:
    from ..gating.session import GateSession
    from .gates import BudgetGate
    from .result import BudgetResult

PLUGIN_OPTIONS: tuple[Option, ...] = (
    Option(
        "--budget",
        "the loss budget from the reference to production (the session's --dtype, --dim, --index, --endpoint) as "
        "items: its reports under the reports directory, one item per --budget-gate",
        {"action": "store_const", "const": True},
    ),
    Option(
        "--budget-gate",
        "a stage's own budget, e.g. ndcg@10[stage=ann]:max_drop=0.01 (the release gates' kinds, judged against the "
        "stage before); repeatable",
        {"action": "append", "metavar": "EXPR", "type": spec_type(_gate, "gate"), "dest_name": "budget_gates"},
    ),
    Option(
        "--budget-index-uri", "the index as built, read as the audit reads it (the 'index' stage)", {"metavar": "URI"}
    ),
    Option("--budget-ids", "with --budget-index-uri faiss:PATH: the chunk ids, one per line", {"metavar": "PATH"}),
    Option("--budget-attribution", "sequential or shapley", {"choices": ATTRIBUTIONS}),
)


@dataclass(frozen=True)
class BudgetRequest:
    values: dict[str, Any]
    endpoints: tuple[str, ...] = ()
    client: dict[str, Any] = field(default_factory=dict)


def take_request(values: argparse.Namespace, prefix: str) -> BudgetRequest | None:
    """The budget's settings when ``--budget`` is given (the canary's --endpoint and its client settings join the
    production deployment as its served encoder)."""
    given = collect(values, PLUGIN_OPTIONS, prefix)
    if not given.pop("budget", False):
        if given:
            from ..base.errors import SpecError

            flags = [o.flag for o in PLUGIN_OPTIONS if o.dest in given]
            raise SpecError(f"{', '.join(flags)} need(s) --budget: pytest --model-rev REV --budget {flags[0]} ...")
        return None
    from ..canary.embedding.options import CANARY_FLEET_OPTIONS

    canary = collect(values, CANARY_FLEET_OPTIONS, prefix)
    endpoints = tuple(canary.pop("endpoint", None) or ())
    client = {k: v for k, v in canary.items() if k in ("api_key_env", "served_model")}
    return BudgetRequest(given, endpoints, client)


@dataclass
class SessionBudget:
    state: GateSession
    request: BudgetRequest
    results: dict[str, BudgetResult] = field(default_factory=dict)

    def items(self, parent: pytest.Session, anchor: Path) -> list[pytest.Item]:
        return collect_budget_items(self, parent, anchor)

    def close(self) -> None:
        return None  # each dataset's plan is closed as soon as its budget is computed

    @property
    def gates(self) -> list[BudgetGate]:
        from .gates import parse_budget_gate

        return [parse_budget_gate(g) for g in self.request.values.get("budget_gates") or ()]

    def result(self, dataset: str) -> BudgetResult:
        if dataset not in self.results:
            from ..audit.source import SourceOptions
            from .gates import judge_budget_gates
            from .plan import make_plan
            from .report import write_budget_reports
            from .run import run_budget

            v = self.request.values
            spec = self.state.prepared[dataset].spec
            if self.request.endpoints:
                spec = dataclasses.replace(spec, endpoints=self.request.endpoints, **self.request.client)
            plan = make_plan(
                spec,
                index_uri=v.get("budget_index_uri"),
                source_options=SourceOptions(Path(v["budget_ids"]) if v.get("budget_ids") else None),
                attribution=v.get("budget_attribution") or "sequential",
            )
            try:
                result = run_budget(plan)
            finally:
                plan.close()
            out = self.state.plan.reports_dir / dataset / "budget"
            write_budget_reports(result, out, judge_budget_gates(self.gates, result))
            self.results[dataset] = result
        return self.results[dataset]


class BudgetItem(EvalsuiteItem):
    """The budget of one dataset (``gate`` None: the sentence) or one stage gate on it."""

    def __init__(self, *, budget: SessionBudget, gate: BudgetGate | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.budget = budget
        self.gate = gate

    def runtest(self) -> None:
        __tracebackhide__ = True
        from .gates import judge_budget_gate

        result = self.budget.result(self.dataset)
        if self.gate is None:
            self.user_properties.append(("budget", result.sentence()))
            return
        outcome = judge_budget_gate(self.gate, result)
        self.user_properties.append((f"budget:{self.gate.expr}", outcome.verdict))
        if outcome.verdict == "inconclusive":
            pytest.skip(f"inconclusive: {outcome.message}")
        if outcome.verdict != "pass":
            raise EvalsuiteFailure(outcome.message)


def collect_budget_items(budget: SessionBudget, parent: pytest.Session, anchor: Path) -> list[pytest.Item]:
    from ..gating.items import DatasetCollector

    root = DatasetCollector.from_parent(parent, name="evalsuite-budget", path=anchor, nodeid="evalsuite-budget")
    items: list[pytest.Item] = []
    for dp in budget.state.datasets:
        node = DatasetCollector.from_parent(root, name=dp.name)
        for gate in [None, *budget.gates]:
            name = "budget" if gate is None else f"budget[{gate.expr}]"
            item = BudgetItem.from_parent(
                node, name=name, state=budget.state, dataset=dp.name, budget=budget, gate=gate
            )
            item.add_marker("evalsuite")
            items.append(item)
    return items


PYTEST_PART = PytestPart(PLUGIN_OPTIONS, take_request, SessionBudget)
