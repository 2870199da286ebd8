"""Run every applicable check against one endpoint and collect the verdicts (used by the CLI)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..encode.secret import cut
from .checks import CanaryContext, Verdict, check_names, run_check
from .settings import CanarySettings

if TYPE_CHECKING:
    from ..encode.base import Encoder
    from ..pipeline import Prepared

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class CanaryOutcome:
    settings: CanarySettings
    contract: dict[str, Any]
    dataset: dict[str, Any]
    served_model: str | None
    verdicts: tuple[Verdict, ...]
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def passed(self) -> bool:
        return all(v.passed is not False for v in self.verdicts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "created": self.created,
            "passed": self.passed,
            "endpoint": self.settings.endpoint,
            "served_model": self.served_model,
            "settings": self.settings.to_dict(),
            "contract": self.contract,
            "dataset": self.dataset,
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


def local_context(settings: CanarySettings, prepared: Prepared) -> CanaryContext:
    """A context whose reference is the local encoder of ``prepared`` (one model load, shared)."""
    from ..encode.contract_encoder import ContractEncoder
    from ..pipeline import make_encoder, run

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
    return CanaryContext(previous.settings, previous.prepared, previous.reference, previous.reference_result)


def worst_round(outcomes: Sequence[CanaryOutcome]) -> CanaryOutcome:
    """The round with the most failed checks (the first of those); the rounds' exit status is its."""
    return max(outcomes, key=lambda o: sum(v.passed is False for v in o.verdicts))


def run_canary(ctx: CanaryContext, on_verdict: Callable[[Verdict], None] | None = None) -> CanaryOutcome:
    verdicts: list[Verdict] = []
    try:
        for name in check_names(ctx.settings):
            verdict = run_check(name, ctx)
            verdicts.append(verdict)
            if on_verdict is not None:
                on_verdict(verdict)
    finally:
        ctx.close()
    served = ctx.known_served_model()
    return CanaryOutcome(
        settings=ctx.settings,
        contract=ctx.contract.to_dict(),
        dataset=ctx.prepared.dataset.identity.to_dict(),
        served_model=None if served is None else cut(served),
        verdicts=tuple(verdicts),
    )
