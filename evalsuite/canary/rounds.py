"""The embedding canary as one job: every check against each ``--endpoint`` URL (several: a fleet, each member on
its own), for ``--rounds`` rounds; what `evalsuite canary` prints and writes, and what ``evalsuite.canary()``
returns, is this job's :class:`CanaryRun`."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from ..run.options import Option, collect, int_at_least
from .embedding.options import CANARY_FLEET_OPTIONS

if TYPE_CHECKING:
    from ..checks import CheckOutcome
    from .embedding.settings import CanarySettings
    from .fleet import FleetOutcome
    from .runner import CanaryOutcome
    from .sparse.settings import SparseCanarySettings

MAX_ROUNDS = 1000
MAX_INTERVAL = 3600.0
ROUNDS = Option(
    "--rounds",
    f"canary: run every check N times (at most {MAX_ROUNDS}), e.g. across a cutover window, so that a fault "
    "that appears after warm-up or under traffic is seen; reported per round and in total, the exit status "
    "is the worst round's",
    {"type": int_at_least(1), "metavar": "N"},
    default=1,
)
INTERVAL = Option(
    "--interval",
    f"canary: seconds between rounds (at most {MAX_INTERVAL:g})",
    {"type": float, "metavar": "SECONDS"},
    default=0.0,
)


def _quiet(line: str) -> None:
    return None


@dataclass(frozen=True)
class CanaryRun:
    """Each member's outcome in each round (one member unless a fleet was checked)."""

    members: tuple[CanarySettings | SparseCanarySettings, ...]  # the sparse canary's: one member, one round
    runs: tuple[tuple[CanaryOutcome, ...], ...]  # runs[member][round]

    @property
    def fleet(self) -> bool:
        return len(self.members) > 1

    def fleet_outcome(self) -> FleetOutcome:
        """The members' rounds as one fleet outcome (made once: ``created`` is when it was first asked for)."""
        return self._fleet

    @cached_property
    def _fleet(self) -> FleetOutcome:
        from .fleet import FleetOutcome, MemberOutcome

        n = len(self.members)
        return FleetOutcome(tuple(MemberOutcome(i + 1, n, tuple(r)) for i, r in enumerate(self.runs)))

    def worst(self) -> CanaryOutcome:
        """The single endpoint's worst round (whose verdicts canary.json reports in full)."""
        from .runner import worst_round

        return worst_round(self.runs[0])

    @property
    def passed(self) -> bool:
        return all(o.passed for r in self.runs for o in r)

    @property
    def exit_status(self) -> int:
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        """canary.json, as `evalsuite canary` writes it (every API key redacted)."""
        from ..checks.outcome import redacted
        from .report import canary_data, fleet_data

        if self.fleet:
            return dict(redacted(fleet_data(self.fleet_outcome())))
        return canary_data(self.worst(), self.runs[0])

    def write(self, out: Path) -> dict[str, Path]:
        """canary.json and report.md in ``out``."""
        from .report import write_canary_reports, write_fleet_reports

        if self.fleet:
            return write_fleet_reports(self.fleet_outcome(), out)
        return write_canary_reports(self.worst(), out, self.runs[0])


def rounds_of(args: argparse.Namespace) -> tuple[int, float]:
    """``--rounds`` and ``--interval``, bounded (SpecError: exit 2)."""
    rounds = 1 if args.rounds is None else int(args.rounds)
    interval = 0.0 if args.interval is None else float(args.interval)
    if rounds > MAX_ROUNDS:
        raise SpecError(f"--rounds {rounds} is more than {MAX_ROUNDS}; run the canary again for a longer window")
    if not 0.0 <= interval <= MAX_INTERVAL:
        raise SpecError(f"--interval {interval:g} must be between 0 and {MAX_INTERVAL:g} seconds")
    return rounds, interval


def canary_members(args: argparse.Namespace) -> tuple[CanarySettings, ...]:
    """One settings per ``--endpoint`` URL; a missing key variable is a usage error now, before anything runs."""
    from .embedding.settings import CanarySettings

    members = CanarySettings.members_from_values(collect(args, CANARY_FLEET_OPTIONS))
    members[0].api_key()  # one key variable for every member
    return members


def run_embedding_canary(
    args: argparse.Namespace,
    out: Path | None,
    *,
    members: Sequence[CanarySettings] | None = None,
    say: Callable[[str], None] = _quiet,
    note: Callable[[str], None] = _quiet,
) -> CanaryRun:
    """Every check against each member, round after round; ``say`` gets each line `evalsuite canary` prints as it
    goes (redacted by the caller), ``note`` each contract departure. ``out``: checked writable before anything
    loads (None: nothing is written)."""
    from ..run import preflight
    from ..run.pipeline import prepare
    from ..run.spec import RunSpec
    from .embedding.checks.matryoshka import validate_dimensions
    from .runner import local_context, member_context, next_round, run_canary

    rounds, interval = rounds_of(args)
    members = tuple(members) if members is not None else canary_members(args)
    fleet = len(members) > 1
    spec = RunSpec.from_mapping(collect(args), source="command line")
    preflight.run_paths(spec, out)  # before loading anything
    prepared = prepare(spec)
    for departure in prepared.contract.departures:  # a changed model is said, not evaluated in silence
        note(f"evalsuite: contract departure: {departure}")
    validate_dimensions(members[0].dimensions, int(prepared.model.hidden_size), prepared.model.matryoshka_dims)
    served = f"a fleet of {len(members)}: {', '.join(m.endpoint for m in members)}" if fleet else members[0].endpoint
    say(
        f"canary   {served} vs {prepared.model.name} @ {prepared.contract.model_revision[:16]} "
        f"on {prepared.dataset.identity.name}"
    )

    def show(v: CheckOutcome) -> None:
        say(f"{v.status}  {v.message}")

    first = local_context(members[0], prepared)
    contexts = [first, *(member_context(first, s) for s in members[1:])]
    runs: list[list[CanaryOutcome]] = [[] for _ in members]
    for k in range(1, rounds + 1):
        if k > 1:
            time.sleep(interval)
            contexts = [next_round(ctx) for ctx in contexts]
        if rounds > 1:
            say(f"round {k}/{rounds}")
        for i, ctx in enumerate(contexts):
            label = f"member {i + 1} of {len(members)}, {ctx.settings.endpoint}"
            if fleet:
                say(label)
            runs[i].append(run_canary(ctx, on_verdict=show))
            if fleet:
                say(f"{label}: {summary(runs[i][-1].failed)}")
        if rounds > 1:
            bad = [(i + 1, r[-1].failed) for i, r in enumerate(runs) if r[-1].failed]
            if fleet:
                listed = "; ".join(f"member {m}: {', '.join(checks)}" for m, checks in bad)
                say(f"round {k}/{rounds}: {'FAILED: ' + listed if bad else 'every member passed every check'}")
            else:
                say(f"round {k}/{rounds}: {summary(runs[0][-1].failed)}")
    return CanaryRun(members, tuple(tuple(r) for r in runs))


def summary(failed: Sequence[str]) -> str:
    return "FAILED: " + ", ".join(failed) if failed else "all checks passed"
