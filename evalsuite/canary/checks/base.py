"""What a canary check is (:class:`CanaryCheck`, one declaration each) and what it answers (:class:`Verdict`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..context import CanaryContext
    from ..settings import CanarySettings


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
class Verdict:
    """One check's outcome. ``passed`` is None when the check does not apply (skipped).

    ``details`` is the check's JSON-ready evidence (written to canary.json as is). The message and
    every string in the details are redacted of every API key when the verdict is made.
    """

    check: str
    passed: bool | None
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redacted(self.message))
        object.__setattr__(self, "details", redacted(self.details))

    @property
    def status(self) -> str:
        return {True: "PASS", False: "FAIL", None: "SKIP"}[self.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "passed": self.passed,
            "message": self.message,
            "details": self.details,
        }


@dataclass(frozen=True)
class CanaryCheck:
    """One canary check, declared once; the registry, the CLI, the plugin and the reports read it.

    ``run`` returns a Verdict named ``name`` whose message starts with ``label + ":"``;
    ``thresholds`` are the CanarySettings fields it compares against; ``requires`` is the
    CanarySettings field that must be set for it to apply (None: always applies);
    ``per_dataset`` checks run for every dataset of a session, the others once;
    ``report`` adds a Markdown section to report.md from its verdict's details.
    """

    name: str
    label: str
    explanation: str
    example: str
    run: Callable[[CanaryContext], Verdict]
    thresholds: tuple[str, ...] = ()
    requires: str | None = None
    per_dataset: bool = False
    report: Callable[[Verdict], list[str]] | None = None

    def applies(self, settings: CanarySettings) -> bool:
        return self.requires is None or bool(getattr(settings, self.requires))

    def skipped(self) -> Verdict:
        """The verdict when the settings do not ask for this check."""
        from ..settings import CanarySettings

        option = CanarySettings.option_of(self.requires or "")
        return Verdict(self.name, None, f"{self.label}: no --{option.replace('_', '-')} given", {})
