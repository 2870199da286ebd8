"""`evalsuite canary --endpoint URL [run options] [canary options] [--out DIR]`, and with
`--reranker-endpoint URL --reranker DIR` the reranker checks (:mod:`.reranker.cli`) too; `rerank-canary` is
its alias for the reranker alone. `--endpoint` repeated: a fleet, every check against each member on its own
(:mod:`.fleet`), each failing member named.

Prints each verdict as it comes, writes canary.json and report.md (the reranker's canary.json and
report.md in ``<out>/reranker`` when both run); exit 0 when every check passes, 1 when one fails (of
either family, on any member), 2 on a usage or input error (raised as EvalsuiteError, see evalsuite.cli).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from ..run import preflight
from ..run.options import OUT_OPTION, Option, add_options, collect, int_at_least
from .embedding.options import CANARY_FLEET_OPTIONS
from .output import finish, finish_fleet, say

if TYPE_CHECKING:
    from .runner import CanaryOutcome

OUT = OUT_OPTION.with_default("reports/canary/<host-port>")
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


def register(subparsers: Any) -> None:
    from ..rerank.options import RERANK_OPTIONS
    from .reranker.cli import register_alias
    from .reranker.options import RERANK_CANARY_OPTIONS

    p = subparsers.add_parser(
        "canary",
        help="check a served /v1/embeddings endpoint (--endpoint) and/or a served reranker (--reranker-endpoint) "
        "against the local reference",
    )
    add_options(p.add_argument)
    add_options(p.add_argument, (*CANARY_FLEET_OPTIONS, OUT, ROUNDS, INTERVAL))
    add_options(p.add_argument, (*RERANK_OPTIONS, *RERANK_CANARY_OPTIONS))  # --api-key-env: one, for both
    p.set_defaults(func=cmd_canary)
    register_alias(subparsers)


def _default_out(endpoint: str, members: int = 1) -> Path:
    """reports/canary/<host-port> of the (first) endpoint; ``-fleet-N`` added for a fleet of N."""
    host = re.sub(r"^https?://", "", endpoint).split("/", 1)[0]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", host).strip("-") or "endpoint"
    return Path("reports") / "canary" / (name if members == 1 else f"{name}-fleet-{members}")


def cmd_canary(args: argparse.Namespace) -> int:
    """The embedding canary, the reranker canary, or both (the worse exit status of the two)."""
    from .reranker.cli import RerankCanaryRequest

    reranker = RerankCanaryRequest.from_args(args)  # its usage errors come before either canary runs
    if reranker is None:
        return embedding_canary(args)  # without --endpoint either: the usage error
    if args.endpoint is None:
        return reranker.run(Path(args.out) if args.out else None)
    code = embedding_canary(args)
    return max(code, reranker.run(Path(args.out) / "reranker" if args.out else None))


def embedding_canary(args: argparse.Namespace) -> int:
    """Every check against each ``--endpoint`` URL; with several (a fleet), each member on its own, named."""
    from ..run.pipeline import prepare
    from ..run.spec import RunSpec
    from .checks import CheckOutcome
    from .embedding.checks.matryoshka import validate_dimensions
    from .embedding.settings import CanarySettings
    from .runner import local_context, member_context, next_round, run_canary, worst_round

    rounds, interval = _rounds(args)
    members = CanarySettings.members_from_values(collect(args, CANARY_FLEET_OPTIONS))
    members[0].api_key()  # a missing key variable is a usage error, before anything runs (one for every member)
    fleet = len(members) > 1
    spec = RunSpec.from_mapping(collect(args), source="command line")
    out = Path(args.out) if args.out else _default_out(members[0].endpoint, len(members))
    preflight.run_paths(spec, out)  # before loading anything
    prepared = prepare(spec)
    for departure in prepared.contract.departures:  # a changed model is said, not evaluated in silence
        print(f"evalsuite: contract departure: {departure}", file=sys.stderr)
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
                say(f"{label}: {_summary(runs[i][-1].failed)}")
        if rounds > 1:
            bad = [(i + 1, r[-1].failed) for i, r in enumerate(runs) if r[-1].failed]
            if fleet:
                listed = "; ".join(f"member {m}: {', '.join(checks)}" for m, checks in bad)
                say(f"round {k}/{rounds}: {'FAILED: ' + listed if bad else 'every member passed every check'}")
            else:
                say(f"round {k}/{rounds}: {_summary(runs[0][-1].failed)}")
    if not fleet:
        return finish(worst_round(runs[0]), out, runs[0])
    from .fleet import FleetOutcome, MemberOutcome

    return finish_fleet(
        FleetOutcome(tuple(MemberOutcome(i + 1, len(members), tuple(r)) for i, r in enumerate(runs))), out
    )


def _summary(failed: Sequence[str]) -> str:
    return "FAILED: " + ", ".join(failed) if failed else "all checks passed"


def _rounds(args: argparse.Namespace) -> tuple[int, float]:
    """``--rounds`` and ``--interval``, bounded (SpecError: exit 2)."""
    rounds = 1 if args.rounds is None else int(args.rounds)
    interval = 0.0 if args.interval is None else float(args.interval)
    if rounds > MAX_ROUNDS:
        raise SpecError(f"--rounds {rounds} is more than {MAX_ROUNDS}; run the canary again for a longer window")
    if not 0.0 <= interval <= MAX_INTERVAL:
        raise SpecError(f"--interval {interval:g} must be between 0 and {MAX_INTERVAL:g} seconds")
    return rounds, interval
