"""Open an index, run the audit family's checks (the check engine's runner), and compare a cutover pair."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.memo import Memo
from ..checks import CheckOutcome, CheckOutcomes
from .settings import AuditSettings
from .source import SourceOptions

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..encode.contract_encoder import ContractEncoder
    from ..run.prepared import Prepared
    from .context import AuditContext
    from .source import IndexInfo

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class AuditTarget:
    """One index to audit: its URI, how to open it, its manifest and the endpoint it is served with."""

    uri: str
    options: SourceOptions = field(default_factory=SourceOptions)
    manifest: Path | None = None
    endpoint: str | None = None
    role: str = "index"
    client: Mapping[str, Any] = field(default_factory=dict)  # how to call the endpoint (RunSpec's client fields)


@dataclass(frozen=True)
class AuditOutcome(CheckOutcomes):
    """One index's verdicts (in the order of :func:`~.checks.audit_checks`)."""

    role: str
    info: IndexInfo
    settings: AuditSettings
    contract: dict[str, Any]
    dataset: dict[str, Any]
    verdicts: tuple[CheckOutcome, ...]
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def verdict(self, name: str) -> CheckOutcome | None:
        return next((v for v in self.verdicts if v.check == name), None)

    def diagnosis_sentences(self) -> list[str]:
        v = self.verdict("fidelity")
        d = v.details.get("diagnosis") if v is not None else None
        return list(d["sentences"]) if isinstance(d, dict) else []

    def worst_ids(self) -> list[dict[str, Any]]:
        v = self.verdict("fidelity")
        return list(v.details.get("worst", [])) if v is not None else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "passed": self.passed,
            "created": self.created,
            "index": {**dataclasses.asdict(self.info), "search_params": dict(self.info.search_params)},
            "settings": self.settings.to_dict(),
            "contract": self.contract,
            "dataset": self.dataset,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "diagnosis": self.diagnosis_sentences(),
        }


@dataclass(frozen=True)
class AuditReport:
    """What `evalsuite audit` answers: the audited index, the baseline of a cutover, and their comparison."""

    index: AuditOutcome
    baseline: AuditOutcome | None = None
    cutover: CheckOutcome | None = None

    @property
    def outcomes(self) -> tuple[AuditOutcome, ...]:
        return (self.index,) if self.baseline is None else (self.index, self.baseline)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.outcomes) and (self.cutover is None or self.cutover.passed is not False)

    @property
    def exit_status(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "family": "audit",
            "passed": self.passed,
            "index": self.index.to_dict(),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "cutover": None if self.cutover is None else self.cutover.to_dict(),
        }


def reference_encoder(prepared: Prepared) -> Callable[[], Encoder]:
    """The pinned reference's encoder, made (and its model loaded) once, on first use, whichever thread asks
    (the one compute-once memo, ``base/memo.py``)."""
    from ..run.pipeline import make_encoder

    memo = Memo()

    def encoder() -> Encoder:
        return memo.get("reference", lambda: make_encoder(prepared))

    return encoder


def endpoint_encoder(
    prepared: Prepared, url: str, client: Mapping[str, Any] | None = None
) -> Callable[[], ContractEncoder]:
    """The production query path: the queries encoded by the served endpoint under the same contract (``client``:
    how to call it, RunSpec's endpoint client fields: ``api_key_env``, ``served_model``, ...); made once, on first
    use, whichever thread asks."""
    from ..encode.contract_encoder import ContractEncoder
    from ..run.pipeline import make_encoder

    spec = dataclasses.replace(prepared.spec, endpoints=(url,), **dict(client or {}))
    served = dataclasses.replace(prepared, spec=spec)

    memo = Memo()

    def encoder() -> ContractEncoder:
        return memo.get("endpoint", lambda: ContractEncoder(make_encoder(served), prepared.contract))

    return encoder


def open_context(
    target: AuditTarget, settings: AuditSettings, prepared: Prepared, encoder: Callable[[], Encoder]
) -> AuditContext:
    """The store opened (its typed errors first) and the context its checks share."""
    from ..encode.http import Deadline
    from .context import DEADLINE_WHAT, AuditContext
    from .stores import open_source

    source = open_source(target.uri, target.options)
    try:
        source.info()  # an unreadable store fails here, before any check
    except BaseException:
        source.close()
        raise
    return AuditContext(
        settings,
        source,
        prepared,
        Deadline.after(settings.deadline, DEADLINE_WHAT),
        encoder,
        manifest=target.manifest,
        query_encoder=endpoint_encoder(prepared, target.endpoint, target.client) if target.endpoint else None,
        role=target.role,
    )


def run_audit(ctx: AuditContext, on_verdict: Callable[[CheckOutcome], None] | None = None) -> AuditOutcome:
    """Every audit check in order under the check engine's one error policy; the store is closed afterwards."""
    from ..checks import run_checks
    from .checks import audit_checks

    info = ctx.info()
    ctx.prefetch()  # the model loads (and the sample encodes) while the structure checks stream the vectors
    verdicts = run_checks(audit_checks(), ctx, on_verdict, close=False)
    return AuditOutcome(
        role=ctx.role,
        info=info,
        settings=ctx.settings,
        contract=ctx.prepared.contract.to_dict(),
        dataset=ctx.prepared.dataset.identity.to_dict(),
        verdicts=verdicts,
    )


def compare_cutover(new: AuditContext, old: AuditContext) -> CheckOutcome:
    """The new index against the old one, query by query through each one's own search as deployed, under the
    audit's gates (default: every metric non-inferior within the margin, paired bootstrap CI), so the switch (and
    its rollback) is proven."""
    from .gates import audit_gates, judge_sides

    a_side, b_side = new.index_retrieval(), old.index_retrieval()
    metrics = [m for m in new.prepared.spec.metrics if m in a_side.per_query and m in b_side.per_query]
    gates = audit_gates(new.settings.gates, metrics, new.settings.max_delta)
    outcomes, rows = judge_sides(
        gates,
        ("new", a_side.result_metrics, a_side.per_query),
        ("old", b_side.result_metrics, b_side.per_query),
        new.prepared.dataset.queries,
    )
    details = {"margin": new.settings.max_delta, "gates": rows, "metrics": {r["metric"]: r for r in rows.values()}}
    listed = "; ".join(
        f"{expr}: new {r['new']:.4f} vs old {r['old'] or 0:.4f}"
        + (
            f", delta {r['delta']:+.4f} (95% CI {r['ci_low']:+.4f} .. {r['ci_high']:+.4f})"
            if r["delta"] is not None
            else ""
        )
        + f" {r['decision'].upper()}"
        for expr, r in rows.items()
    )
    if any(not o.passed for o in outcomes):
        return CheckOutcome(
            "cutover", False, f"cutover: the new index fails the gates against the old: {listed}", details
        )
    return CheckOutcome("cutover", True, f"cutover: the new index passes the gates against the old: {listed}", details)
