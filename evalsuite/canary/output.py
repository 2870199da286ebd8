"""The canary's console output and the files a run ends with: each line redacted of every API key, the causes
of the failures, canary.json and report.md, and the exit status. Shared by `evalsuite canary` and
`evalsuite rerank-canary`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .fleet import FleetOutcome
    from .runner import CanaryOutcome


def say(line: str) -> None:
    """Print one line of canary output, redacted of every API key."""
    from ..encode.secret import redact

    print(redact(line), flush=True)


def finish(outcome: CanaryOutcome, out: Path, rounds: Sequence[CanaryOutcome] = ()) -> int:
    """Write canary.json and report.md (with every round's summary when there were several), print the cause of
    each failure and the summary line; the exit status (1 when a check failed, in the worst round)."""
    from .report import write_canary_reports

    for d in outcome.diagnoses:
        say(d.sentence())
    paths = write_canary_reports(outcome, out, rounds)
    failed = outcome.failed
    total = ""
    if len(rounds) > 1:
        failed_rounds = [str(k) for k, o in enumerate(rounds, 1) if not o.passed]
        listed = f" ({', '.join(failed_rounds)})" if failed_rounds else ""
        total = f"{len(rounds)} rounds, {len(failed_rounds)} failed{listed}; "
    say(
        f"{total}{'FAILED: ' + ', '.join(failed) if failed else 'all checks passed'}; "
        f"wrote {', '.join(str(p) for p in paths.values())}"
    )
    return outcome.exit_status


def finish_fleet(fleet: FleetOutcome, out: Path) -> int:
    """A fleet's canary.json and report.md; each failing member's failed checks and causes, named; the summary
    line (which members failed, the detection power per member); exit 1 when any member failed."""
    from .report import write_fleet_reports

    for member in fleet.failed_members:
        for line in member.failure_lines():
            say(line)
    paths = write_fleet_reports(fleet, out)
    statement = fleet.detection_statement()
    if statement:
        say(f"detection: {statement}")
    say(f"{fleet.summary()}; wrote {', '.join(str(p) for p in paths.values())}")
    return fleet.exit_status
