"""The pytest items the plugin collects: contract, integrity, one per gate (and sweep cells)."""

from __future__ import annotations

from typing import Any

import pytest

from .errors import EvalsuiteError
from .gate_session import GateSession
from .gates import Gate, Outcome, Scores, evaluate_gate, explain


class EvalsuiteFailure(AssertionError):
    """A gate or check failed; the message is the whole report (no traceback is shown)."""


class DatasetCollector(pytest.Collector):
    """Groups the items of one dataset: ``evalsuite/<dataset>/<item>``."""

    def collect(self) -> list[pytest.Item]:  # items are created by the plugin, not discovered
        return []


class EvalsuiteItem(pytest.Item):
    def __init__(self, *, state: GateSession, dataset: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state = state
        self.dataset = dataset

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, (EvalsuiteFailure, EvalsuiteError)):
            return f"[evalsuite {self.dataset}] {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"evalsuite {self.dataset}: {self.name}"


class ContractItem(EvalsuiteItem):
    """Revisions, tokenizer, contract and dataset sha256 match the baseline's (or reference's) manifest."""

    def runtest(self) -> None:
        __tracebackhide__ = True
        prepared = self.state.prepared[self.dataset]
        c = prepared.contract
        for key, value in (("model_revision", c.model_revision), ("tokenizer_revision", c.tokenizer_revision),
                           ("contract_fingerprint", c.fingerprint()),
                           ("dataset_sha256", prepared.dataset.identity.sha256)):
            self.user_properties.append((key, value))
        if self.state.plan.update_baseline:
            self.state.result(self.dataset)  # writes the baseline
            return
        problems = self.state.contract_problems(self.dataset)
        if problems:
            ref = self.state.reference(self.dataset)
            where = f" ({self.state.dataset_plan(self.dataset).baseline})" if ref and ref.label == "baseline" else ""
            raise EvalsuiteFailure(
                f"contract differs from the {ref.label if ref else 'reference'}{where}:\n  "
                + "\n  ".join(problems)
                + "\nresults are not comparable; re-run with --update-baseline if the change is intended")


class IntegrityItem(EvalsuiteItem):
    """Every vector finite, non-zero, of the contract's dimension, with norms as the contract says."""

    def runtest(self) -> None:
        __tracebackhide__ = True
        from .vectors import check_vectors

        result = self.state.result(self.dataset)
        c = result.contract
        problems = []
        for role, vectors, ids in (("query", result.query_vectors, result.dataset.query_ids),
                                   ("document", result.doc_vectors, result.dataset.doc_ids)):
            report = check_vectors(vectors, dim=c.dim, normalized=c.normalize)
            self.user_properties.append((f"{role}_norm_range", f"{report.min_norm:.6f}..{report.max_norm:.6f}"))
            problems += [f"{role} vectors: {p}" for p in report.problems(ids)]
        if problems:
            raise EvalsuiteFailure("vector integrity: " + "; ".join(problems))


def gate_outcome(item: EvalsuiteItem, gate: Gate, candidate: Scores, reference: Scores | None,
                 reference_label: str) -> Outcome:
    """Evaluate one gate for an item: record it and attach JUnit properties."""
    outcome = evaluate_gate(gate, candidate, reference)
    item.state.record(item.dataset, outcome, item.name)
    item.user_properties.append((gate.metric, round(outcome.candidate, 6)))
    if outcome.reference is not None:
        item.user_properties.append((f"{gate.metric}:{reference_label.split()[0]}", round(outcome.reference, 6)))
    if outcome.p_value is not None:
        item.user_properties.append((f"{gate.metric}:p_value", round(outcome.p_value, 6)))
    return outcome


class GateItem(EvalsuiteItem):
    def __init__(self, *, gate: Gate, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate

    def runtest(self) -> None:
        __tracebackhide__ = True
        if self.state.plan.update_baseline:
            pytest.skip("baseline updated in this session; gates are skipped, not passed")
        result = self.state.result(self.dataset)
        ref = self.state.reference(self.dataset) if self.gate.needs_reference else None
        if self.gate.needs_reference and ref is None:
            raise EvalsuiteFailure(f"gate {self.gate.expr} compares against a reference; pass --baseline FILE "
                                   "or --reference-rev REV")
        label = ref.label if ref else "baseline"
        outcome = gate_outcome(self, self.gate, Scores("candidate", result.metrics, result.per_query),
                               ref.scores if ref else None, label)
        if not outcome.passed:
            raise EvalsuiteFailure(explain(outcome, result.dataset.queries, label))


class SweepCellItem(EvalsuiteItem):
    """One sweep cell, gated against the sweep's base contract."""

    def __init__(self, *, cell: str, gates: tuple[Gate, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.gates = gates

    def runtest(self) -> None:
        __tracebackhide__ = True
        sweep = self.state.sweep(self.dataset)
        cell, base = sweep.cell(self.cell), sweep.base
        self.user_properties.append(("cell", self.cell))
        failures = []
        for gate in self.gates:
            outcome = gate_outcome(self, gate, Scores("cell", cell.result.metrics, cell.result.per_query),
                                   Scores("base", base.metrics, base.per_query), "base")
            if not outcome.passed:
                failures.append(explain(outcome, base.dataset.queries, "base"))
        if failures:
            raise EvalsuiteFailure(f"sweep cell {self.cell} against the base contract:\n" + "\n".join(failures))


class CanaryItem(EvalsuiteItem):
    """One check of a served endpoint against the local reference of the same pinned revision."""

    def __init__(self, *, check: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        __tracebackhide__ = True
        from .canary.checks import run_check

        verdict = run_check(self.check, self.state.canary_context(self.dataset))
        self.state.record_verdict(self.dataset, verdict)
        self.user_properties.append((f"canary:{self.check}", verdict.status))
        if verdict.passed is None:
            pytest.skip(verdict.message)
        if not verdict.passed:
            raise EvalsuiteFailure(verdict.message)
