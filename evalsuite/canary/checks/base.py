"""What a canary check is (:class:`CanaryCheck`, one declaration each) and what it answers (:class:`CheckOutcome`).

A check runs on the context of its family: a :class:`~evalsuite.canary.embedding.context.CanaryContext` for the embedding
checks, a :class:`~evalsuite.canary.reranker.context.RerankCanaryContext` for the reranker's; both are a
:class:`CheckContext`, which is all the one runner (:func:`evalsuite.canary.registry.judge`) needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ...base import verdict as verdicts

if TYPE_CHECKING:
    from ...encode.http import Deadline


class CheckContext(Protocol):
    """What the runner asks of a family's context: its settings, the canary's deadline, closing it."""

    @property
    def settings(self) -> Any: ...

    @property
    def deadline(self) -> Deadline: ...

    def deadline_passed(self) -> bool: ...

    def close(self) -> None: ...


C = TypeVar("C", bound=CheckContext)


def redacted(value: Any) -> Any:
    """``value`` (a string, or JSON-ready dicts and lists of them) with every API key removed, in any form."""
    from ...encode.secret import redact

    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redacted(k): redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redacted(v) for v in value)
    return value


@dataclass(frozen=True)
class CheckOutcome:
    """One check's outcome. ``passed`` is None when the check does not apply (skipped).

    ``details`` is the check's JSON-ready evidence (written to canary.json as is). The message and
    every string in the details are redacted of every API key when the verdict is made.
    """

    check: str
    passed: bool | None  # None: the check does not apply
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redacted(self.message))
        object.__setattr__(self, "details", redacted(self.details))

    @property
    def verdict(self) -> verdicts.Verdict | None:
        """The one verdict type (pass or fail); None when the check did not apply."""
        return None if self.passed is None else verdicts.of(self.passed)

    @property
    def status(self) -> str:
        return "SKIP" if self.verdict is None else verdicts.label(self.verdict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "verdict": self.verdict,
            "passed": self.passed,
            "message": self.message,
            "details": self.details,
        }


@dataclass(frozen=True)
class CanaryCheck(Generic[C]):
    """One canary check, declared once; the registry, the CLI, the plugin and the reports read it.

    ``run`` returns a CheckOutcome named ``name`` whose message starts with ``label + ":"``;
    ``thresholds`` are the settings fields it compares against (CanarySettings, or
    RerankCanarySettings for a reranker check); ``requires`` is the
    CanarySettings field that must be set for it to apply (None: always applies);
    ``per_dataset`` checks run for every dataset of a session, the others once;
    ``report`` adds a Markdown section to report.md from its verdict's details.
    """

    name: str
    label: str
    explanation: str
    example: str
    run: Callable[[C], CheckOutcome]
    thresholds: tuple[str, ...] = ()
    requires: str | None = None
    per_dataset: bool = False
    report: Callable[[CheckOutcome], list[str]] | None = None

    def applies(self, settings: object) -> bool:
        return self.requires is None or bool(getattr(settings, self.requires))

    def skipped(self) -> CheckOutcome:
        """The verdict when the settings do not ask for this check (only embedding checks have ``requires``)."""
        from ..embedding.settings import CanarySettings

        option = CanarySettings.option_of(self.requires or "")
        return CheckOutcome(self.name, None, f"{self.label}: no --{option.replace('_', '-')} given", {})


class CheckOutcomes:
    """What a run of checks answers as a whole, over its ``verdicts`` (a canary's, a fleet member's, an index
    audit's): passed unless a check failed (a skipped check fails nothing), the failed checks, the exit status."""

    verdicts: tuple[CheckOutcome, ...]

    @property
    def passed(self) -> bool:
        return all(v.passed is not False for v in self.verdicts)

    @property
    def failed(self) -> list[str]:
        return [v.check for v in self.verdicts if v.passed is False]

    @property
    def exit_status(self) -> int:
        """1 when a check failed, else 0."""
        return verdicts.exit_status(v.verdict for v in self.verdicts if v.verdict is not None)
