"""The release history of a gated session: the records as they were when the session began, and the history
gates' outcomes and labels against them (the judging itself is :mod:`.releases`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..history.record import HistoryRecord
    from ..run.prepared import Prepared
    from .gates import Gate, Outcome, Scores
    from .plan import SessionPlan
    from .shared import ComputeOnce


class HistoryHost(Protocol):
    """What the release history asks of its session (:class:`~.session.GateSession`)."""

    plan: SessionPlan
    prepared: dict[str, Prepared]
    shared: ComputeOnce


class SessionHistory:
    """``session.history``: the earlier releases a history gate compares the candidate with."""

    def __init__(self, session: HistoryHost) -> None:
        self.session = session

    def records(self) -> list[HistoryRecord]:
        """The release history as it was when the session began (its own records are written at the end)."""
        from ..history.store import HistoryStore

        plan = self.session.plan
        if plan.history is None:
            return []
        return self.session.shared.get("history-records", lambda: HistoryStore(plan.history or ".").records())[0]

    def outcome(self, name: str, gate: Gate, candidate: Scores) -> Outcome:
        """A history gate's outcome: the candidate paired with the earlier release(s) its kind compares with."""
        from .releases import candidate_of, judge_history_gate

        who = candidate_of(name, self.session.prepared[name])
        return judge_history_gate(gate, candidate, self.records(), who, self.session.plan.history_anchor)

    def label(self, name: str, gate: Gate) -> str:
        """How messages name the release(s) a history gate compares with."""
        from .releases import anchor_label, anchor_of, candidate_of

        who = candidate_of(name, self.session.prepared[name])
        return anchor_label(gate, anchor_of(gate, self.records(), who, self.session.plan.history_anchor))
