"""`evalsuite rerank-canary --reranker-endpoint URL --reranker DIR [run options] [--out DIR]`.

Exit 0 when every check passes, 1 when one fails, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path
from typing import Any

from ...options import OUT_OPTION, RUN_OPTIONS, Option, add_options, collect, int_at_least
from ..options import RERANK_OPTIONS
from .settings import RerankCanarySettings
from .shapes import APIS

_D = {f.name: f.default for f in dataclasses.fields(RerankCanarySettings) if f.default is not dataclasses.MISSING}


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value:
        raise argparse.ArgumentTypeError("NaN is not a tolerance")
    return value


def _o(flag: str, help: str, dest: str, kwargs: dict[str, Any] | None = None) -> Option:
    opt = Option(flag, help, {**(kwargs or {}), "dest_name": dest})
    return opt.with_default(_D[dest]) if _D.get(dest) is not None else opt


CANARY_OPTIONS: tuple[Option, ...] = (
    _o("--reranker-endpoint", "served reranker base URL, e.g. http://host:8000/v1 (the API path is added)", "endpoint"),
    _o(
        "--reranker-api",
        "request/answer shape: " + "; ".join(f"{a.name} ({a.engines})" for a in APIS.values()),
        "api",
        {"choices": tuple(APIS)},
    ),
    _o("--reranker-served-model", "the served model name sent in requests", "served_model"),
    _o("--api-key-env", "NAME of the environment variable holding the API key", "api_key_env"),
    _o(
        "--reranker-canary-depth",
        "first-stage documents per query sent to both sides",
        "depth",
        {"type": int_at_least(1)},
    ),
    _o("--reranker-canary-queries", "queries checked", "max_queries", {"type": int_at_least(1)}),
    _o(
        "--reranker-score-tol",
        "max |served - reference| per pair, after the activation",
        "score_tol",
        {"type": _number},
    ),
    _o("--reranker-tau-min", "min per-query Kendall tau", "tau_min", {"type": _number}),
    _o("--reranker-metric-tol", "max |reranked metric served - reference|", "metric_tol", {"type": _number}),
    _o(
        "--reranker-raw-scores",
        "ask the server for raw logits and compare them with the reference's (activation none)",
        "raw_scores",
        {"action": "store_const", "const": True},
    ),
)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rerank-canary", help="check a served /rerank or /score endpoint against the local reference reranker"
    )
    add_options(
        p.add_argument,
        (*RUN_OPTIONS, *RERANK_OPTIONS, *CANARY_OPTIONS, OUT_OPTION.with_default("reports/rerank-canary/<host-port>")),
    )
    p.set_defaults(func=cmd_rerank_canary)


def cmd_rerank_canary(args: argparse.Namespace) -> int:
    from ...errors import SpecError
    from ...spec import RunSpec
    from ..run import RerankSpec
    from .runner import make_context, run_checks, write_reports

    values = collect(args, CANARY_OPTIONS)
    if "endpoint" not in values:
        raise SpecError("rerank-canary needs --reranker-endpoint URL (the served reranker's base URL)")
    settings = RerankCanarySettings(**values)
    spec = RunSpec.from_mapping(collect(args), source="command line")
    rspec = RerankSpec.from_mapping(collect(args, RERANK_OPTIONS), source="command line")
    ctx = make_context(settings, spec, rspec)
    print(
        f"rerank canary  {settings.endpoint} ({settings.api}) vs {ctx.contract.model} @ "
        f"{ctx.contract.model_revision[:16]}"
    )
    outcome = run_checks(ctx, on_verdict=lambda v: print(f"{v.status}  {v.message}", flush=True))
    host = re.sub(r"^https?://", "", settings.endpoint).split("/", 1)[0]
    out = Path(args.out) if args.out else Path("reports") / "rerank-canary" / re.sub(r"[^A-Za-z0-9._-]+", "-", host)
    paths = write_reports(outcome, out)
    print(
        f"{'FAILED: ' + ', '.join(outcome.failed) if outcome.failed else 'all checks passed'}; "
        f"wrote {', '.join(str(p) for p in paths.values())}"
    )
    return 1 if outcome.failed else 0
