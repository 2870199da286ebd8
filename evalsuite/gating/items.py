"""The pytest items of a gated session: contract, integrity, one per gate, one per sweep cell,
one per canary check; and :func:`collect_items`, which builds them from the session's policy."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from ..base.errors import EvalsuiteError
from .gates import Gate, Outcome
from .judge import explain
from .ledger import GateRecord, SweepCellRecord
from .session import GateSession

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr


# A contract change is either the fault (a deployment drifted) or a deliberate change: the advice names both, and
# updating the baseline comes last, after the gates' deltas were judged, never as the fix for a regression.
CONTRACT_REMEDY = (
    "the gates below still compare the two runs, across this difference. Not intended: that is the fault; set each "
    "field above back to the reference's value. Intended (a new revision or contract): judge it by the gate items' "
    "deltas first; only if they are acceptable, record the new contract with --update-baseline and review and commit "
    "the baseline file"
)


def skip(item: pytest.Item, reason: str) -> NoReturn:
    """Skip the running item, reported at the item with its name (``-rs``), not inside pytest's runner."""
    raise pytest.skip.Exception(f"{item.name}: {reason}", _use_item_location=True)


class EvalsuiteFailure(AssertionError):
    """A gate or check failed; the message is the whole report (no traceback is shown)."""


class DatasetCollector(pytest.Collector):
    """Groups the items of one dataset: ``evalsuite/<dataset>/<item>``."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:  # items are made by collect_items
        return []


class EvalsuiteItem(pytest.Item):
    def __init__(self, *, state: GateSession, dataset: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state = state
        self.dataset = dataset

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, (EvalsuiteFailure, EvalsuiteError)):
            return f"[evalsuite {self.dataset}] {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # line 0: the spec file (or the root) is where an item comes from; a skip is reported there, by item name
        return self.path, 0, f"evalsuite {self.dataset}: {self.name}"


class ContractItem(EvalsuiteItem):
    """Revisions, tokenizer, contract and dataset sha256 match the baseline's (or reference's) manifest."""

    def runtest(self) -> None:
        __tracebackhide__ = True
        prepared = self.state.prepared[self.dataset]
        c = prepared.contract
        for key, value in (
            ("model_revision", c.model_revision),
            ("tokenizer_revision", c.tokenizer_revision),
            ("contract_fingerprint", c.fingerprint()),
            ("dataset_sha256", prepared.dataset.identity.sha256),
        ):
            self.user_properties.append((key, value))
        if self.state.plan.update_baseline:
            self.state.result(self.dataset)  # writes the baseline
            return
        problems = self.state.contract_problems(self.dataset)
        if problems:
            ref = self.state.reference(self.dataset)
            where = f" ({ref.path})" if ref is not None and ref.path is not None else ""
            raise EvalsuiteFailure(
                f"contract differs from the {ref.label if ref else 'reference'}{where}:\n  "
                + "\n  ".join(problems)
                + "\n"
                + CONTRACT_REMEDY
            )


class IntegrityItem(EvalsuiteItem):
    """Every vector finite, non-zero, of the contract's dimension, with norms as the contract says."""

    def runtest(self) -> None:
        __tracebackhide__ = True
        from ..retrieval.vectors import check_vectors
        from ..run.retrieve import needs_vectors

        result = self.state.result(self.dataset)
        c = result.contract
        if not needs_vectors(c):  # a retriever that reads texts only (bm25): no vector was made to check
            self.user_properties.append(("vectors", f"none: retrieval {c.retrieval} reads the texts"))
            return
        problems = []
        for role, vectors, ids in (
            ("query", result.query_vectors, result.dataset.query_ids),
            ("document", result.doc_vectors, result.dataset.doc_ids),
        ):
            if vectors is not None:
                report = check_vectors(vectors, dim=c.dim, normalized=c.normalize)
            elif role == "document" and result.doc_integrity is not None:  # a block-wise run: checked from the store
                report = result.doc_integrity
            else:
                problems.append(f"{role} vectors were not kept in the result")
                continue
            self.user_properties.append((f"{role}_norm_range", f"{report.min_norm:.6f}..{report.max_norm:.6f}"))
            problems += [f"{role} vectors: {p}" for p in report.problems(ids)]
        if problems:
            raise EvalsuiteFailure("vector integrity: " + "; ".join(problems))


def _properties(item: EvalsuiteItem, outcome: Outcome, side: str) -> None:
    """JUnit properties of one gate's outcome: values, verdict, and the delta with its uncertainty (a gate on a
    slice or the reranked stage names them: ``ndcg@10[topic=finance]:delta``, ``ndcg@10[stage=reranked]:delta``)."""
    metric = outcome.gate.bracketed
    props: list[tuple[str, object]] = [(metric, round(outcome.candidate, 6))]
    if outcome.reference is not None:
        props.append((f"{metric}:{side}", round(outcome.reference, 6)))
    c = outcome.comparison
    if c is not None:
        props += [
            (f"{metric}:delta", round(c.ci.delta, 6)),
            (f"{metric}:ci_low", round(c.ci.low, 6)),
            (f"{metric}:ci_high", round(c.ci.high, 6)),
            (f"{metric}:ci_confidence", c.ci.confidence),
            (f"{metric}:mde", round(c.mde, 6)),
            (f"{metric}:sign_flip_p", round(c.p_value, 6)),
        ]
    if outcome.p_value is not None:
        props.append((f"{metric}:p_value", round(outcome.p_value, 6)))
    if outcome.evidence.p_adjusted is not None and outcome.evidence.correction == "holm":
        props.append((f"{metric}:p_holm", round(outcome.evidence.p_adjusted, 6)))
    if outcome.queries_needed is not None:
        props.append((f"{metric}:queries_needed", outcome.queries_needed))
    if outcome.n_queries is not None:
        props.append((f"{metric}:slice_queries", outcome.n_queries))
    props.append((f"{outcome.gate.expr}:verdict", outcome.verdict))
    item.user_properties.extend(props)


class GateItem(EvalsuiteItem):
    def __init__(self, *, gate: Gate, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate

    def runtest(self) -> None:
        __tracebackhide__ = True
        if self.state.plan.update_baseline:
            skip(self, "baseline updated in this session; gates are skipped, not passed")
        result = self.state.result(self.dataset)
        ref = self.state.reference(self.dataset) if self.gate.needs_reference else None
        if self.gate.needs_reference and ref is None:
            raise EvalsuiteFailure(
                f"gate {self.gate.expr} compares against a reference; pass --baseline FILE or --reference-rev REV"
            )
        outcome = self.state.verdicts()[self.state.verdict_key(self.dataset, self.gate)]
        if isinstance(outcome, EvalsuiteError):
            raise outcome
        self.state.ledger.add(GateRecord(self.dataset, self.name, outcome))
        ref_label, cand_label = self.state.labels(self.dataset, self.gate)
        self.user_properties.append(("stage", outcome.gate.stage))
        _properties(self, outcome, ref.kind if ref else ref_label.replace(" ", "_"))
        message = explain(outcome, result.dataset.queries, ref_label, cand_label)
        if outcome.verdict == "fail":
            raise EvalsuiteFailure(message)
        if outcome.verdict == "inconclusive":
            on = self.state.plan.verdicts.inconclusive
            text = f"INCONCLUSIVE ({on}: --inconclusive {on}): {message}"
            if on == "skip":
                skip(self, text)
            if on == "xfail":
                pytest.xfail(text)
            raise EvalsuiteFailure(text)


class SweepCellItem(EvalsuiteItem):
    """One sweep cell, gated against the sweep's base contract."""

    def __init__(self, *, cell: str, gates: tuple[Gate, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cell = cell
        self.gates = gates

    def runtest(self) -> None:
        __tracebackhide__ = True
        sweep = self.state.sweeps.result(self.dataset)
        base = sweep.base
        self.user_properties.append(("cell", self.cell))
        failures: list[str] = []
        inconclusive: list[str] = []
        verdicts = self.state.sweeps.verdicts(self.dataset)
        for gate in self.gates:
            outcome = verdicts[f"{self.cell}/{gate.expr}"]
            if isinstance(outcome, EvalsuiteError):
                raise outcome
            self.state.ledger.add(SweepCellRecord(self.dataset, self.name, self.cell, outcome))
            _properties(self, outcome, "base")
            if outcome.verdict == "fail":
                failures.append(explain(outcome, base.dataset.queries, "base"))
            elif outcome.verdict == "inconclusive":
                inconclusive.append("INCONCLUSIVE: " + explain(outcome, base.dataset.queries, "base"))
        on = self.state.plan.verdicts.inconclusive
        if failures or (inconclusive and on == "fail"):
            raise EvalsuiteFailure(
                f"sweep cell {self.cell} against the base contract:\n" + "\n".join(failures + inconclusive)
            )
        if inconclusive:
            text = f"sweep cell {self.cell} (--inconclusive {on}): " + "\n".join(inconclusive)
            skip(self, text) if on == "skip" else pytest.xfail(text)


class CanaryItem(EvalsuiteItem):
    """One check of a served endpoint (an embedding check, or a reranker check with ``reranker``) against the
    local reference of the same pinned revision. With several ``--endpoint`` URLs (a fleet) the item runs its
    check against each member on its own and fails naming every failing member (``member 2 of 3, URL: ...``)
    with its cause: one item per check, however large the fleet."""

    def __init__(self, *, check: str, reranker: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check
        self.reranker = reranker

    def runtest(self) -> None:
        __tracebackhide__ = True
        from ..canary.reranker.registry import run_rerank_check

        if self.reranker:
            verdict = run_rerank_check(self.check, self.state.canary_items.rerank_context(self.dataset))
            self.state.canary_items.record(self.dataset, verdict)
            self.user_properties.append((f"rerank-canary:{self.check}", verdict.status))
            if verdict.passed is None:
                pytest.skip(verdict.message)
            if not verdict.passed:
                raise EvalsuiteFailure(verdict.message)
            return
        members = self.state.canary_members
        failures = [failure for k in range(len(members)) if (failure := self._member(k, len(members))) is not None]
        if failures:
            raise EvalsuiteFailure("\n".join(failures))

    def _member(self, k: int, size: int) -> str | None:
        """Run the check against member ``k`` (from 0); its failure text (the message and the cause), or None.
        A skipped check skips the item (the settings skip it for every member alike)."""
        import dataclasses

        from ..canary.diagnosis import diagnosis_for
        from ..canary.embedding.registry import run_check

        ctx = self.state.canary_items.context(self.dataset, k)
        verdict = run_check(self.check, ctx)
        name = f"canary:{self.check}" if size == 1 else f"canary:{self.check}:member{k + 1}"
        label = "" if size == 1 else f"member {k + 1} of {size}, {ctx.settings.endpoint}: "
        self.state.canary_items.record(self.dataset, dataclasses.replace(verdict, message=label + verdict.message))
        self.user_properties.append((name, verdict.status))
        if verdict.passed is None:
            pytest.skip(verdict.message)
        if verdict.passed:
            return None
        diagnosis = diagnosis_for(ctx, verdict)
        if diagnosis is None:
            return label + verdict.message
        self.user_properties.append((f"{name}:cause", diagnosis.sentence()))
        return f"{label}{verdict.message}\n{label}{diagnosis.sentence()}"


def collect_items(state: GateSession, parent: pytest.Session, anchor: Path) -> list[pytest.Item]:
    """Every item of the session, dataset by dataset, marked ``evalsuite``, then its parts' items."""
    root = DatasetCollector.from_parent(parent, name="evalsuite", path=anchor, nodeid="evalsuite")
    items: list[pytest.Item] = []
    for dp in state.datasets:
        policy = state.dataset_policy(dp.name)
        node = DatasetCollector.from_parent(root, name=dp.name)
        new: list[pytest.Item] = [
            ContractItem.from_parent(node, name="contract", state=state, dataset=dp.name),
            IntegrityItem.from_parent(node, name="integrity", state=state, dataset=dp.name),
        ]
        new += [
            GateItem.from_parent(node, name=f"gate[{g.expr}]", state=state, dataset=dp.name, gate=g)
            for g in policy.gates
        ]
        new += [
            SweepCellItem.from_parent(
                node, name=f"sweep[{cell.name}]", state=state, dataset=dp.name, cell=cell.name, gates=policy.sweep_gates
            )
            for cell in state.sweeps.cells(dp.name)
        ]
        new += [
            CanaryItem.from_parent(node, name=f"canary[{check}]", state=state, dataset=dp.name, check=check)
            for check in state.canary_items.checks(dp.name)
        ]
        new += [
            CanaryItem.from_parent(
                node, name=f"rerank-canary[{check}]", state=state, dataset=dp.name, check=check, reranker=True
            )
            for check in state.canary_items.rerank_checks(dp.name)
        ]
        for item in new:
            item.add_marker("evalsuite")
        items += new
    for part in state.parts.values():  # the other jobs' items (the audit's, the budget's), each under its own root
        items += part.items(parent, anchor)
    return items
