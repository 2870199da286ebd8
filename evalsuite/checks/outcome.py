"""What a check answers (:class:`CheckOutcome`) and what a run of checks answers as a whole (:class:`CheckOutcomes`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base import verdict as verdicts


def redacted(value: Any) -> Any:
    """``value`` (a string, or JSON-ready dicts and lists of them) with every API key removed, in any form."""
    from ..encode.secret import redact

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

    ``details`` is the check's JSON-ready evidence (written to canary.json / audit.json as is). The message and
    every string in the details are redacted of every API key when the verdict is made. ``seconds``: how long the
    check ran (set by :func:`~evalsuite.checks.judge.judge`; None for a verdict made outside it), so a report says
    where a slow server's or index's time went.
    """

    check: str
    passed: bool | None  # None: the check does not apply
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None

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
            **({} if self.seconds is None else {"seconds": self.seconds}),
        }


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
