"""`evalsuite rerank-canary --reranker-endpoint URL --reranker DIR [run options] [--out DIR]`, also run by
`evalsuite canary --reranker-endpoint URL` (its options are declared here, once, for both commands).

Exit 0 when every check passes, 1 when one fails, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...options import OUT_OPTION, RUN_OPTIONS, Option, add_options, collect, int_at_least
from ..options import RERANK_OPTIONS
from .settings import RerankCanarySettings
from .shapes import APIS

if TYPE_CHECKING:
    from ...spec import RunSpec
    from ..run import RerankSpec

_D = {f.name: f.default for f in dataclasses.fields(RerankCanarySettings) if f.default is not dataclasses.MISSING}


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value:
        raise argparse.ArgumentTypeError("NaN is not a tolerance")
    return value


_FIELDS: dict[str, str] = {}  # option dest -> RerankCanarySettings field
# One option for both canaries of `evalsuite canary` (the embedding canary declares it there).
SHARED_FLAGS = ("--api-key-env",)


def _o(flag: str, help: str, field: str, kwargs: dict[str, Any] | None = None) -> Option:
    """An option whose parsed name is its flag's (``reranker_endpoint``), never the embedding canary's
    (``endpoint``): `evalsuite canary` holds both canaries' options."""
    opt = Option(flag, help, dict(kwargs or {}))
    _FIELDS[opt.dest] = field
    return opt.with_default(_D[field]) if _D.get(field) is not None else opt


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
        "rerank-canary",
        help="check a served /rerank or /score endpoint against the local reference reranker "
        "(the same as `evalsuite canary --reranker-endpoint URL`)",
    )
    add_options(
        p.add_argument,
        (*RUN_OPTIONS, *RERANK_OPTIONS, *CANARY_OPTIONS, OUT_OPTION.with_default("reports/rerank-canary/<host-port>")),
    )
    p.set_defaults(func=cmd_rerank_canary)


def add_canary_options(add: Any) -> None:
    """The reranker canary's options in `evalsuite canary`, beside the embedding canary's (which declares
    ``--api-key-env``, then naming the key of both endpoints)."""
    add_options(add, (*RERANK_OPTIONS, *(o for o in CANARY_OPTIONS if o.flag not in SHARED_FLAGS)))


def cmd_rerank_canary(args: argparse.Namespace) -> int:
    request = RerankCanaryRequest.from_args(args)
    if request is None:
        from ...errors import SpecError

        raise SpecError("rerank-canary needs --reranker-endpoint URL (the served reranker's base URL)")
    return request.run(Path(args.out) if args.out else None)


@dataclass(frozen=True)
class RerankCanaryRequest:
    """A reranker canary the command line asks for, its settings checked (nothing loaded yet)."""

    settings: RerankCanarySettings
    spec: RunSpec
    rspec: RerankSpec

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RerankCanaryRequest | None:
        """None without ``--reranker-endpoint``; a usage error (SpecError) for a bad setting, a missing
        ``--reranker`` or an API key variable that is not set."""
        from ...errors import SpecError
        from ...spec import RunSpec
        from ..options import rerank_settings
        from ..run import RerankSpec

        values = {_FIELDS[k]: v for k, v in collect(args, CANARY_OPTIONS).items()}
        if "endpoint" not in values:
            return None
        settings = RerankCanarySettings(**values)
        settings.api_key()
        rspec = RerankSpec.from_mapping(rerank_settings(args), source="command line")
        if not rspec.reranker:
            raise SpecError(
                "the reranker canary needs --reranker DIR: the local reference (a cross-encoder directory or a "
                "cached hub id) of what --reranker-endpoint serves"
            )
        return cls(settings, RunSpec.from_mapping(collect(args), source="command line"), rspec)

    def default_out(self) -> Path:
        host = re.sub(r"^https?://", "", self.settings.endpoint).split("/", 1)[0]
        return Path("reports") / "rerank-canary" / re.sub(r"[^A-Za-z0-9._-]+", "-", host)

    def run(self, out: Path | None = None) -> int:
        """Run every check, print each verdict as it comes, write the reports; 0 when all pass, 1 when one fails."""
        from ... import preflight
        from ...encode.secret import redact
        from .runner import make_context, run_checks, write_reports

        def say(line: str) -> None:
            print(redact(line), flush=True)

        out = out or self.default_out()
        preflight.run_paths(self.spec, out)  # before loading anything
        ctx = make_context(self.settings, self.spec, self.rspec)
        say(
            f"rerank canary  {self.settings.endpoint} ({self.settings.api}) vs {ctx.contract.model} @ "
            f"{ctx.contract.model_revision[:16]}"
        )
        outcome = run_checks(ctx, on_verdict=lambda v: say(f"{v.status}  {v.message}"))
        paths = write_reports(outcome, out)
        say(
            f"{'FAILED: ' + ', '.join(outcome.failed) if outcome.failed else 'all checks passed'}; "
            f"wrote {', '.join(str(p) for p in paths.values())}"
        )
        return 1 if outcome.failed else 0
