"""The end of a gated session: one :class:`~.report.SessionReport` from what the session computed and recorded
(on the controller, after the workers' ledgers are merged), without computing anything new."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..run.result import Result
from .deltas import comparisons, slice_moves_against
from .reference import Reference
from .report import SessionReport, dataset_report
from .stages import RerankedStage
from .verdicts import applied_statement

if TYPE_CHECKING:
    from .releases import HistoryWrite
    from .session import GateSession


def session_report(session: GateSession) -> SessionReport:
    """The report of the whole session."""
    from ..sweep.results import SweepResult

    statement = applied_statement(
        session.plan.verdicts, {dp.name: session.ledger.outcomes(dp.name) for dp in session.datasets}
    )
    datasets = []
    for dp in session.datasets:
        sweep, result = session.shared.peek(f"sweep-{dp.name}"), session.shared.peek(f"candidate-{dp.name}")
        reranked = session.shared.peek(f"reranked-{dp.name}")
        result = result if isinstance(result, Result) else None
        ref = reference_side(session, dp.name) if result is not None else None
        datasets.append(
            dataset_report(
                dp.name,
                session.plan.reports_dir / dp.name,
                result,
                sweep if isinstance(sweep, SweepResult) else None,
                session.ledger.candidate(dp.name),
                session.ledger.reference(dp.name),
                session.ledger.outcomes(dp.name),
                session.policy.notes,
                statement,
                comparisons(result, ref),
                slice_moves_against(result, ref, session.prepared[dp.name]),
                reranked if isinstance(reranked, RerankedStage) else None,
                session.ledger.reranked(dp.name, "reference"),
            )
        )
    return SessionReport(
        history=history_of(session),
        notes=session.policy.notes,
        canary=tuple(session.ledger.canary()),
        computations=tuple(session.ledger.computations()),
        baselines_written=tuple(session.ledger.baselines_written()),
        datasets=tuple(datasets),
        reports_dir=session.plan.reports_dir,
        statement=statement,
    )


def reference_side(session: GateSession, name: str) -> Reference | None:
    """The baseline or the computed reference run, without computing anything."""
    if name in session.baselines:
        return Reference.from_baseline(session.baselines[name])
    computed = session.shared.peek(f"reference-{name}")
    return Reference.from_result(computed) if isinstance(computed, Result) else None


def history_of(session: GateSession) -> HistoryWrite:
    """The session's history records (one per dataset whose candidate was computed, when ``--history`` is set) and its
    Markdown verdict summary."""
    from .ledger import GateRecord
    from .releases import history_write, is_history_gate

    outcomes = {
        dp.name: [r for r in session.ledger.outcomes(dp.name) if isinstance(r, GateRecord)] for dp in session.datasets
    }
    labels = {
        session.verdict_key(name, r.outcome.gate): session.history.label(name, r.outcome.gate)
        for name, records in outcomes.items()
        for r in records
        if is_history_gate(r.outcome.gate)
    }
    results = []
    for dp in session.datasets:
        result = session.shared.peek(f"candidate-{dp.name}")
        results.append((dp.name, session.prepared[dp.name], result if isinstance(result, Result) else None))
    plan = session.plan
    return history_write(plan.history, plan.summary_md, plan.reports_dir, results, outcomes, labels)
