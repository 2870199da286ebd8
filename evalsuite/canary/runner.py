"""Run every applicable check of a family against one endpoint and collect the verdicts (used by the CLI):
the embedding checks (:func:`run_canary`) or the reranker's (:func:`run_rerank_canary`), one outcome shape."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from ..checks import Check, CheckOutcome, CheckOutcomes, run_checks
from ..encode.secret import cut
from .embedding.context import CanaryContext
from .embedding.registry import check_names, get_check
from .embedding.settings import CanarySettings
from .reranker.registry import RERANK_CHECKS

if TYPE_CHECKING:
    from ..diagnose.score import Diagnosis
    from ..encode.base import Encoder
    from ..run.pipeline import Prepared
    from .reranker.context import RerankCanaryContext
    from .reranker.settings import RerankCanarySettings
    from .sparse.context import SparseCanaryContext
    from .sparse.diagnosis import SparseDiagnosis
    from .sparse.settings import SparseCanarySettings
    from .triage import Link

SCHEMA_VERSION = 2  # 2: a fleet's canary.json holds its members (evalsuite.canary.report.fleet_data)
Family = Literal["embedding", "reranker", "sparse"]


@dataclass(frozen=True)
class CanaryOutcome(CheckOutcomes):
    """One canary's verdicts; ``family`` says which checks ran (the contract is the reranker's for ``reranker``)."""

    settings: CanarySettings | RerankCanarySettings | SparseCanarySettings
    contract: dict[str, Any]
    dataset: dict[str, Any]
    served_model: str | None
    verdicts: tuple[CheckOutcome, ...]
    family: Family = "embedding"
    request_fields: dict[str, int | bool] = field(default_factory=dict)  # sent with every request beyond the API's
    diagnoses: tuple[Diagnosis | SparseDiagnosis, ...] = ()
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "family": self.family,
            "created": self.created,
            "passed": self.passed,
            "endpoint": self.settings.endpoint,
            "served_model": self.served_model,
            "settings": self.settings.to_dict(),
            "contract": self.contract,
            "dataset": self.dataset,
            "request_fields": self.request_fields,
            "verdicts": [v.to_dict() for v in self.verdicts],
            "diagnosis": [d.to_dict() for d in self.diagnoses],
            "triage": [link.to_dict() for link in self.triage()],
        }

    def triage(self) -> list[Link]:
        from .triage import checklist

        return checklist(self.verdicts, self.diagnoses, family_checks(self.family))


def family_checks(family: Family) -> tuple[Check[Any], ...]:
    """The checks of ``family`` in run order (the embedding canary's with its installed plug-ins)."""
    from .embedding.registry import canary_checks
    from .sparse.registry import SPARSE_CHECKS

    if family == "reranker":
        return RERANK_CHECKS
    return SPARSE_CHECKS if family == "sparse" else canary_checks()


def local_context(settings: CanarySettings, prepared: Prepared) -> CanaryContext:
    """A context whose reference is the local encoder of ``prepared`` (one model load, shared)."""
    from ..encode.contract_encoder import ContractEncoder
    from ..run.pipeline import make_encoder, run

    @lru_cache(maxsize=1)
    def encoder() -> Encoder:
        return make_encoder(prepared)

    return CanaryContext(
        settings,
        prepared,
        reference_encoder=lambda: ContractEncoder(encoder(), prepared.contract),
        reference_result=lambda: run(prepared.spec, prepared, encoder()),
    )


def next_round(previous: CanaryContext) -> CanaryContext:
    """A fresh context for another round against the same endpoint: new clients, new requests, nothing
    served reused; the local reference (model and dataset run) is the previous round's, computed once."""
    return member_context(previous, previous.settings)


def member_context(first: CanaryContext, settings: CanarySettings) -> CanaryContext:
    """A fresh context for ``settings``' endpoint (another member of a fleet, or another round): its own clients
    and requests; the local reference (model and dataset run) is ``first``'s, computed once for all."""
    return CanaryContext(settings, first.prepared, first.reference, first.reference_result)


def worst_round(outcomes: Sequence[CanaryOutcome]) -> CanaryOutcome:
    """The round with the most failed checks (the first of those); the rounds' exit status is its."""
    return max(outcomes, key=lambda o: sum(v.passed is False for v in o.verdicts))


def run_canary(ctx: CanaryContext, on_verdict: Callable[[CheckOutcome], None] | None = None) -> CanaryOutcome:
    """The embedding checks, then the diagnosis of any failure (the cause, tested against the reference)."""
    from .diagnosis import diagnoses_for

    try:
        verdicts = run_checks([get_check(name) for name in check_names(ctx.settings)], ctx, on_verdict, close=False)
        diagnoses = diagnoses_for(ctx, list(verdicts))
    finally:
        ctx.close()
    served = ctx.known_served_model()
    return CanaryOutcome(
        settings=ctx.settings,
        contract=ctx.contract.to_dict(),
        dataset=ctx.prepared.dataset.identity.to_dict(),
        served_model=None if served is None else cut(served),
        verdicts=verdicts,
        diagnoses=diagnoses,
    )


def run_rerank_canary(
    ctx: RerankCanaryContext, on_verdict: Callable[[CheckOutcome], None] | None = None
) -> CanaryOutcome:
    """The reranker checks (:data:`~.reranker.registry.RERANK_CHECKS`) against the served reranker."""
    verdicts = run_checks(RERANK_CHECKS, ctx, on_verdict)
    return CanaryOutcome(
        settings=ctx.settings,
        contract=ctx.contract.to_dict(),
        dataset=ctx.first.dataset.identity.to_dict(),
        served_model=ctx.settings.served_model,
        verdicts=verdicts,
        family="reranker",
        request_fields=dict(ctx.client.request_fields),
    )


def run_sparse_canary(
    ctx: SparseCanaryContext, on_verdict: Callable[[CheckOutcome], None] | None = None
) -> CanaryOutcome:
    """The sparse checks (:data:`~.sparse.registry.SPARSE_CHECKS`) against the served sparse endpoint, then the
    diagnosis of a failure (:mod:`.sparse.diagnosis`: which sparse departure the served vectors show)."""
    from .sparse.diagnosis import sparse_diagnoses
    from .sparse.registry import SPARSE_CHECKS

    try:
        verdicts = run_checks(SPARSE_CHECKS, ctx, on_verdict, close=False)
        diagnoses = sparse_diagnoses(ctx, verdicts)
    finally:
        ctx.close()
    return CanaryOutcome(
        settings=ctx.settings,
        contract=ctx.contract.to_dict(),
        dataset=ctx.prepared.dataset.identity.to_dict(),
        served_model=ctx.settings.served_model,
        verdicts=verdicts,
        family="sparse",
        request_fields={},
        diagnoses=diagnoses,
    )
