"""`evalsuite load`: a load profile of an endpoint and/or the local reference, or with
``--old-endpoint`` a cutover comparison of two deployments (quality and capacity, interleaved).

    evalsuite load --endpoint URL [--local] [--concurrency 1,4,16,64] [--load-batch-sizes 32]
                   [--requests N | --duration S] [--out DIR]
    evalsuite load --old-endpoint OLD --endpoint NEW [--capacity-gate EXPR ...] [--quality-margin X]

Exit 0 when the profile ran (or the cutover stands), 1 when the cutover does not stand or a level of the
profile had no successful request (it measured nothing: not a profile), 2 on a usage
or input error (raised as EvalsuiteError, see evalsuite.cli).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import SpecError
from ..base.jobs import Job
from ..canary.embedding.options import CANARY_OPTIONS
from ..run.options import RUN_OPTIONS, Option, collect, int_at_least, spec_type, url
from .cutover import DEFAULT_QUALITY_MARGIN
from .gates import DEFAULT_GATES
from .runner import DEFAULT_BATCH_SIZES, DEFAULT_CONCURRENCY, DEFAULT_REQUESTS

if TYPE_CHECKING:
    from ..canary.embedding.context import CanaryContext
    from ..run.pipeline import Prepared
    from .runner import Level

_SHARED = ("--endpoint", "--served-model", "--api-key-env", "--endpoint-timeout", "--encoding-format")
_ENDPOINT_HELP = {"--endpoint": "load: OpenAI-compatible base URL to profile (with --old-endpoint: the new deployment)"}
ENDPOINT_OPTIONS = tuple(
    dataclasses.replace(o, help=_ENDPOINT_HELP.get(o.flag, o.help.replace("canary: ", "load: ", 1)))
    for o in CANARY_OPTIONS
    if o.flag in _SHARED
)


def _csv(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def _ints(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = tuple(dict.fromkeys(int_at_least(1)(p) for p in parts))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}; give comma-separated integers >= 1, e.g. 1,4,16") from None
    if not values:
        raise argparse.ArgumentTypeError("give comma-separated integers >= 1, e.g. 1,4,16")
    return values


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or a percentage") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be in [0, 1) (or a percentage)")
    return value


def _gate(text: str) -> str:
    from .gates import parse_capacity_gate

    try:
        return parse_capacity_gate(text).expr
    except SpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _roles(text: str) -> tuple[str, ...]:
    roles = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    if not roles or set(roles) - {"query", "document"}:
        raise argparse.ArgumentTypeError(f"{text!r}: give query, document or query,document")
    return roles


LOAD_OPTIONS: tuple[Option, ...] = (
    Option(
        "--old-endpoint",
        "load: the deployment being replaced; with it, `--endpoint` is the new one and the run is a cutover comparison",
        {"type": spec_type(url, "url"), "metavar": "URL"},
    ),
    Option(
        "--local",
        "load: also profile the local reference encoder on this machine",
        {"action": "store_const", "const": True},
    ),
    Option(
        "--concurrency",
        f"load: requests in flight per level (default: {_csv(DEFAULT_CONCURRENCY)})",
        {"type": _ints, "metavar": "N,N"},
    ),
    Option(
        "--load-batch-sizes",
        f"load: texts per request, one profile each (default: {_csv(DEFAULT_BATCH_SIZES)})",
        {"type": _ints, "metavar": "N,N"},
    ),
    Option(
        "--requests",
        f"load: requests per target per level (default: {DEFAULT_REQUESTS})",
        {"type": int_at_least(1), "metavar": "N"},
    ),
    Option(
        "--duration",
        "load: seconds per target per level, instead of --requests",
        {"type": _positive, "metavar": "SECONDS"},
    ),
    Option(
        "--roles",
        "load: which texts to draw from (default: query,document)",
        {"type": _roles, "metavar": "query,document"},
    ),
    Option("--load-seed", "load: seed of the request draws (default: 0)", {"type": int_at_least(0), "metavar": "N"}),
    Option(
        "--capacity-gate",
        f"load: capacity gate of new vs old, repeatable (default: {', '.join(DEFAULT_GATES)})",
        {"type": _gate, "action": "append", "metavar": "EXPR"},
    ),
    Option(
        "--quality-margin",
        f"load: largest drop of a metric (new - old) that still holds, at 95% confidence "
        f"(default: {DEFAULT_QUALITY_MARGIN:g})",
        {"type": _fraction, "metavar": "X"},
    ),
)


OUT = Option("--out", "report directory (default: reports/load/<host-port>)", {"metavar": "DIR"})


def _default_out(endpoint: str | None) -> Path:
    if endpoint is None:
        return Path("reports") / "load" / "local"
    from ..base.io import path_name, url_host

    return Path("reports") / "load" / path_name(url_host(endpoint), "endpoint")


def _context(url: str, values: dict[str, Any], prepared: Prepared) -> CanaryContext:
    """The canary's endpoint context for ``url``: served-model discovery, the key, the checked client."""
    from ..canary.embedding.context import CanaryContext
    from ..canary.embedding.settings import CanarySettings

    def no_reference() -> Any:
        raise SpecError("the load command has no reference side on an endpoint context")

    settings = CanarySettings.from_values({**values, "endpoint": url})
    settings.api_key()  # a missing key variable is a usage error, before anything runs
    return CanaryContext(settings, prepared, reference_encoder=no_reference, reference_result=no_reference)


def _show_level(lv: Level) -> None:
    f = lv.figures
    print(
        f"  {lv.target:<6} batch {lv.batch_size:>3} x {lv.concurrency:>3}: {f.requests_per_s:8.1f} req/s "
        f"{f.inputs_per_s:9.1f} inputs/s {f.tokens_per_s:10.1f} tokens/s  p50 {f.p50_ms:7.1f} "
        f"p95 {f.p95_ms:7.1f} p99 {f.p99_ms:7.1f} ms  errors {f.errors} 429s {f.throttled}",
        flush=True,
    )


def cmd_load(args: argparse.Namespace) -> int:
    from ..encode.local import progress_enabled
    from ..run.pipeline import prepare
    from ..run.spec import RunSpec
    from .cutover import NEW, OLD, run_cutover
    from .gates import parse_capacity_gate
    from .report import write_load_reports
    from .runner import LoadPlan, run_load
    from .targets import EndpointTarget, Target, local_target
    from .workload import dataset_workload

    o = collect(args, LOAD_OPTIONS)
    ep = collect(args, ENDPOINT_OPTIONS)
    new_url: str | None = ep.pop("endpoint", None)
    old_url: str | None = o.get("old_endpoint")
    if new_url is None and not o.get("local"):
        raise SpecError("give --endpoint URL (and --old-endpoint URL for a cutover) or --local to profile")
    if old_url is not None and new_url is None:
        raise SpecError("--old-endpoint needs --endpoint URL: the new deployment it is compared with")
    if "requests" in o and "duration" in o:
        raise SpecError("give --requests or --duration, not both")
    plan = LoadPlan(
        **{
            k: v
            for k, v in {
                "concurrency": o.get("concurrency"),
                "batch_sizes": o.get("load_batch_sizes"),
                "seed": o.get("load_seed"),
            }.items()
            if v is not None
        },
        requests=None if "duration" in o else o.get("requests", DEFAULT_REQUESTS),
        duration=o.get("duration"),
    )
    gates = tuple(parse_capacity_gate(g) for g in (o.get("capacity_gate") or DEFAULT_GATES))
    prepared = prepare(RunSpec.from_mapping(collect(args), source="command line"))
    workload = dataset_workload(prepared, o.get("roles", ("query", "document")))
    c = prepared.contract
    print(
        f"load     {prepared.dataset.identity.name}: {len(workload.texts)} texts, "
        + ", ".join(f"{k} {100 * v:.0f}%" for k, v in workload.shares().items())
        + f" (tokens, max {c.max_length})"
    )
    contexts: dict[str, CanaryContext] = {}
    targets: list[Target] = []
    top = max(plan.concurrency)

    def endpoint(name: str, url: str) -> Target:
        ctx = contexts[name] = _context(url, ep, prepared)
        return EndpointTarget(
            name, ctx.client().config, dim=ctx.hidden_size, normalized=c.normalize, max_concurrency=top
        )

    out = Path(args.out) if args.out else _default_out(new_url)
    say: Callable[[str], None] = lambda m: print(m, flush=True)  # noqa: E731
    try:
        if old_url is not None and new_url is not None:
            old, new = endpoint(OLD, old_url), endpoint(NEW, new_url)
            targets += [old, new]
            extra = [local_target(prepared)] if o.get("local") else []
            targets += extra
            result = run_cutover(
                prepared,
                old,
                new,
                contexts[OLD].client(),
                contexts[NEW].client(),
                {OLD: old_url, NEW: new_url},
                workload,
                plan,
                gates,
                quality_margin=o.get("quality_margin", DEFAULT_QUALITY_MARGIN),
                progress=progress_enabled(),
                extra_targets=extra,
                on_step=say,
                on_level=_show_level,
            )
            for q in result.quality:
                say(f"quality  {q.summary}")
            for g in result.gates:
                say(f"{g.status:<5} {g.message()}")
            paths = write_load_reports(result.profile, out, result)
            say(f"{result.verdict()}; wrote {', '.join(str(p) for p in paths.values())}")
            return 0 if result.stands else 1
        if new_url is not None:
            targets.append(endpoint("server", new_url))
        if o.get("local"):
            targets.append(local_target(prepared))
        profile = run_load(targets, workload, plan, progress=progress_enabled(), on_level=_show_level)
        paths = write_load_reports(profile, out)
        failed = [lv for lv in profile.levels if lv.figures.ok == 0]
        for lv in failed:  # a level where nothing succeeded measured no capacity: the profile is not one
            say(
                f"FAIL  {lv.target} batch {lv.batch_size} x {lv.concurrency}: no request succeeded: "
                f"{'; '.join(lv.first_errors) or 'HTTP 429'}"
            )
        verdict = (
            f"NOT A PROFILE: {len(failed)} of {len(profile.levels)} level(s) had no successful request"
            if failed
            else "profile complete"
        )
        say(f"{verdict}; wrote {', '.join(str(p) for p in paths.values())}")
        return 1 if failed else 0
    finally:
        for t in targets:
            t.close()
        for ctx in contexts.values():
            ctx.close()


JOB = Job(
    "load",
    help="serving capacity: load profile of an endpoint, or old-vs-new cutover",
    options=lambda: (*RUN_OPTIONS, *ENDPOINT_OPTIONS, *LOAD_OPTIONS, OUT),
    run=cmd_load,
    exit_codes={0: "every capacity gate held (a cutover: the new deployment stands)", 1: "a gate failed"},
)
