"""A gated session and its release history (`evalsuite/history/`): the gates judged against earlier releases
(``max_drop_from_first``, ``max_drop_from_best``, ``trend``), the record each dataset adds at the end, and the
Markdown verdict summary.

The selection of earlier releases and why one cannot be compared live in `history/anchors.py`; which releases
a kind compares with, how it names them and its verdict in `history_kinds.py`; this module pairs the two sides
and turns a session into records and summary rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import SpecError
from ..history.anchors import Anchor, Candidate
from ..history.record import HistoryRecord, calling_commit, compact, metric_values, now
from ..history.store import HistoryStore
from ..history.summary import SummaryGate, summary_markdown, write_summary
from .gates import Gate, Outcome, Scores
from .history_kinds import HistoryKind
from .judge import gather_evidence, judge_gate
from .kinds import kind_of
from .ledger import GateRecord

if TYPE_CHECKING:
    from ..run.pipeline import Prepared
    from ..run.result import Result
    from .plan import SessionPlan


# what a new release changes: with a release history, a refreshed baseline is the previous release, so the contract
# item compares every other field with it (`GateSession.contract_problems`); the policy says so in a note
RELEASE_FIELDS = ("model_revision", "tokenizer_revision")


def is_history_gate(gate: Gate) -> bool:
    return kind_of(gate).against == "history"


def check_history_gates(gates: Sequence[Gate], history: Path | None, dataset: str) -> None:
    """A history gate needs a history directory: a usage error before anything is encoded."""
    named = [g.expr for g in gates if is_history_gate(g)]
    if named and history is None:
        raise SpecError(
            f'{dataset}: gate(s) {", ".join(named)} compare with earlier releases; set history = "DIR" in '
            "evalsuite.toml or pass --history DIR"
        )


def check_history(plan: SessionPlan) -> None:
    """Before anything loads: every history gate has a history directory, which can be written and whose records
    can be read (a corrupt or newer record is an error naming its file now, not after encoding)."""
    for dp in plan.datasets:
        check_history_gates(dp.gates, plan.history, dp.name)
    if plan.history is not None:
        store = HistoryStore(plan.history)
        store.check_writable()
        store.records()


def candidate_of(name: str, prepared: Prepared) -> Candidate:
    c = prepared.contract
    return Candidate(c.model, c.model_revision, name, prepared.dataset.identity.sha256, c.to_dict())


def history_kind(gate: Gate) -> HistoryKind:
    """The kind of a gate judged against the release history (what it compares with is the kind's to say)."""
    kind = kind_of(gate)
    if not isinstance(kind, HistoryKind):
        raise SpecError(f"gate {gate.expr!r}: {kind.name} is not judged against the release history")
    return kind


def anchor_of(gate: Gate, records: Sequence[HistoryRecord], candidate: Candidate, pinned: str | None) -> Anchor:
    return history_kind(gate).find_anchor(gate, records, candidate, pinned)


def anchor_label(gate: Gate, anchor: Anchor) -> str:
    """How messages name the side a history gate compares with."""
    return history_kind(gate).anchor_label(gate, anchor) if anchor.records else "history"


def judge_history_gate(
    gate: Gate, candidate: Scores, records: Sequence[HistoryRecord], who: Candidate, pinned: str | None
) -> Outcome:
    """The outcome of one history gate: paired with the anchor release, or inconclusive saying why it cannot be."""
    if gate.metric not in candidate.metrics:
        raise SpecError(f"gate {gate.expr!r}: metric {gate.metric} was not computed; add it to --metrics")
    value = candidate.metrics[gate.metric]
    anchor = anchor_of(gate, records, who, pinned)
    if anchor.why is not None:
        return Outcome(gate, "inconclusive", value, note=anchor.why)
    own = history_kind(gate).judge_anchor(gate, candidate, anchor)
    if own is not None:
        return own
    if not anchor.records:
        return Outcome(gate, "pass", value, note="no earlier release is recorded: this one is the first")
    rec = anchor.records[0]
    label = anchor_label(gate, anchor)
    reference = Scores(label, {m: v.value for m, v in rec.metrics.items()}, rec.per_query_map())
    outcome = judge_gate(gate, candidate, reference, gather_evidence(gate, candidate, reference))
    return replace(outcome, note=anchor.note) if anchor.note and outcome.note is None else outcome


# -- the end of the session -------------------------------------------------------------------------------
def record_of(
    name: str, prepared: Prepared, result: Result, outcomes: Sequence[GateRecord], labels: Mapping[str, str]
) -> HistoryRecord:
    """The dataset's history record: the candidate's metrics with CIs, its per-query scores, every gate's verdict
    (``labels``: what each history gate compared with, keyed ``dataset/gate``)."""
    from ..history.record import GateVerdict

    c = prepared.contract
    qids, scores = compact(result.per_query)
    gates = []
    for r in outcomes:
        o = r.outcome
        ci = o.comparison.ci if o.comparison is not None else None
        gates.append(
            GateVerdict(
                o.gate.expr,
                o.gate.kind,
                o.gate.metric,
                o.gate.threshold,
                o.verdict,
                o.reference,
                o.delta,
                None if ci is None else ci.low,
                None if ci is None else ci.high,
                labels.get(f"{name}/{o.gate.expr}"),
                kind_of(o.gate).pass_line(o.gate.threshold, o.reference),
            )
        )
    commit, commit_source = calling_commit()
    return HistoryRecord(
        model=c.model,
        revision=c.model_revision,
        dataset=name,
        dataset_sha256=prepared.dataset.identity.sha256,
        contract=c.to_dict(),
        contract_fingerprint=c.fingerprint(),
        metrics=metric_values(result.per_query, result.metrics),
        query_ids=qids,
        per_query=scores,
        gates=tuple(gates),
        recorded_at=now(),
        commit=commit,
        commit_source=commit_source,
        source=prepared.model.location,
    )


def summary_gates(outcomes: Mapping[str, Sequence[GateRecord]], labels: Mapping[str, str]) -> list[SummaryGate]:
    out = []
    for name, records in outcomes.items():
        for r in records:
            o = r.outcome
            ci = o.comparison.ci if o.comparison is not None else None
            out.append(
                SummaryGate(
                    name,
                    o.gate.expr,
                    o.verdict,
                    labels.get(f"{name}/{o.gate.expr}") or ("baseline" if o.gate.needs_reference else None),
                    None if ci is None else ci.delta,
                    None if ci is None else ci.low,
                    None if ci is None else ci.high,
                    o.losers,
                    o.note,
                )
            )
    return out


@dataclass(frozen=True)
class HistoryWrite:
    """What the end of a session writes beside its reports: one history record per dataset, and the summary."""

    store: HistoryStore | None
    records: tuple[HistoryRecord, ...]
    summary: str
    summary_path: Path | None
    gated: bool = True  # a session that judged no gate (a baseline refresh) adds nothing to $GITHUB_STEP_SUMMARY

    def write(self) -> list[Path]:
        paths = [self.store.put(r) for r in self.records] if self.store is not None else []
        return paths + write_summary(self.summary, self.summary_path, step_summary=self.gated)


def history_write(
    history: Path | None,
    summary_path: Path | None,
    reports_dir: Path,
    datasets: Sequence[tuple[str, Prepared, Result | None]],
    outcomes: Mapping[str, Sequence[GateRecord]],
    labels: Mapping[str, str],
) -> HistoryWrite:
    records = tuple(
        record_of(name, prepared, result, outcomes.get(name, ()), labels)
        for name, prepared, result in datasets
        if result is not None and history is not None
    )
    gates = summary_gates(outcomes, labels)
    text = summary_markdown(gates, reports_dir=reports_dir, history_dir=history)
    return HistoryWrite(
        HistoryStore(history) if history is not None else None, records, text, summary_path, bool(gates)
    )
