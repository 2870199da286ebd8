"""A fleet's canary: the same checks against each member (one ``--endpoint`` URL each) on its own, combined.

Every check runs per member, retrieval agreement too: the whole dataset goes through each member, so that a
member whose vectors rank differently is named rather than averaged away by a fleet spread over several URLs;
the local reference (model, canary vectors' encoder, dataset run) is computed once and shared
(:func:`~.runner.member_context`). Each member's verdicts are its worst round's (:func:`~.runner.worst_round`);
the fleet's exit status is the worst member's, so 1 when any member failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..checks import CheckOutcome
from ..checks.detection import requests_needed
from .embedding.checks.repeat import member_detection_statement
from .embedding.settings import CanarySettings
from .runner import CanaryOutcome, worst_round


def _failed_count(outcome: CanaryOutcome) -> int:
    return sum(v.passed is False for v in outcome.verdicts)


@dataclass(frozen=True)
class MemberOutcome:
    """One member's rounds (one outcome per ``--rounds`` round); ``index`` counts from 1 in ``--endpoint`` order."""

    index: int
    size: int
    rounds: tuple[CanaryOutcome, ...]

    def __post_init__(self) -> None:
        if not self.rounds:
            raise ValueError("a member outcome needs at least one round")

    @property
    def endpoint(self) -> str:
        return self.rounds[0].settings.endpoint

    @property
    def label(self) -> str:
        """How every line about this member names it: ``member 2 of 3, http://...``."""
        return f"member {self.index} of {self.size}, {self.endpoint}"

    @property
    def worst(self) -> CanaryOutcome:
        """The round whose verdicts are reported (the one with the most failed checks)."""
        return worst_round(self.rounds)

    @property
    def passed(self) -> bool:
        return all(o.passed for o in self.rounds)

    @property
    def failed(self) -> list[str]:
        return self.worst.failed

    @property
    def exit_status(self) -> int:
        return self.worst.exit_status

    def failed_verdicts(self) -> list[CheckOutcome]:
        return [v for v in self.worst.verdicts if v.passed is False]

    def failure_lines(self) -> list[str]:
        """One line per failed check of the worst round, then one per diagnosed cause, each naming the member."""
        return [f"{self.label}: {v.status}  {v.message}" for v in self.failed_verdicts()] + [
            f"{self.label}: {d.sentence()}" for d in self.worst.diagnoses
        ]

    def summary(self) -> str:
        """``member 2 of 3, URL: FAILED: vector_agreement, ...`` or ``...: all checks passed``."""
        failed = self.failed
        return f"{self.label}: {'FAILED: ' + ', '.join(failed) if failed else 'all checks passed'}"


@dataclass(frozen=True)
class FleetOutcome:
    """Every member's outcome, in ``--endpoint`` order; what the fleet report and the CLI read."""

    members: tuple[MemberOutcome, ...]
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        if len(self.members) < 2:
            raise ValueError("a fleet has at least two members; one URL is a plain CanaryOutcome")

    @property
    def passed(self) -> bool:
        return all(m.passed for m in self.members)

    @property
    def failed_members(self) -> list[MemberOutcome]:
        return [m for m in self.members if not m.passed]

    @property
    def exit_status(self) -> int:
        """1 when any member failed a check (in any round), else 0."""
        return max(m.exit_status for m in self.members)

    def worst(self) -> MemberOutcome:
        """The member with the most failed checks (the first of those), as :func:`~.runner.worst_round` picks."""
        return max(self.members, key=lambda m: _failed_count(m.worst))

    def detection_statement(self) -> str | None:
        """What the probe requests sent to each member could have caught (None when ``repeated_requests``
        did not run)."""
        first = self.members[0].worst
        if not any(v.check == "repeated_requests" and v.passed is not None for v in first.verdicts):
            return None
        if not isinstance(first.settings, CanarySettings):
            return None
        share = first.settings.detect
        return member_detection_statement(requests_needed(share), share, len(self.members))

    def summary(self) -> str:
        """One line: how many members failed and which."""
        bad = self.failed_members
        n = len(self.members)
        if not bad:
            return f"fleet of {n}: every member passed every check"
        return f"fleet of {n}: {len(bad)} member(s) failed: " + "; ".join(m.summary() for m in bad)
