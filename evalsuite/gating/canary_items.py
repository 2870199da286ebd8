"""The canary's items in a gated session (``--endpoint``, ``--reranker-endpoint``): which checks run on which
dataset, one context per dataset and fleet member (sharing the session's local reference), the outcomes
recorded in the session's ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from .ledger import CanaryRecord

if TYPE_CHECKING:
    from ..canary.embedding.context import CanaryContext
    from ..canary.embedding.settings import CanarySettings
    from ..canary.reranker.context import RerankCanaryContext
    from ..canary.reranker.settings import RerankCanarySettings
    from ..checks import CheckOutcome
    from ..encode.base import Encoder
    from ..run.prepared import Prepared
    from ..run.result import Result
    from .ledger import Ledger
    from .plan import DatasetPlan
    from .reranker import SessionReranker


class CanaryHost(Protocol):
    """What the canary's items ask of their session (:class:`~.session.GateSession`)."""

    canary: CanarySettings | None
    canary_members: tuple[CanarySettings, ...]
    rerank_canary: RerankCanarySettings | None
    reranker: SessionReranker | None
    prepared: dict[str, Prepared]
    ledger: Ledger

    @property
    def datasets(self) -> tuple[DatasetPlan, ...]: ...

    def encoder(self, prepared: Prepared) -> Encoder: ...

    def local_result(self, name: str) -> Result: ...


class SessionCanary:
    """``session.canary_items``: the canary checks of a gated session and their contexts."""

    def __init__(self, session: CanaryHost) -> None:
        self.session = session
        self._contexts: dict[str, CanaryContext] = {}
        self._rerank_contexts: dict[str, RerankCanaryContext] = {}

    def checks(self, name: str) -> list[str]:
        """Endpoint checks for a dataset: all of them for the first, dataset-dependent ones for the others."""
        if self.session.canary is None:
            return []
        from ..canary.embedding.registry import checks_for_dataset

        return checks_for_dataset(self.session.canary, first=name == self.session.datasets[0].name)

    def context(self, name: str, member: int = 0) -> CanaryContext:
        """The canary context of dataset ``name`` against ``--endpoint`` URL number ``member`` (from 0); every
        member shares the session's local reference."""
        if not self.session.canary_members:
            raise RuntimeError("canary_context called in a session without --endpoint")
        key = name if member == 0 else f"{name}#member{member + 1}"
        if key not in self._contexts:
            from ..canary.embedding.context import CanaryContext
            from ..encode.contract_encoder import ContractEncoder

            prepared = self.session.prepared[name]
            self._contexts[key] = CanaryContext(
                self.session.canary_members[member],
                prepared,
                reference_encoder=lambda: ContractEncoder(self.session.encoder(prepared), prepared.contract),
                reference_result=lambda: self.session.local_result(name),
            )
        return self._contexts[key]

    def rerank_checks(self, name: str) -> list[str]:
        """The reranker checks (--reranker-endpoint), once: on the first dataset."""
        if self.session.rerank_canary is None or name != self.session.datasets[0].name:
            return []
        from ..canary.reranker.registry import RERANK_CHECKS

        return [c.name for c in RERANK_CHECKS]

    def rerank_context(self, name: str) -> RerankCanaryContext:
        """The served reranker against the plan's reranker, over the local first stage of dataset ``name``."""
        if self.session.rerank_canary is None or self.session.reranker is None:
            raise RuntimeError("rerank_canary_context called in a session without --reranker-endpoint")
        if name not in self._rerank_contexts:
            from ..canary.reranker.context import make_rerank_context

            spec = self.session.prepared[name].spec
            self._rerank_contexts[name] = make_rerank_context(
                self.session.rerank_canary, spec, self.session.reranker.spec, first=self.session.local_result(name)
            )
        return self._rerank_contexts[name]

    def record(self, name: str, verdict: CheckOutcome) -> None:
        self.session.ledger.add(CanaryRecord(name, verdict))

    def close(self) -> None:
        for contexts in (self._contexts, self._rerank_contexts):
            for ctx in contexts.values():
                ctx.close()
            contexts.clear()
